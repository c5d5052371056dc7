"""The tree stays ruff-clean: pyflakes' unused and undefined names, bugbear's likely bugs
(the rules and their exceptions are pyproject.toml's [tool.ruff])."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    if shutil.which("ruff") is None and subprocess.run(
            [sys.executable, "-m", "ruff", "--version"], capture_output=True).returncode != 0:
        pytest.fail("ruff is not installed: pip install -e '.[test]' brings it")
    got = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise",
                          str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert got.returncode == 0, got.stdout + got.stderr
