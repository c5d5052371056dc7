"""The repository is a product, not a lab notebook: no run logs, no probe folders, a small tools/."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("labkit", "tests", "tools", "notebooks", "docs")


def _files(pattern: str):
    for tree in TREES:
        yield from (p for p in (ROOT / tree).rglob(pattern)
                    if ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts)


def test_no_run_logs_in_the_tree():
    logs = sorted(p.relative_to(ROOT).as_posix() for p in _files("*.log"))
    assert not logs, (f"run logs in the tree: {logs}; a GPU result the project stands behind "
                      "goes to docs/measurements/ as JSON, a log goes nowhere")


def test_no_probe_or_run_log_folders():
    folders = sorted(p.relative_to(ROOT).as_posix() for p in _files("*")
                     if p.is_dir() and p.name in ("probe_logs", "calibration_runs", ".probe"))
    assert not folders, f"experiment folders in the tree: {folders}"


def test_tools_holds_only_what_a_maintainer_runs():
    tools = sorted(p.name for p in (ROOT / "tools").iterdir() if p.is_file())
    assert len(tools) <= 4, (f"tools/ has {len(tools)} files: {tools}; keep at most 4 (the "
                             "maintainers' procedures are labkit.toolbox, called by the CLI)")
    assert {"build_notebooks.py", "gpu_check.sh"} <= set(tools)
