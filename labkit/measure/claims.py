"""The course's timing claims: strict under test, a friendly note on a learner's machine.

A notebook says "graphs are much cheaper per kernel" and then measures it. On the H200 the
course was written on, the claim holds; on a laptop GPU, a busy workshop server or a GPU whose
kernels outlast their launches it may not, and that is a lesson, not a crash. So every timing
expectation goes through `expect`:

- **strict** mode raises `ClaimFailed` (an ``AssertionError``), as a plain ``assert`` would. It is
  on under the test suite (the repository's ``conftest.py``), under ``python -m labkit run`` when
  ``CI`` is set, and wherever ``LABKIT_CLAIMS=strict``.
- **learner** mode, the default elsewhere (JupyterLab), shows a note under the cell: the claim,
  what was measured here, the likely reason on this kind of machine, and what to look at. The
  notebook goes on.

Correctness checks (results equal to numpy, error codes, graph shapes) are not claims: they
stay plain ``assert`` statements in both modes.

``LABKIT_CLAIMS_LOG=PATH`` appends one JSON line per claim checked (held or not, with the
measurement, the mode and the figures' provenance) to PATH: run the course on a loaded or
unfamiliar machine in learner mode and read off which claims flipped.
"""
from __future__ import annotations

import functools
import html
import json
import os
import time

import labkit

__all__ = ["expect", "claim", "ClaimFailed", "mode"]

MODES = ("strict", "learner")


class ClaimFailed(AssertionError):
    """A timing claim did not hold, in strict mode."""


def mode() -> str:
    """``"strict"`` or ``"learner"``, from ``LABKIT_CLAIMS`` (else strict when ``CI`` is set)."""
    value = os.environ.get("LABKIT_CLAIMS", "").strip().lower()
    if not value:
        return "strict" if os.environ.get("CI") else "learner"
    if value not in MODES:
        raise ValueError(f"LABKIT_CLAIMS={value!r}: use 'strict' (raise when a claim fails) "
                         "or 'learner' (show a note and go on)")
    return value


def expect(holds: bool, claim: str, *, measured: str, why: str, look: str = "") -> bool:
    """Check one of the course's timing claims.

    Parameters
    ----------
    holds : bool
        Whether the claim held in this run.
    claim : str
        What the course expects, in words ("a graph is much cheaper per kernel than eager").
    measured : str
        What was measured here, with units ("eager 21.3 µs, graph 0.9 µs per kernel").
    why : str
        The likely reason when it does not hold, on the kind of machine where that happens
        ("your GPU's kernels take longer than a launch here, so graphs save less").
    look : str, optional
        What to look at next (a figure, a table, a knob to turn).

    Returns
    -------
    bool
        ``holds``. In strict mode a failed claim raises `ClaimFailed` instead.
    """
    holds = bool(holds)
    _log(holds, claim, measured)
    if holds:
        return True
    text = f"expected: {claim}; measured here: {measured}"
    if mode() == "strict":
        raise ClaimFailed(f"{text}. If this machine differs from the one the course was "
                          f"calibrated on, the likely reason: {why}")
    _show_note(claim, measured, why, look)
    return False


def _log(holds: bool, claim: str, measured: str) -> None:
    path = os.environ.get("LABKIT_CLAIMS_LOG", "").strip()
    if not path:
        return
    row = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "holds": holds, "claim": claim,
           "measured": measured, "mode": mode(), "figures": labkit.provenance(),
           "notebook": os.environ.get("LABKIT_CLAIMS_TAG", "")}
    # one line per write, appended: several notebooks (processes) may share the file
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


class _Note:
    """One note under a cell: plain text for terminals and logs, HTML for JupyterLab."""

    def __init__(self, rows, where):
        self.rows, self.where = rows, where

    def __repr__(self):
        return ("Note: this machine tells a different story; nothing is broken.\n"
                + "\n".join(f"  {k}: {v}" for k, v in self.rows))

    def _repr_html_(self):
        body = "".join(f"<li><b>{html.escape(k)}:</b> {html.escape(v)}</li>" for k, v in self.rows)
        return ('<div class="labkit-claim-note" style="border-left:4px solid #d9a400;'
                'background:#fff8e1;color:#333;padding:6px 10px;margin:4px 0">'
                "<b>This machine tells a different story; nothing is broken.</b>"
                f' <span style="color:#666">({html.escape(self.where)})</span>'
                f'<ul style="margin:4px 0">{body}</ul></div>')


def _show_note(claim: str, measured: str, why: str, look: str) -> None:
    rows = [("The course expected", claim), ("Measured here", measured), ("Likely reason", why)]
    if look:
        rows.append(("Look at", look))
    note = _Note(rows, labkit.provenance())
    try:
        from IPython import get_ipython
        from IPython.display import display
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        display(note)
    else:
        print(repr(note))


def claim(text: str, *, why: str, look: str = ""):
    """Make a course claim from a function that returns ``(holds, measured)``.

    The words (the claim, why it may not hold, what to look at) live beside the test, in the
    course code (``labkit.course.claims.nbNN``), so a learner's cell is one short call that
    returns nothing::

        @claim("a graph is much cheaper per kernel than eager launches",
               why="kernels here take longer than a launch", look="the per-kernel plot")
        def graph_cheaper_per_kernel(eager_us, graph_us):
            return eager_us > 5 * graph_us, f"eager {eager_us:.1f} µs, graph {graph_us:.2f} µs"

    The wrapped function checks the claim with `expect` and returns ``None``, so the cell shows
    no stray ``True``. ``wrapper.words`` holds the three texts (for documentation and tests).
    """
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs) -> None:
            holds, measured = fn(*args, **kwargs)
            expect(holds, text, measured=measured, why=why, look=look)

        wrapper.words = {"claim": text, "why": why, "look": look}
        return wrapper
    return decorate
