"""Automatic checks for the notebooks' exercises: each says what is wrong, not just False.

A check that finds the exercise not done yet raises :class:`NotSolvedYet`, an
``AssertionError`` that Jupyter shows as a short "Not solved yet" note with the check's message,
not as a red traceback through labkit's files. The checks in ``nb00`` ... ``nbNN`` may raise a
plain ``AssertionError``: every public ``check_*`` function of those modules is wrapped here, on
import of this package, so that it raises ``NotSolvedYet`` instead. A wrong kind of argument
(a ``ValueError`` or ``TypeError``) still shows as the error it is.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil

__all__ = ["NotSolvedYet", "friendly"]

_NOTE = "Change your answer above, run it, then run this check again."


class NotSolvedYet(AssertionError):
    """The exercise is not solved yet; the message says what the check found."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the check's message, in a few lines."""
        lines = str(self).strip().splitlines() or ["the check did not pass"]
        return ["\x1b[1;33mNot solved yet:\x1b[0m " + lines[0], *lines[1:], "", _NOTE]


def friendly(check):
    """``check`` raising :class:`NotSolvedYet` where it raised a plain ``AssertionError``."""
    if getattr(check, "__wrapped_by_exercises__", False):
        return check

    @functools.wraps(check)
    def wrapped(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except NotSolvedYet:
            raise
        except AssertionError as exc:
            raise NotSolvedYet(*exc.args).with_traceback(exc.__traceback__) from None
    wrapped.__wrapped_by_exercises__ = True
    return wrapped


def _wrap_checks() -> None:
    """Wrap every ``check_*`` function of the ``nbNN`` modules, in place."""
    for info in pkgutil.iter_modules(__path__):
        if not (info.name.startswith("nb") and info.name[2:].isdigit()):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, value in list(vars(module).items()):
            if (name.startswith("check_") and callable(value)
                    and getattr(value, "__module__", None) == module.__name__):
                setattr(module, name, friendly(value))


_wrap_checks()
