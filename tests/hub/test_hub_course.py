"""The hub's course folder: a wrong path is refused with the fix; a learner's copy keeps their work."""
from __future__ import annotations

from pathlib import Path

import pytest

from hub.course import CourseError, copy_course, find_course, pre_spawn_hook

ROOT = Path(__file__).resolve().parents[2]


def test_the_repository_is_a_course_folder():
    assert find_course(ROOT) == ROOT


def test_an_unset_course_path_names_the_setting_to_set():
    with pytest.raises(CourseError, match=r"^no course folder given: set COURSE_HUB_COURSE"):
        find_course("")


def test_a_missing_course_path_says_it_does_not_exist(tmp_path):
    with pytest.raises(CourseError, match=r"^COURSE_HUB_COURSE='.*/nowhere' does not exist"):
        find_course(tmp_path / "nowhere")


def test_a_relative_course_path_asks_for_the_absolute_one():
    with pytest.raises(CourseError, match=r"^COURSE_HUB_COURSE='course' is a relative path"):
        find_course("course")


def test_a_folder_that_is_not_the_course_names_what_it_lacks(tmp_path):
    with pytest.raises(CourseError, match=r"is not the course: it has no notebooks/00_setup\.ipynb"):
        find_course(tmp_path)


def test_pointing_at_the_notebooks_folder_itself_suggests_its_parent():
    with pytest.raises(CourseError, match=r"it is the notebooks folder itself: use its parent"):
        find_course(ROOT / "notebooks")


def test_a_learners_copy_has_the_notebooks_and_solutions_but_not_the_sources(tmp_path):
    target = copy_course(ROOT, tmp_path)
    assert (target / "notebooks" / "00_setup.ipynb").is_file()
    assert (target / "notebooks" / "solutions" / "01_eager_launches_solution.ipynb").is_file()
    assert not (target / "notebooks" / "src").exists()


def test_a_second_copy_keeps_the_learners_edits_and_adds_what_is_missing(tmp_path):
    target = copy_course(ROOT, tmp_path)
    edited = target / "notebooks" / "00_setup.ipynb"
    edited.write_text("the learner's work")
    (target / "notebooks" / "01_eager_launches.ipynb").unlink()
    copy_course(ROOT, tmp_path)
    assert edited.read_text() == "the learner's work"
    assert (target / "notebooks" / "01_eager_launches.ipynb").is_file()


def test_a_home_that_cannot_hold_the_copy_fails_with_the_reason(tmp_path):
    home = tmp_path / "home"
    home.write_text("a file where the learner's home should be")
    with pytest.raises(CourseError, match=r"^could not copy the course's notebooks into .*home"):
        copy_course(ROOT, home)


def test_the_spawn_hook_refuses_a_wrong_course_when_the_hub_loads_its_config(tmp_path):
    with pytest.raises(CourseError, match=r"is not the course"):
        pre_spawn_hook(tmp_path)


def test_the_spawn_hook_copies_into_the_spawners_home(tmp_path):
    class Spawner:
        home_dir = str(tmp_path / "ada")
        user = None
    pre_spawn_hook(ROOT)(Spawner())
    assert (tmp_path / "ada" / "cuda-graphs-lab" / "notebooks" / "00_setup.ipynb").is_file()
