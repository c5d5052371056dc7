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


def test_no_tracked_file_is_over_1000_kb():
    """What pre-commit's check-added-large-files refuses (.pre-commit-config.yaml), held in CI
    too: outputs and data dumps belong in build/ or docs/measurements/ as small JSON."""
    import subprocess
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    big = sorted(n for n in names if n and (ROOT / n).is_file()
                 and (ROOT / n).stat().st_size > 1000 * 1024)
    assert not big, f"tracked files over 1000 KB: {big}"
