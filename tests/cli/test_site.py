"""The course site as a learner meets it: a landing page that is the course map, pages that end
in a "Not solved yet" note rather than a traceback, code that wraps, no placeholder address."""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import types

import nbformat
import pytest

from labkit.cli import run

ROOT = run.PACKAGE_ROOT
LONG = "x" * 300
MAP = """# Course map

## What you will learn

- one thing.

<!-- course map: written from course_map.json by tools/build_notebooks.py -->
(the table, which the site replaces by cards)
<!-- end of the course map -->
"""
MAP_DATA = {"notebooks": [
    {"number": "00", "title": "Setup", "file": "00_setup.ipynb", "minutes": 15,
     "prerequisites": "Python", "goals": "check a thing"},
    {"number": "01", "title": "Second", "file": "01_second.ipynb", "minutes": 40,
     "prerequisites": "00", "goals": "draw a figure"}]}


def _notebook(path, *sources, check=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}")]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    if check:
        cell = nbformat.v4.new_code_cell(check)
        cell.metadata["tags"] = ["check", "raises-exception"]   # as the build tags a learner's
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """One real run over two notebooks beside a course map; the first ends in a pending check
    of the course's own exercises, the second prints a long line and draws a figure."""
    src, out = tmp_path_factory.mktemp("notebooks"), tmp_path_factory.mktemp("site")
    (src / "README.md").write_text(MAP)
    (src / "course_map.json").write_text(json.dumps(MAP_DATA))
    first = _notebook(src / "00_setup.ipynb", "import numpy as np\nx0 = np.arange(8, dtype=np.float32)",
                      check="from labkit.course.exercises.nb00 import check_scale_then_add\n"
                            "check_scale_then_add(x0.copy(), x0)")
    second = _notebook(src / "01_second.ipynb", f"print({LONG!r})",
                       "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9]); plt.show()")
    done = subprocess.run([sys.executable, "-m", "labkit", "run", str(first), str(second),
                           "--out", str(out), "--backend", "sim"], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, env=dict(os.environ))
    pages = {p.name: p.read_text() for p in out.glob("*.html")}
    return types.SimpleNamespace(done=done, out=out, pages=pages, index=pages["index.html"])


def test_the_landing_page_is_the_course_map_with_a_card_and_figure_per_notebook(site):
    assert site.done.returncode == 0, site.done.stderr
    assert "What you will learn" in site.index
    cards = site.index.split('labkit-card')[1:]
    assert len(cards) == 2
    assert 'href="00_setup.html"' in cards[0] and "about 15 minutes, after Python" in cards[0]
    assert "You will be able to check a thing." in cards[0]
    assert 'class="labkit-key-figure"' in cards[1] and "data:image/png;base64," in cards[1]


def test_the_landing_page_has_no_build_report_and_the_report_page_has_it(site):
    for word in ("run time", "backend / device", "failed"):
        assert word not in site.index
    report = site.pages["report.html"]
    assert "2 of 2 notebooks ran through, 0 failed" in report
    assert report.count('<span class="ok">ok</span>') == 2 and "sim / " in report


def test_a_pending_exercise_check_shows_a_not_solved_note_not_a_traceback(site):
    page = site.pages["00_setup.html"]
    assert '<div class="labkit-not-solved"><p><strong>Not solved yet.</strong>' in page
    import numpy as np
    from labkit.course.exercises import NotSolvedYet
    from labkit.course.exercises.nb00 import check_scale_then_add
    x0 = np.arange(8, dtype=np.float32)
    with pytest.raises(NotSolvedYet) as pending:
        check_scale_then_add(x0.copy(), x0)
    assert html.escape(str(pending.value).splitlines()[0]) in page     # the check's own words
    for traceback_text in ("Traceback", "NotSolvedYet", "exercises/", "File ", ".py:"):
        assert traceback_text not in page, traceback_text
    executed = nbformat.read(site.out / "00_setup.ipynb", as_version=4)
    assert executed.cells[-1].outputs[0].ename == "NotSolvedYet"    # the download keeps it


def test_code_and_outputs_wrap_instead_of_being_cut_off(site):
    page = site.pages["01_second.html"]
    assert LONG in page
    assert 'href="_static/labkit.css' in page
    css = (site.out / "_static" / "labkit.css").read_text()
    assert re.search(r"div\.cell_output pre[^{]*\{\s*white-space: pre-wrap", css)


def test_no_page_names_a_placeholder_address_or_ends_in_a_traceback(site):
    for name, page in site.pages.items():
        assert "OWNER" not in page, name
        assert "Traceback (most recent call last)" not in page, name


def test_the_course_map_lists_every_notebook_of_the_course():
    folder = ROOT / "notebooks"
    names = {p.name for p in folder.glob(run.NOTEBOOK_GLOB)}
    assert len(names) >= 9
    text = run.course_map(folder / "README.md", names)
    listed = set(re.findall(r"\]\((\d\d_\w+\.ipynb)\)", text))
    assert listed == names, f"notebooks/README.md misses {names - listed}, names {listed - names}"
    assert text.count("labkit-card") == len(names)


def test_the_course_map_counts_no_notebooks_and_names_only_real_extras():
    text = (ROOT / "notebooks" / "README.md").read_text() + (ROOT / "README.md").read_text()
    assert not re.search(r"\b(Eight|Nine|Ten) notebooks\b", text, re.I)
    assert not re.search(r"\[gpu\]|`gpu` extra", text)


def test_the_readme_is_a_front_door_listing_every_notebook_in_150_lines():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    names = {p.stem for p in (ROOT / "notebooks").glob(run.NOTEBOOK_GLOB)}
    listed = set(re.findall(r"\]\(notebooks/(\d\d_\w+)\.ipynb\)", readme))
    assert listed == names, f"README's course map misses {names - listed}"
    for doc in re.findall(r"\]\((docs/[\w/.-]+)\)", readme):
        assert (ROOT / doc).is_file(), f"README links {doc}, which does not exist"
    assert "docs/instructors.md" in readme and "docs/measurements.md" in readme
    assert not re.search(r"20\d\d-\d\d-\d\d", readme), "no dated runs in the front door"


def test_a_notebooks_linked_local_files_are_found_and_nothing_else(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.json").write_text("{}")
    (tmp_path / "other.ipynb").write_text("{}")
    (tmp_path.parent / "outside.txt").write_text("x")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("[the trace](traces/t.json), again [t](traces/t.json), "
                                      "[a page](other.ipynb), [gone](traces/none.json), "
                                      "[web](https://ui.perfetto.dev), [up](../outside.txt)"),
        nbformat.v4.new_code_cell("# [not markdown](traces/t.json)")])
    assert run.linked_files(nb, tmp_path) == ["traces/t.json"]
