"""Show the course's own code in a notebook: the learner reads what runs, not a copy of it."""
from __future__ import annotations

import inspect
import textwrap

__all__ = ["source"]


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
