"""The course folder a hub serves, and each learner's own copy of its notebooks.

A hub installs the course once (``pip install`` of this repository gives every learner
``labkit``); each learner then needs a copy of ``notebooks/`` in their home to edit and run.
`find_course` checks the folder a hub's configuration names, so that a wrong path stops the hub
at start-up with the fix, instead of giving every learner an empty home. `copy_course` never
overwrites a learner's work: a second start copies only what is new.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

# What makes a folder the course: the first notebook, and the package the notebooks import.
MARKERS = ("notebooks/00_setup.ipynb", "notebooks/01_eager_launches.ipynb")
# The folder each learner's copy lands in, in their home (nbgitpuller's links use the
# repository's name the same way).
LEARNER_FOLDER = "cuda-graphs-lab"


class CourseError(RuntimeError):
    """The hub's course folder is missing or is not the course; the message names the fix."""


def find_course(path: str | os.PathLike | None, *, setting: str = "COURSE_HUB_COURSE") -> Path:
    """Return the course folder at ``path``, or raise `CourseError` saying how to fix it.

    Parameters
    ----------
    path
        The folder that holds ``notebooks/00_setup.ipynb`` (a checkout of the repository, or the
        image's ``/opt/cuda-graphs-lab``).
    setting
        The name of the setting that gave ``path``, for the message.
    """
    if path is None or str(path).strip() == "":
        raise CourseError(
            f"no course folder given: set {setting} to the folder that holds "
            f"notebooks/00_setup.ipynb (a checkout of the course's repository)")
    folder = Path(path).expanduser()
    if not folder.is_absolute():
        raise CourseError(
            f"{setting}={path!r} is a relative path, which the hub resolves against wherever it "
            f"was started; give the absolute path, e.g. {folder.resolve()}")
    if not folder.is_dir():
        raise CourseError(
            f"{setting}={str(folder)!r} does not exist (or is not a folder): set it to the folder "
            f"that holds notebooks/00_setup.ipynb, e.g. the repository you cloned")
    missing = [m for m in MARKERS if not (folder / m).is_file()]
    if missing:
        hint = ""
        if folder.name == "notebooks" and all((folder.parent / m).is_file() for m in MARKERS):
            hint = f"; it is the notebooks folder itself: use its parent, {folder.parent}"
        elif (folder / "00_setup.ipynb").is_file():
            hint = f"; point at the folder above notebooks/, {folder.parent}"
        raise CourseError(
            f"{setting}={str(folder)!r} is not the course: it has no {', '.join(missing)}{hint}")
    return folder


def copy_course(course: str | os.PathLike, home: str | os.PathLike) -> Path:
    """Copy the course's ``notebooks/`` into ``home/cuda-graphs-lab/``, keeping what is there.

    Files the learner already has are left as they are (their edits and outputs are their
    work); files the course gained since are added. Returns the learner's course folder.
    """
    course = find_course(course)
    target = Path(home) / LEARNER_FOLDER
    try:
        target.mkdir(parents=True, exist_ok=True)
        shutil.copytree(course / "notebooks", target / "notebooks", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "src"),
                        copy_function=_copy_if_absent)
    except OSError as e:
        raise CourseError(
            f"could not copy the course's notebooks into {target}: {e}; the hub's user must be "
            f"able to write the learner's home") from e
    return target


def _copy_if_absent(src: str, dst: str) -> str:
    if not os.path.exists(dst):
        shutil.copy2(src, dst)
    return dst


def pre_spawn_hook(course: str | os.PathLike):
    """A ``Spawner.pre_spawn_hook`` that gives each learner a copy of the course on start.

    The spawner's home is ``spawner.home_dir`` (JupyterHub's SimpleLocalProcessSpawner), else
    the learner's Unix home. An error here fails that learner's start with the message, which
    the hub shows on the learner's spawn page and in its log.
    """
    course = find_course(course)

    def hook(spawner):
        home = getattr(spawner, "home_dir", None) or os.path.expanduser(f"~{spawner.user.name}")
        copy_course(course, home)

    return hook
