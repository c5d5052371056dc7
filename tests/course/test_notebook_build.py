"""The built notebooks are their sources' build, and the build splits a source by role.

Every notebook has one source, ``notebooks/src/NN_topic.py``; ``tools/build_notebooks.py``
writes the learner's and the solution notebook from it. These tests run the build in memory
(and, for ``--check`` and the refusals, on copies in a temporary folder).
"""
from __future__ import annotations

import shutil

import jupytext
import nbformat
import pytest

from tests.notebook_sources import ROOT, build_tool

tool = build_tool()


def _tags(cell):
    return cell.metadata.get("tags", [])


def test_every_committed_notebook_is_exactly_what_its_source_builds():
    want = tool.expected()
    notebooks = [p for p in want if p.suffix == ".ipynb"]
    assert len(notebooks) == 2 * len(tool.sources()) >= 16
    assert tool.NOTEBOOKS / "README.md" in want      # the course map's table, from its data
    differ = [p.relative_to(ROOT).as_posix() for p, text in want.items()
              if not p.is_file() or p.read_text(encoding="utf-8") != text]
    assert not differ, f"{differ} differ from their sources; run python tools/build_notebooks.py"
    assert not tool.stale(want), "course notebooks without a source in notebooks/src"


@pytest.mark.parametrize("source", tool.sources(), ids=lambda p: p.stem)
def test_learner_gets_the_starter_and_solution_the_worked_answer(source):
    nb = tool.read_source(source)
    paths = tool.targets(source)
    learner = nbformat.read(paths["learner"], as_version=4)
    solution = nbformat.read(paths["solution"], as_version=4)
    starters = [c.source for c in nb.cells if "starter" in _tags(c)]
    answers = [c.source for c in nb.cells if "solution" in _tags(c)]
    assert [c.source for c in learner.cells if "starter" in _tags(c)] == starters
    assert not any("solution" in _tags(c) for c in learner.cells)
    assert [c.source for c in solution.cells if "solution" in _tags(c)] == answers
    assert not any("starter" in _tags(c) for c in solution.cells)
    for built in (learner, solution):
        assert built.metadata.kernelspec.name == "python3"
        assert all(not c.get("outputs") and c.get("execution_count") is None
                   for c in built.cells if c.cell_type == "code")


@pytest.mark.parametrize("source", tool.sources(), ids=lambda p: p.stem)
def test_only_the_learners_check_cell_may_raise(source):
    paths = tool.targets(source)
    learner = nbformat.read(paths["learner"], as_version=4)
    solution = nbformat.read(paths["solution"], as_version=4)
    raising = [i for i, c in enumerate(learner.cells) if "raises-exception" in _tags(c)]
    checks = [i for i, c in enumerate(learner.cells) if "check" in _tags(c)]
    assert raising == checks and len(checks) == 1
    assert not any("raises-exception" in _tags(c) for c in solution.cells)


def test_cell_ids_are_the_notebooks_name_and_the_cells_position():
    source = tool.sources()[0]
    text = tool.build(tool.read_source(source), "learner", tool.targets(source)["learner"])
    ids = [c.id for c in nbformat.reads(text, as_version=4).cells]
    assert ids[:2] == ["00-setup-00", "00-setup-01"]
    assert text == tool.build(tool.read_source(source), "learner", tool.targets(source)["learner"])


@pytest.fixture
def course_copy(tmp_path, monkeypatch):
    """The sources and built notebooks copied into ``tmp_path``, the build pointed there."""
    notebooks = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", notebooks,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "NOTEBOOKS", notebooks)
    monkeypatch.setattr(tool, "SOURCES", notebooks / "src")
    return notebooks


def test_check_names_the_notebook_whose_source_changed_and_exits_1(course_copy, capsys):
    src = course_copy / "src" / "04_multi_stream.py"
    src.write_text(src.read_text().replace("# ## ", "# ## Edited: ", 1))
    assert tool.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "notebooks/04_multi_stream.ipynb differs from its source notebooks/src/04_multi_stream.py" in err
    assert "notebooks/solutions/04_multi_stream_solution.ipynb differs" in err
    assert "00_setup" not in err


