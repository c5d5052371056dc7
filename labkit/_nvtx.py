"""NVTX ranges around labkit's graph phases, so Nsight Systems shows labkit's own names.

Each phase of a graph's life that labkit runs (``capture``, ``instantiate``, ``upload``,
``launch``, ``update``) pushes an NVTX range in the domain ``"labkit"`` and pops it when the
phase ends, through NVIDIA's ``nvtx`` package. Under ``nsys profile --trace=cuda,nvtx`` the
ranges sit on the CPU thread's row above the CUDA API calls they contain; elsewhere (no tool
attached, the simulator, a test) the package hands out a dummy domain whose calls do nothing,
so a range costs two Python calls: a fraction of a microsecond of real time
(``tests/core/test_nvtx.py`` holds it below a bound), and nothing at all on the simulator's
virtual clock. ``NVTX_DISABLE=1`` (the package's own switch) turns them off everywhere.

The attributes (message, colour) of each phase are registered once, at import: the hot path
(`GraphExec.launch`) pays one ``push_range`` and one ``pop_range`` with prebuilt attributes.
A leaf module: it imports nothing from labkit.
"""
from __future__ import annotations

import contextlib

import nvtx

__all__ = ["DOMAIN", "PHASES", "push", "pop", "phase"]

DOMAIN = "labkit"
PHASES = {"capture": "green", "instantiate": "orange", "upload": "yellow",
          "launch": "blue", "update": "purple"}

_domain = nvtx.get_domain(DOMAIN)
_attrs = {name: _domain.get_event_attributes(message=name, color=color)
          for name, color in PHASES.items()}


def push(name: str) -> None:
    """Open the NVTX range of phase ``name`` (one of `PHASES`) on this thread."""
    _domain.push_range(_attrs[name])


def pop() -> None:
    """Close this thread's innermost labkit NVTX range."""
    _domain.pop_range()


@contextlib.contextmanager
def phase(name: str):
    """``with phase("capture"):`` the block inside one NVTX range, closed also on an error."""
    _domain.push_range(_attrs[name])
    try:
        yield
    finally:
        _domain.pop_range()
