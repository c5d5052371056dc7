"""A pending exercise check reads as "Not solved yet" with the check's message, not a traceback."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

from labkit.course import exercises
from labkit.course.exercises import NotSolvedYet
from labkit.course.exercises.nb00 import check_scale_then_add


def test_a_pending_check_raises_not_solved_yet_an_assertion_error_with_the_checks_message():
    x0 = np.arange(8, dtype=np.float32)
    with pytest.raises(NotSolvedYet) as info:
        check_scale_then_add(x0.copy(), x0)
    assert isinstance(info.value, AssertionError)      # the notebook tests and `assert` users
    assert str(info.value)


def test_ipython_shows_the_message_and_what_to_do_not_a_traceback():
    lines = NotSolvedYet("the sum is 3.0, expected 6.0\nlook at the second kernel")._render_traceback_()
    assert lines[0] == "\x1b[1;33mNot solved yet:\x1b[0m the sum is 3.0, expected 6.0"
    assert lines[1] == "look at the second kernel"
    assert lines[-1].startswith("Change your answer above")
    assert not any("File " in line or "Traceback" in line for line in lines)


def test_a_wrong_kind_of_argument_still_raises_its_own_error():
    @exercises.friendly
    def check_kind(x):
        if not isinstance(x, int):
            raise ValueError(f"x must be an int, got {x!r}")
        if x != 2:
            raise AssertionError(f"x is {x}")
    with pytest.raises(ValueError, match=r"^x must be an int, got 'a'$"):
        check_kind("a")
    with pytest.raises(NotSolvedYet, match=r"^x is 3$"):
        check_kind(3)
    assert check_kind(2) is None


def test_every_notebooks_check_function_raises_not_solved_yet():
    names = [i.name for i in pkgutil.iter_modules(exercises.__path__) if i.name.startswith("nb")]
    assert len(names) >= 9
    for name in names:
        module = importlib.import_module(f"labkit.course.exercises.{name}")
        checks = [v for k, v in vars(module).items()
                  if k.startswith("check_") and inspect.isfunction(v)]
        assert checks, f"{name} has no check_* function"
        for check in checks:
            assert getattr(check, "__wrapped_by_exercises__", False), f"{name}.{check.__name__}"
