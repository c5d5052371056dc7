"""Show the course's own code in a notebook: the learner reads what runs, not a copy of it."""
from __future__ import annotations

import inspect
import textwrap

__all__ = ["source", "stream_roles"]


class _Source:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    def _repr_html_(self):
        try:
            from IPython.display import Code
        except ImportError:
            return None
        return Code(self.text, language="python")._repr_html_()


def source(*objs):
    """The source code of functions or labkit kernels (their Python body, decorator included),
    one after another: display it as a cell's last expression."""
    parts = []
    for obj in objs:
        fn = getattr(obj, "py_func", obj)       # a labkit kernel: the function numba compiles
        parts.append(textwrap.dedent(inspect.getsource(fn)).rstrip())
    return _Source("\n\n\n".join(parts))


def stream_roles(*timelines, main: str = "decode stream", other: str = "copies") -> dict:
    """Row labels by role for `labkit.plot.timeline(s)`'s ``stream_names``: the stream row with
    the most kernels is ``main``, any other stream row ``other`` (numbered if there are several).

    Rows are named by the simulator's stream handle or by CUPTI's stream id on a GPU; the role
    is what a learner needs to read."""
    counts: dict = {}
    for tl in timelines:
        for s in tl.spans:
            if s.row != "CPU" and not s.row.startswith("CPU") and " branch " not in s.row:
                counts[s.row] = counts.get(s.row, 0) + (s.kind == "kernel")
    if not counts:
        return {}
    first = max(counts, key=counts.get)
    rest = sorted(r for r in counts if r != first)
    names = {first: main}
    names.update({r: other if len(rest) == 1 else f"{other} {i + 1}" for i, r in enumerate(rest)})
    return names
