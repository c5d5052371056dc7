"""The stack of labkit captures open in each thread: what a launch consults to keep its
arguments alive with the graph being captured.

A leaf module. ``open_count`` is how many labkit captures are open in any thread, so a launch
outside every capture (the common case) pays one integer test, not a thread-local lookup.
"""
from __future__ import annotations

import threading

__all__ = ["push", "pop", "current", "keep", "record"]

_local = threading.local()
open_count = 0


def push(cap) -> list:
    """Make ``cap`` this thread's innermost capture; returns the stack to restore with `pop`."""
    global open_count
    stack = getattr(_local, "stack", None) or []
    _local.stack = stack + [cap]
    open_count += 1
    return stack


def pop(previous: list) -> None:
    global open_count
    _local.stack = previous
    open_count -= 1


def current():
    """This thread's innermost open labkit capture, or None."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def keep(args, kernel=None) -> None:
    """Keep ``args`` alive with the capture in progress: its graph refers to their memory.

    ``kernel``, the labkit kernel launched with them, is remembered too: a later node update of
    the graph is checked against the kinds of arguments each kernel was captured with."""
    if open_count:
        cap = current()
        if cap is not None:
            cap.keepalive.append(args)
            if kernel is not None:
                seen = cap.launched.setdefault(kernel, [])
                if len(seen) < 4:          # a few shapes are enough to check against
                    seen.append(args)


def record(k, grid, block, args) -> bool:
    """With the eager switch on, a labkit capture records launches instead of making them:
    True when this launch was recorded (the caller then submits nothing)."""
    cap = current()
    if cap is None or cap.recorded is None:
        return False
    cap.recorded.append((k, grid, block, tuple(args)))
    cap.keepalive.append(args)
    return True
