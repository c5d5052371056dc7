"""The notebooks' sources as the tests read them: through the build tool, never a copy.

``tools/build_notebooks.py`` is a maintainer's script, not part of labkit, so it is loaded from
its path. ``code(prefix, role)`` is the source of a notebook's one cell with that role, which is
how the exercise tests get the starter and the worked solution.
"""
from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def build_tool():
    """``tools/build_notebooks.py`` as a module."""
    spec = importlib.util.spec_from_file_location("build_notebooks",
                                                  ROOT / "tools" / "build_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def source_path(prefix: str) -> Path:
    """The one source whose name starts with ``prefix`` (such as ``"04"``)."""
    matches = [p for p in build_tool().sources() if p.name.startswith(prefix)]
    assert len(matches) == 1, f"{prefix!r} names {len(matches)} sources in notebooks/src"
    return matches[0]


def code(prefix: str, role: str) -> str:
    """The source of notebook ``prefix``'s one cell tagged ``role`` (starter, solution, check)."""
    nb = build_tool().read_source(source_path(prefix))
    cells = [c.source for c in nb.cells if role in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"notebook {prefix} has {len(cells)} cells tagged {role}"
    return cells[0]


def run_cell(prefix: str, role: str, namespace: dict) -> dict:
    """Execute that cell's code in ``namespace`` (the names earlier cells made) and return it."""
    exec(compile(code(prefix, role), f"<notebook {prefix}, {role} cell>", "exec"), namespace)
    return namespace