def test_build_writes_what_check_then_accepts(course_copy, capsys):
    (course_copy / "solutions" / "00_setup_solution.ipynb").unlink()
    assert tool.main(["--check"]) == 1
    assert tool.main([]) == 0
    assert "wrote notebooks/solutions/00_setup_solution.ipynb" in capsys.readouterr().out
    assert tool.main(["--check"]) == 0


def test_check_names_a_notebook_left_without_a_source(course_copy, capsys):
    shutil.copy(course_copy / "00_setup.ipynb", course_copy / "99_orphan.ipynb")
    assert tool.main(["--check"]) == 1
    assert "notebooks/99_orphan.ipynb has no source" in capsys.readouterr().err


def test_a_source_cell_tagged_raises_exception_is_refused(course_copy):
    src = course_copy / "src" / "01_eager_launches.py"
    src.write_text(src.read_text().replace("# %%\n", '# %% tags=["raises-exception"]\n', 1))
    with pytest.raises(tool.SourceError, match=r"^01_eager_launches.py, cell \d+: tagged "
                                               r"raises-exception; JupyterLab's Run All stops"):
        tool.read_source(src)


def test_a_source_without_its_check_cell_is_refused(course_copy):
    src = course_copy / "src" / "03_define_instantiate_launch.py"
    src.write_text(src.read_text().replace('# %% tags=["check"]', "# %%"))
    with pytest.raises(tool.SourceError, match=r"^03_define_instantiate_launch.py: 0 cells tagged check"):
        tool.read_source(src)


def test_jupyterlab_opens_a_source_as_a_notebook_and_saves_it_back_unchanged(tmp_path):
    # JupyterLab reads and writes files through jupytext's contents manager (jupytext's
    # server extension installs it); it applies notebooks/src/jupytext.toml.
    from jupytext import TextFileContentsManager

    src = tmp_path / "src"
    shutil.copytree(ROOT / "notebooks" / "src", src)
    manager = TextFileContentsManager(root_dir=str(src))
    for path in sorted(src.glob("[0-9][0-9]_*.py")):
        before = path.read_text()
        model = manager.get(path.name)
        assert model["type"] == "notebook"
        assert any("solution" in c.metadata.get("tags", []) for c in model["content"].cells)
        manager.save(model, path.name)
        assert path.read_text() == before, f"saving {path.name} in JupyterLab rewrote it"
        assert not list(src.glob("*.ipynb")), "saving a source wrote a paired .ipynb"


def test_the_sources_are_jupytext_percent_scripts():
    for path in tool.sources():
        assert jupytext.read(path).cells, path
        assert path.read_text().count("# %%") >= 10, f"{path.name} is not in the percent format"


def test_every_notebook_chooses_one_figure_for_the_index():
    # the index shows the last figure of the cell tagged key-figure; with none it falls back to
    # the notebook's last figure, which is rarely the one a newcomer should see first
    counts = {src.name: sum("key-figure" in _tags(c) for c in tool.read_source(src).cells)
              for src in tool.sources()}
    assert all(n == 1 for n in counts.values()), counts


def test_learner_notebooks_hold_no_claim_checks_and_solutions_keep_them():
    """The claim checks (the prose held against this machine's figures) are the tests' business:
    the learner's code cells have none, the solution notebook (run strictly by the suite) keeps
    every one."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / "notebooks"
    kept = 0
    for learner in sorted(root.glob("[0-9][0-9]_*.ipynb")):
        code = [c.source for c in nbformat.read(learner, as_version=4).cells
                if c.cell_type == "code"]
        assert not any("claims." in s or "import" in s and " claims" in s for s in code), learner
        solution = root / "solutions" / f"{learner.stem}_solution.ipynb"
        kept += sum(s.count("claims.") for s in (
            c.source for c in nbformat.read(solution, as_version=4).cells if c.cell_type == "code"))
    assert kept >= 50
