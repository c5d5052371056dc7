"""Check for notebook 03's exercise: when does a graph pay for itself?

The learner writes ``pays_off_after(ph, eager_us)``: given a graph's phases (a dict of Stats, as
`labkit.timing.graph_phases` returns them) and the cost of one eager iteration, after how many
iterations has the graph paid for its setup (None if never)? The check calls that function
on costs it measures itself (a 10-kernel chain: its phases and its eager iteration, on this
machine, by `chain_costs`) and on made-up phases chosen so that each usual mistake gives its own
answer. It takes no figure from the learner's cells, so no hand-set number can pass it; the
learner's cell calls `chain_costs` too, so what it prints is what the check judges.
"""
from __future__ import annotations

import math

import numpy as np
import labkit
from labkit import timing
from labkit.measure.stats import Stats
from labkit.course import workloads

__all__ = ["check_pays_off", "chain_costs", "MADE_UP", "MADE_UP_EAGER_US", "NEVER_EAGER_US", "EVEN_EAGER_US"]

#: A made-up graph whose setup parts and launch costs are far enough apart that each usual
#: mistake gives a different answer (µs). Setup 2,050, saving 200 per iteration: 10.25, so 11.
#: The fraction is under a half, so ``round()`` (10) is told apart from rounding up.
MADE_UP = {"capture": 1200.0, "instantiate": 450.0, "upload": 400.0, "first_launch": 500.0,
           "uploaded_first_launch": 170.0, "steady_launch": 150.0, "launch_call": 50.0}
MADE_UP_EAGER_US = 350.0
#: The same graph against an eager iteration cheaper than its launch: it never pays off.
NEVER_EAGER_US = 100.0
#: ... and against one that costs exactly a graph iteration: it saves nothing, never pays off.
EVEN_EAGER_US = 150.0


def _phases(values: dict):
    return {k: Stats([v], label=k) for k, v in values.items()}


def _setup(ph, parts=("capture", "instantiate", "upload")) -> float:
    return sum(ph[k] for k in parts)


def _mistakes(ph: dict, eager: float) -> list[tuple[float, str]]:
    """(what the mistake computes, what to tell the learner), for the made-up phases ``ph``."""
    saving = eager - ph["steady_launch"]
    full = _setup(ph)
    return [
        (ph["instantiate"] / eager,
         "you divided the setup by the eager iteration's cost, as the starting code does; but a "
         "graph iteration is not free: divide by what each iteration saves"),
        (full / eager,
         "you divided the setup by the eager iteration's cost, but a graph iteration is not "
         "free: divide by what each iteration saves"),
        (full / ph["steady_launch"],
         "you divided the setup by the graph iteration's cost: divide by what each iteration "
         "saves, eager minus graph"),
        (full / (eager - ph["launch_call"]),
         "you took the graph iteration as the launch call alone, but the eager iteration is timed "
         "until the GPU is done: compare like with like (a graph launch and its synchronize)"),
        (ph["instantiate"] / saving,
         "your setup is only the instantiation: which other phases does a graph pay once, before "
         "its first steady launch?"),
        (_setup(ph, ("capture", "instantiate")) / saving,
         "your setup leaves out the upload: a fresh executable is copied to the GPU once, "
         "before (or during) its first launch"),
        (_setup(ph, ("instantiate", "upload")) / saving,
         "your setup leaves out the capture: recording the work is part of what the graph "
         "costs once"),
        (_setup(ph, ("capture", "instantiate", "upload", "first_launch")) / saving,
         "your setup counts the first launch too: a first launch is the upload (already in your "
         "setup) plus a launch that does an iteration's work, so it is not paid on top"),
        (full / (eager - ph["uploaded_first_launch"]),
         "your graph iteration is the first launch after the upload; every later iteration costs "
         "a steady launch (with its synchronize)"),
    ]


def _number(value, where: str) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"pays_off_after returned {value!r} for {where}: return a number of "
                         "iterations, or None when the graph never pays off") from None


def _right(answer: float, want: float) -> bool:
    """The break-even itself, or the whole number of iterations after which the graph has paid."""
    return math.isclose(answer, want, rel_tol=0.02) or answer == math.ceil(want)


