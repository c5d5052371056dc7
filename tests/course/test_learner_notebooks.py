"""Each learner notebook runs to its exercise check, and the check really fails there.

nbmake's ``raises-exception`` tag lets a cell fail; it does not make it fail. These tests run
every learner notebook as "Run All" would, in a fresh kernel (nbclient, as nbmake does, so the
learner notebooks are run here instead of by nbmake), and require that every cell but the
check ran cleanly and that the check raised the ``NotSolvedYet`` of its function in
``labkit.course.exercises``, shown as a short note, not a traceback: a starter that passes by
accident fails this test.
"""
from __future__ import annotations

import re

import nbformat
import pytest

from tests.notebook_sources import build_tool

tool = build_tool()
LEARNERS = [tool.targets(s)["learner"] for s in tool.sources()]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _run(path):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


@pytest.mark.parametrize("path", LEARNERS, ids=lambda p: p.stem)
def test_learner_notebook_runs_to_its_check_and_the_check_raises_its_assertion(path):
    nb = _run(path)
    errors = {i: o for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"}
    checks = [i for i, c in enumerate(nb.cells) if "check" in c.metadata.get("tags", [])]
    assert len(checks) == 1 and checks[0] == len(nb.cells) - 1, "the check is the last cell"
    unexpected = {i: f"{o.ename}: {o.evalue}" for i, o in errors.items() if i not in checks}
    assert not unexpected, f"cells other than the check raised (index: error): {unexpected}"
    assert checks[0] in errors, "the starter passed its check: the exercise has nothing to do"
    error = errors[checks[0]]
    traceback = ANSI.sub("", "\n".join(error.traceback))
    # NotSolvedYet is raised only by the check functions of labkit.course.exercises (an
    # AssertionError of their own); a starter's own assert would raise a plain AssertionError.
    assert error.ename == "NotSolvedYet", f"the check raised {error.ename}: {error.evalue}"
    assert traceback.startswith("Not solved yet: "), traceback[-2000:]
    assert "File " not in traceback and "labkit/" not in traceback, (
        "the learner sees a traceback through labkit's files:\n" + traceback[-2000:])
