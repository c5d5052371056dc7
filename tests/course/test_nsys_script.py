"""Notebook 10's Nsight Systems script exists, runs as bash, and is what the notebook says."""
import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SCRIPT = NOTEBOOKS / "nsys" / "profile.sh"
SOURCE = (NOTEBOOKS / "src" / "10_frameworks_and_tools.py").read_text(encoding="utf-8")


def test_the_script_exists_is_executable_and_parses_as_bash():
    assert SCRIPT.is_file() and os.access(SCRIPT, os.X_OK)
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    assert (NOTEBOOKS / "nsys" / "graph_step.py").is_file()


def test_every_path_the_notebook_names_under_nsys_exists():
    named = set(re.findall(r"\bnsys/[\w.]+\.(?:sh|py)\b", SOURCE))
    assert {"nsys/profile.sh", "nsys/graph_step.py"} <= named
    for rel in named:
        assert (NOTEBOOKS / rel).is_file(), f"notebook 10 names {rel}, which does not exist"


def test_the_options_the_notebook_names_are_the_scripts():
    script = SCRIPT.read_text(encoding="utf-8")
    for option in ("--trace=cuda,nvtx,osrt", "--cuda-graph-trace=", "-o "):
        assert option in SOURCE and option in script
    assert 'nsys profile --trace=cuda,nvtx,osrt --cuda-graph-trace="$MODE"' in script
    for mode in re.findall(r"bash nsys/profile\.sh (\w+)", SOURCE):
        assert mode in ("node", "graph")
    report = re.search(r"nsys/nsys-reports/graph_step_node\.nsys-rep", SOURCE)
    assert report and 'REPORT_DIR=${2:-$HERE/nsys-reports}' in script
    assert 'REPORT="$REPORT_DIR/graph_step_$MODE"' in script
    stats = re.search(r"nsys stats --report ([\w,]+)", SOURCE).group(1)
    assert f"nsys stats --report {stats} " in script


def _run(*args, path=None):
    env = dict(os.environ, PATH=path or os.environ["PATH"])
    return subprocess.run([shutil.which("bash"), str(SCRIPT), *args], capture_output=True, text=True, env=env)


def test_without_nsys_it_says_where_to_get_it(tmp_path):
    (tmp_path / "dirname").symlink_to(shutil.which("dirname"))    # all it runs before the check
    done = _run(path=str(tmp_path))
    assert done.returncode == 3
    assert "nsys (Nsight Systems' command line) is not on PATH" in done.stderr
    assert "/usr/local/cuda/bin" in done.stderr


def test_a_wrong_mode_is_refused_with_the_two_it_takes():
    done = _run("nodes")
    assert done.returncode == 2 and "node or graph" in done.stderr