def _matches(answer: float, wrong: float) -> bool:
    return math.isclose(answer, wrong, rel_tol=0.02) or answer == math.ceil(wrong)


def _judge(fn, values: dict, eager: float, where: str) -> None:
    ph = _phases(values)
    saving = eager - values["steady_launch"]
    try:
        answer = fn(ph, eager)
    except ZeroDivisionError:
        raise AssertionError(
            f"for {where}, your function divided by zero: an iteration that saves nothing "
            "(eager and graph iterations cost the same) never pays the setup back. What should "
            "it return then?") from None
    got = _number(answer, where)
    if saving <= 0:
        if got is not None:
            raise AssertionError(
                f"for {where}, a graph iteration ({values['steady_launch']:g} µs) costs as much as "
                f"an eager one ({eager:g} µs) or more: nothing is saved, so the setup is never paid back. "
                f"Return None there (your function gave {got:g})")
        return
    want = _setup(values) / saving
    if got is None:
        raise AssertionError(f"for {where}, each graph iteration saves {saving:g} µs, so the "
                             "setup is paid back eventually: return the number of iterations, "
                             "not None")
    if _right(got, want):
        return
    if got < want and (got == math.floor(want) or got == round(want)):
        raise AssertionError(f"for {where} your function gives {got:g}: after {got:g} iterations "
                             "the graph has not yet paid for its whole setup. Round up, not down")
    for wrong, why in _mistakes(values, eager):
        if _matches(got, wrong):
            raise AssertionError(f"for {where} your function gives {got:g}: {why}")
    raise AssertionError(f"for {where} your function gives {got:g}, which is not the break-even: "
                         "find the n at which setup + n × graph iteration = n × eager iteration")


_CHAIN: dict = {}      # the chain's costs, measured once per process (see chain_costs)


def chain_costs(k: int = 10):
    """The ``k``-kernel chain the check judges with: its graph's phases (a dict of Stats, as
    `labkit.timing.graph_phases` returns them) and one eager iteration's median (µs).

    Measured on this machine at the first call, then kept: the learner's cell and the check
    both call it, so the figure the cell prints is the one the check compares with.
    """
    if k not in _CHAIN:
        s = labkit.Stream()
        x = labkit.to_device(np.zeros(1024, np.float32))
        ph = timing.graph_phases(lambda st: workloads.chain(k, x, st), s, repeat=3, steady=10)
        sz = workloads.sizes()
        eager = timing.measure(lambda: workloads.chain(k, x, s), sync=s, warmup=sz["warmup"],
                               repeat=sz["repeat"]).median
        _CHAIN[k] = (ph, eager)
    return _CHAIN[k]


def _measure_chain(k: int = 10):
    ph, eager = chain_costs(k)
    return {name: st.median for name, st in ph.items()}, eager


def check_pays_off(pays_off_after) -> None:
    """Pass if ``pays_off_after(ph, eager_us)`` gives the number of iterations after which a
    graph has paid for its setup (the break-even, or that number rounded up), or None where a
    graph iteration saves nothing; on made-up phases and on a 10-kernel chain measured here."""
    if not callable(pays_off_after):
        raise ValueError(f"pass your function itself, check_pays_off(pays_off_after), not its "
                         f"result ({pays_off_after!r})")
    _judge(pays_off_after, MADE_UP, MADE_UP_EAGER_US, "a made-up graph (capture 1200, "
           "instantiate 450, upload 400 µs; steady launch 150, launch call alone 50 µs; eager "
           "iteration 350 µs)")
    _judge(pays_off_after, MADE_UP, NEVER_EAGER_US, "the same made-up graph against an eager "
           "iteration of 100 µs")
    _judge(pays_off_after, MADE_UP, EVEN_EAGER_US, "the same made-up graph against an eager "
           "iteration of 150 µs, exactly its steady launch")
    values, eager = _measure_chain(10)
    where = "the 10-kernel chain of chain_costs()"
    _judge(pays_off_after, values, eager, where)
    setup, saving = _setup(values), eager - values["steady_launch"]
    print(f"correct. The 10-kernel chain of chain_costs(): setup {setup:.0f} µs, each iteration "
          f"saves {saving:.0f} µs, so its graph has paid off after {math.ceil(setup / saving)} "
          f"iterations ({setup / saving:.2f})")
