"""`python -m hub links`: one nbgitpuller link per notebook, the repository from pyproject.toml."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from hub.links import nbgitpuller_link, repository_url

ROOT = Path(__file__).resolve().parents[2]


def _links(*args):
    return subprocess.run([sys.executable, "-m", "hub", "links", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_links_prints_one_link_per_notebook_opening_it_at_the_given_branch():
    run = _links("--hub", "https://hub.example.org", "--repo",
                 "https://github.com/owner/cuda-graphs-lab", "--branch", "workshop")
    assert run.returncode == 0, run.stderr
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks, f"no learner notebooks under {ROOT / 'notebooks'}"
    lines = run.stdout.splitlines()
    assert [ln.split(":", 1)[0] for ln in lines] == notebooks
    for name, line in zip(notebooks, lines):
        query = parse_qs(urlparse(line.split(": ", 1)[1]).query)
        assert query["branch"] == ["workshop"]
        assert query["urlpath"] == [f"lab/tree/cuda-graphs-lab/notebooks/{name}.ipynb"]


def test_a_pyproject_without_a_repository_asks_for_repo(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(ValueError, match=r"^pyproject.toml has no \[project.urls\] Repository"):
        repository_url(tmp_path / "pyproject.toml")


def test_the_repository_comes_from_pyproject_when_it_is_set(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project.urls]\nRepository = "https://github.com/owner/cuda-graphs-lab"\n')
    assert repository_url(tmp_path / "pyproject.toml") == "https://github.com/owner/cuda-graphs-lab"


def test_a_link_for_something_that_is_not_a_notebook_is_refused():
    with pytest.raises(ValueError, match=r"^'eager' is not a course notebook's name"):
        nbgitpuller_link("https://hub.example.org", "https://example.org/course", "eager")
    with pytest.raises(ValueError, match=r"^the hub address 'hub\.example\.org' is not a URL"):
        nbgitpuller_link("hub.example.org", "https://example.org/course", "00_setup")
