"""Colab: the course's address is configuration. With ``[project.urls] Repository`` set, every
notebook opens with its "Open in Colab" badge and install line and notebook 00's first code cell
installs the course only in Colab; unset, no notebook, README or page names a placeholder."""
from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
import types

import nbformat
import pytest

from tests.notebook_sources import ROOT, build_tool

tool = build_tool()
REPO = "someone/cuda-graphs-lab"


def _built(prefix: str, repo, role="learner"):
    source = next(s for s in tool.sources() if s.name.startswith(prefix))
    text = tool.build(tool.read_source(source), role, tool.targets(source)[role], repo)
    return nbformat.reads(text, as_version=4)


def _pyproject(tmp_path, urls: str):
    path = tmp_path / "pyproject.toml"
    path.write_text(f'[project]\nname = "cuda-graphs-lab"\n{urls}')
    return path


def test_the_repository_comes_from_pyprojects_repository_url(tmp_path):
    assert tool.course_repo(_pyproject(tmp_path, "")) is None
    urls = '[project.urls]\nRepository = "https://github.com/someone/cuda-graphs-lab.git"\n'
    assert tool.course_repo(_pyproject(tmp_path, urls)) == REPO


def test_a_repository_url_that_is_not_githubs_is_refused_naming_the_form(tmp_path):
    urls = '[project.urls]\nRepository = "https://gitlab.com/someone/lab"\n'
    with pytest.raises(tool.SourceError, match=r"^pyproject.toml: \[project.urls\] Repository = "
                                               r"'https://gitlab.com/someone/lab' is not a GitHub "
                                               r"address; write https://github.com/<owner>/<name>"):
        tool.course_repo(_pyproject(tmp_path, urls))


@pytest.mark.parametrize("source", tool.sources(), ids=lambda p: p.stem)
def test_with_a_repository_every_notebook_opens_with_its_colab_badge(source):
    for role in ("learner", "solution"):
        nb = _built(source.stem[:3], REPO, role)
        url = f"https://colab.research.google.com/github/{REPO}/blob/main/notebooks/{source.stem}.ipynb"
        assert nb.cells[0].cell_type == "markdown"
        assert nb.cells[0].source.startswith(f"[![Open In Colab]({tool.COLAB_BADGE_SVG})]({url}) ")
        if not source.name.startswith("00_"):
            assert f'`%pip install -q "cuda-graphs-lab[cu12] @ git+https://github.com/{REPO}"`' \
                in nb.cells[0].source


@pytest.mark.parametrize("source", tool.sources(), ids=lambda p: p.stem)
def test_without_a_repository_no_notebook_has_a_badge_an_install_line_or_an_address(source):
    nb = _built(source.stem[:3], None)
    text = "\n".join(c.source for c in nb.cells)
    assert "Open In Colab" not in text and "github.com" not in text and "OWNER" not in text
    assert "google.colab" not in text
    assert nb.cells[0].source.lstrip().startswith("# "), "the notebook opens with its title"


def test_the_committed_notebooks_name_no_placeholder_address():
    for path in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        assert "OWNER/" not in path.read_text(encoding="utf-8"), path


def test_the_readme_names_no_placeholder_and_no_other_repository():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "OWNER" not in readme
    mentioned = {m.group(1) for m in tool.REPO_MENTION.finditer(readme)}
    assert mentioned <= {tool.course_repo()} - {None}, f"README names {mentioned}"


def test_a_source_naming_a_repository_is_refused_naming_the_configuration(tmp_path):
    src = tmp_path / "05_graph_update.py"
    text = (ROOT / "notebooks" / "src" / src.name).read_text()
    marker = "# %% [markdown]\n"
    at = text.index(marker, text.index(marker) + 1)       # the second markdown cell
    src.write_text(text[:at] + marker + "# `pip install git+https://github.com/someone/fork`\n\n"
                   + text[at:])
    with pytest.raises(tool.SourceError, match=r"^05_graph_update.py, cell \d+: names a repository "
                                               r"of the course \(someone/fork\); sources name none"):
        tool.read_source(src)


def test_a_badge_line_left_in_a_source_is_made_again_from_the_configuration(tmp_path):
    src = tmp_path / "01_eager_launches.py"
    text = (ROOT / "notebooks" / "src" / src.name).read_text()
    first = text.index("# %% [markdown]\n") + len("# %% [markdown]\n")
    if text[first:].startswith("# [![Open In Colab]"):      # a source that still has its own
        first = text.index("\n", first) + 1
        first = first + 2 if text[first:].startswith("#\n") else first
    old = "# [![Open In Colab](https://x/badge.svg)](https://colab.research.google.com/github/a/b/blob/main/n.ipynb) old\n#\n"
    src.write_text(text[:text.index("# %% [markdown]\n") + 16] + old + text[first:])
    nb = tool.read_source(src)
    assert nb.cells[0].source.startswith("# 01")
    built = tool.with_links(tool.cells_for(nb, "learner"), "01_eager_launches.ipynb", REPO)
    assert built[0].source.startswith(tool.colab_line("01_eager_launches.ipynb", REPO) + "\n\n# 01")


def _install_cell():
    nb = _built("00", REPO)
    return nb.cells[1].source


def _exec(source, colab: bool, monkeypatch):
    """Run the cell; pip is a stand-in that records its command, so nothing is installed."""
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "<notebook 00, first code cell>", "exec"), {})
    return calls, out.getvalue()


def test_notebook_00s_first_code_cell_installs_the_course_with_cu12_only_in_colab(monkeypatch):
    source = _install_cell()
    assert "import labkit" not in source            # it runs before labkit exists in Colab
    calls, out = _exec(source, colab=True, monkeypatch=monkeypatch)
    assert calls == [[sys.executable, "-m", "pip", "install", "-q",
                      f"cuda-graphs-lab[cu12] @ git+https://github.com/{REPO}"]]
    assert "Colab: the course is installed (cuda-graphs-lab[cu12])" in out


def test_notebook_00s_first_code_cell_does_nothing_outside_colab_and_says_so(monkeypatch):
    calls, out = _exec(_install_cell(), colab=False, monkeypatch=monkeypatch)
    assert calls == []
    assert out.startswith("Not in Colab: this cell installs nothing")
