"""The GitHub Actions workflow runs the README's test command, word for word, with a pip cache."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "notebooks.yml"


def _readme_test_command() -> str:
    blocks = re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    [command] = [b.strip() for b in blocks if "python -m pytest" in b]
    return command


def _steps() -> list[dict]:
    [job] = yaml.safe_load(WORKFLOW.read_text())["jobs"].values()
    return job["steps"]


def test_the_workflow_runs_the_readmes_test_command_word_for_word():
    runs = [step.get("run", "").strip() for step in _steps()]
    assert _readme_test_command() in runs, (
        f"copy the README's test command into {WORKFLOW.name}: {_readme_test_command()}")


def test_the_workflow_installs_chromium_before_the_tests():
    runs = [step.get("run", "") for step in _steps()]
    chromium = next(i for i, r in enumerate(runs) if "apt-get install" in r and "chromium" in r)
    assert chromium < runs.index(_readme_test_command())


def test_the_workflow_caches_pips_downloads_where_pip_keeps_them():
    [job] = yaml.safe_load(WORKFLOW.read_text())["jobs"].values()
    [cache] = [s for s in _steps() if s.get("uses", "").startswith("actions/cache@")]
    assert cache["with"]["path"] == job["env"]["PIP_CACHE_DIR"]
    assert "hashFiles('pyproject.toml')" in cache["with"]["key"]
