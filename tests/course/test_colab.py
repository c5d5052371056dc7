"""Colab and Binder: every notebook opens with its "Open in Colab" badge, notebook 00's first
code cell installs the course only in Colab, and the one repository constant holds them all."""
from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
import types

import pytest

from tests.notebook_sources import ROOT, build_tool

tool = build_tool()


@pytest.mark.parametrize("source", tool.sources(), ids=lambda p: p.stem)
def test_a_notebooks_colab_badge_is_its_own_and_required_once_the_repository_is_set(source):
    nb = tool.read_source(source)
    url = (f"https://colab.research.google.com/github/{tool.COURSE_REPO}/blob/main/notebooks/"
           f"{source.stem}.ipynb")
    assert nb.cells[0].cell_type == "markdown"
    has_badge = "colab-badge.svg" in nb.cells[0].source
    if has_badge or tool.repo_is_set():
        assert nb.cells[0].source.startswith(f"[![Open In Colab]({tool.COLAB_BADGE_SVG})]({url})")


def test_the_readme_badges_use_the_course_repository():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tool.colab_badge("00_setup.ipynb") in readme
    assert f"(https://mybinder.org/v2/gh/{tool.COURSE_REPO}/main?urlpath=lab/tree/notebooks)" in readme
    others = {m.group(1) for m in tool.REPO_MENTION.finditer(readme)} - {tool.COURSE_REPO}
    assert not others, f"README names the course's repository as {others}"


def test_once_the_repository_is_set_a_source_without_its_badge_is_refused_naming_the_line(
        tmp_path, monkeypatch):
    src = tmp_path / "05_graph_update.py"
    text = (ROOT / "notebooks" / "src" / src.name).read_text()
    src.write_text(text.replace(tool.colab_badge(f"{src.stem}.ipynb"), "", 1))
    monkeypatch.setattr(tool, "COURSE_REPO", "someone/cuda-graphs-lab")
    with pytest.raises(tool.SourceError, match=r"^05_graph_update.py: the first cell must open "
                                               r"with its Colab badge; make its first line "
                                               r"`# \[!\[Open In Colab\]"):
        tool.read_source(src)


def test_a_source_naming_another_repository_is_refused(tmp_path):
    src = tmp_path / "00_setup.py"
    text = (ROOT / "notebooks" / "src" / src.name).read_text()
    src.write_text(text.replace(f"git+https://github.com/{tool.COURSE_REPO}",
                                "git+https://github.com/someone/fork", 1))
    with pytest.raises(tool.SourceError, match=r"^00_setup.py, cell \d+: names the course's "
                                               r"repository as someone/fork; COURSE_REPO"):
        tool.read_source(src)


def _install_cell():
    nb = tool.read_source(tool.SOURCES / "00_setup.py")
    return next(c.source for c in nb.cells if c.cell_type == "code")


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
                      f"cuda-graphs-lab[cu12] @ git+https://github.com/{tool.COURSE_REPO}"]]
    assert "Colab: the course is installed (cuda-graphs-lab[cu12])" in out


def test_notebook_00s_first_code_cell_does_nothing_outside_colab_and_says_so(monkeypatch):
    calls, out = _exec(_install_cell(), colab=False, monkeypatch=monkeypatch)
    assert calls == []
    assert out.startswith("Not in Colab: this cell installs nothing")
