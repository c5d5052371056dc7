"""The course image's environment, built without a container builder: the files hub/Dockerfile
COPYs, installed by its own pip line into a fresh virtual environment, run notebook 00.

No docker daemon, podman or buildah runs here or in CI, so this is the image recipe's test: it
reads the Dockerfile (COPY sources and destinations, the pip install line and its extra) rather
than a list of its own, so the two cannot drift. Cost: one pip install from pip's cache (about a
minute on 2 cores) and one notebook run.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "hub" / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, as (KEYWORD, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _args() -> dict[str, str]:
    return dict(rest.split("=", 1) for word, rest in _instructions()
                if word == "ARG" and "=" in rest)


def _copies() -> list[tuple[list[str], str]]:
    copies = []
    for word, rest in _instructions():
        if word == "COPY":
            parts = [p for p in shlex.split(rest) if not p.startswith("--")]
            copies.append((parts[:-1], parts[-1]))
    return copies


def _pip_line() -> str:
    runs = [rest for word, rest in _instructions() if word == "RUN" and "pip install" in rest]
    assert len(runs) == 1, f"hub/Dockerfile should install the course with one pip line: {runs}"
    return runs[0]


def test_the_image_builds_on_an_official_jupyter_base_image_that_carries_jupyterhub_singleuser():
    assert _args()["BASE_IMAGE"].startswith("quay.io/jupyter/minimal-notebook:python-3.")


def test_every_file_the_image_copies_is_in_the_repository():
    sources = [src for srcs, _ in _copies() for src in srcs]
    assert {"pyproject.toml", "labkit", "notebooks"} <= set(sources)
    assert all((ROOT / s).exists() for s in sources), sources


def test_the_images_extras_are_pyprojects_hub_and_cuda_extras():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert _args()["COURSE_EXTRA"] == "hub" and "hub" in extras
    text = DOCKERFILE.read_text()
    gpus = re.findall(r"COURSE_EXTRA=hub,(cu\d+)", text)
    assert gpus, "hub/Dockerfile should say how to build the GPU image (COURSE_EXTRA=hub,cuNN)"
    for gpu in gpus:
        assert gpu in extras, f"the Dockerfile's GPU build names an extra {gpu} pyproject lacks"
    assert "${COURSE_EXTRA}" in _pip_line()


def test_the_image_environment_built_in_a_fresh_venv_runs_notebook_00(tmp_path):
    # The image's /opt/cuda-graphs-lab, laid out by the Dockerfile's own COPY lines.
    image = tmp_path / "image"
    for sources, dest in _copies():
        target = image / dest.lstrip("/")
        for src in sources:
            into = target / Path(src).name if dest.endswith("/") else target
            into.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / src).is_dir():
                shutil.copytree(ROOT / src, into, ignore=shutil.ignore_patterns(
                    "__pycache__", ".ipynb_checkpoints"))
            else:
                shutil.copy2(ROOT / src, into)
    course = Path(re.search(r'"(/[^"\[]+)\[\$\{COURSE_EXTRA\}\]"', _pip_line()).group(1))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("JUPYTER")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    # --no-compile: byte-compiling every installed file would cost more than it saves here.
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-compile",
         f"{image / str(course).lstrip('/')}[{_args()['COURSE_EXTRA']}]"],
        env=env, capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    where = subprocess.run([str(python), "-c", "import labkit; print(labkit.__file__)"],
                           env={**env, "LABKIT_BACKEND": "sim"}, cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv)), f"labkit came from {where}, not the fresh environment"
    # No user kernelspecs (HOME), the environment's own python3 kernel.
    home = tmp_path / "home"
    home.mkdir()
    notebook = image / str(course).lstrip("/") / "notebooks/solutions/00_setup_solution.ipynb"
    run = subprocess.run(
        [str(python), "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
         "--output", str(tmp_path / "executed.ipynb"), str(notebook)],
        env={**env, "HOME": str(home), "LABKIT_BACKEND": "sim"}, cwd=tmp_path,
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    executed = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    text = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code"
                   for o in c.outputs)
    assert "backend : sim" in text and "correct: every element is 3·x + 1" in text
