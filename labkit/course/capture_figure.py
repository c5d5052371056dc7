"""The capture-mode matrix as a figure: a row per call, a column per (capture mode, calling
thread), each square coloured by what the call did to the capture and showing its error code.

Its title says where the error codes come from (a GPU's CUDA runtime, or the simulator's), not
a timing provenance: the matrix shows no times. `labkit.course.capture_modes.plot_matrix`
draws measured cells with the course's column order and codes.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from labkit.plot import _axes
from labkit.plot.theme import style

__all__ = ["CAPTURE_OUTCOMES", "capture_matrix", "capture_outcome"]

# What one cell of the matrix did, by the capture's status after the call.
CAPTURE_OUTCOMES: dict[str, tuple[str, str]] = {
    "allowed": ("allowed: the call succeeds, the capture goes on", "#2ca02c"),
    "refused": ("refused: an error, but the capture goes on", "#f2b134"),
    "invalidated": ("refused, and the capture is invalidated", "#d62728"),
    "ended": ("the capture has ended", "#1f77b4"),
    "setup failed": ("the cell's setup failed", "#d9d9d9"),
}
_WHERE_LABELS = {"capturing": "capturing\nthread", "capturing_relaxed": "capturing,\nrelaxed",
                 "other": "other\nthread", "other_relaxed": "other,\nrelaxed"}


def capture_outcome(rec: Mapping) -> str:
    """The `CAPTURE_OUTCOMES` key of one cell's record."""
    status = rec.get("status")
    if status is None:
        return "setup failed"
    if status == "cudaStreamCaptureStatusNone":
        return "ended"
    if status == "cudaStreamCaptureStatusInvalidated":
        return "invalidated"
    return "allowed" if rec.get("rc") == "cudaSuccess" else "refused"


def capture_matrix(cells: Sequence[Mapping], codes_from: str, ax=None,
                   title: str = "What a capture allows", wheres: Sequence[str] | None = None,
                   code: Callable[[Mapping], str] | None = None):
    """The capture-mode matrix: a row per call, a column per (capture mode, calling thread).

    Parameters
    ----------
    cells : sequence of dict
        Records of `labkit.course.capture_modes.run_cell` (``measure(...)["cells"]``).
    codes_from : str
        Where the error codes come from ("error codes returned by the CUDA runtime on ..."),
        the title's second line.
    ax : matplotlib Axes, optional
    title : str
    wheres : sequence of str, optional
        The column order of the calling threads (default: as they first appear in ``cells``).
    code : callable, optional
        ``code(record) -> str``, the text in a square (default: the record's ``rc``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    if not cells:
        raise ValueError("capture_matrix got no cells; pass labkit.course.capture_modes"
                         ".measure(...)['cells']")
    wheres = list(wheres) if wheres is not None else list(dict.fromkeys(r["where"] for r in cells))
    code = code or (lambda rec: str(rec["rc"]))
    calls = list(dict.fromkeys(r["call"] for r in cells))
    modes = list(dict.fromkeys(r["mode"] for r in cells))
    wheres = [w for w in wheres if any(r["where"] == w for r in cells)]
    columns = [(m, w) for m in modes for w in wheres]
    by_key = {(r["call"], r["mode"], r["where"]): r for r in cells}
    kinds = list(CAPTURE_OUTCOMES)
    grid = np.full((len(calls), len(columns)), np.nan)
    with style():
        ax = _axes.new_axes(ax, (max(7.0, 2.6 + 0.78 * len(columns)),
                                 max(3.6, 1.6 + 0.36 * len(calls))))  # room for labels, legend
        for i, call in enumerate(calls):
            for j, (mode, where) in enumerate(columns):
                rec = by_key.get((call, mode, where))
                if rec is None:
                    continue
                grid[i, j] = kinds.index(capture_outcome(rec))
                ax.text(j, i, code(rec), ha="center", va="center", fontsize=8,
                        color="white" if capture_outcome(rec) in ("invalidated", "ended")
                        else "black")
        cmap = ListedColormap([CAPTURE_OUTCOMES[k][1] for k in kinds])
        ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(kinds) - 0.5, aspect="auto")
        ax.set_xticks(range(len(columns)), [_WHERE_LABELS.get(w, w) for _, w in columns],
                      fontsize=8)
        ax.set_yticks(range(len(calls)), calls, fontsize=9)
        ax.tick_params(length=0)
        for k in range(1, len(modes)):
            ax.axvline(k * len(wheres) - 0.5, color="white", linewidth=4)
        for k, mode in enumerate(modes):
            ax.text((k + 0.5) * len(wheres) - 0.5, -0.7, f"capture mode: {mode}",
                    ha="center", va="bottom", fontsize=10, fontweight="bold")
        used = [k for k in kinds if k in {capture_outcome(r) for r in cells}]
        ax.legend(handles=[Patch(color=CAPTURE_OUTCOMES[k][1], label=CAPTURE_OUTCOMES[k][0])
                           for k in used],
                  loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.3 / max(1, len(calls))),
                  ncol=2, fontsize=9)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        ax.set_ylim(len(calls) - 0.5, -1.3)
        return _axes.finish(ax, title, codes_from, grid_axis=None)
