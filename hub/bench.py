"""The capacity benchmark: how many learners one core serves on the simulator.

``python -m hub bench`` starts the one-machine recipe (`hub.local.LocalHub`, backend ``sim``),
then for N = 1, 2, 4, 8, ... learners, each with their own server, runs notebook 01 in every
learner's kernel at the same moment (everyone pressing "Restart and Run All" together, the worst
case of a room) and times each notebook from opening to its last cell. It stops once the median
time passes twice the single learner's, or at ``--max-learners``.

The single learner's time, the reference, is the median of three runs. Learners per core is
the largest N whose median stays within twice the single learner's time,
divided by the cores the machine has. Memory per learner is the peak resident memory of the
learners' servers and kernels during a round, divided by N (resident sizes count shared
libraries once per process, so this errs high, the safe side for sizing).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import psutil

NOTEBOOK = "solutions/01_eager_launches_solution"
SLOWDOWN = 2.0


@dataclass
class Round:
    learners: int
    p50_s: float
    p95_s: float
    max_s: float
    peak_mib_per_learner: float


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, interpolated between the nearest ranks."""
    if not values:
        raise ValueError("no values to take a percentile of")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def learners_per_core(rounds: list[Round], cores: int, slowdown: float = SLOWDOWN) -> float:
    """The most learners whose median notebook time stays within ``slowdown`` × one learner's,
    per core."""
    if not rounds or rounds[0].learners != 1:
        raise ValueError("the rounds must start with a single learner, the reference time")
    limit = slowdown * rounds[0].p50_s
    fits = [r.learners for r in rounds if r.p50_s <= limit]
    return max(fits) / cores


def sizing(room: int, per_core: float, mib_per_learner: float) -> tuple[int, float]:
    """Cores and memory (GiB) for ``room`` learners who all run a notebook at once: the cores
    the measured rate needs, and every learner's peak memory plus 1 GiB for the hub and system."""
    return math.ceil(room / per_core), round(room * mib_per_learner / 1024 + 1, 1)


def _machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class _MemorySampler:
    """The peak summed resident memory of the learners' servers and kernels, sampled."""

    def __init__(self, hub):
        self.hub, self.peak, self._stop = hub, 0, threading.Event()

    def _learner_processes(self):
        for p in self.hub.processes():
            try:
                cmd = " ".join(p.cmdline())
            except psutil.Error:
                continue
            if "jupyterhub.singleuser" in cmd or "ipykernel" in cmd:
                yield p

    def __enter__(self):
        def loop():
            while not self._stop.is_set():
                total = 0
                for p in self._learner_processes():
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
                time.sleep(0.25)
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def bench(max_learners: int = 32, notebook: str = NOTEBOOK, slowdown: float = SLOWDOWN,
          out=sys.stdout) -> dict:
    """Run the rounds on a fresh local hub; print and return the results."""
    from hub.local import LocalHub

    cores = _machine_cores()
    rounds: list[Round] = []
    print(f"capacity benchmark: notebook {notebook}, backend sim, {cores} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start", file=out, flush=True)
    with LocalHub(env={"LABKIT_BACKEND": "sim"}) as hub:
        tokens: dict[str, str] = {}

        def ready(names):
            new = [n for n in names if n not in tokens]
            for n in new:
                hub.login(n)
            with ThreadPoolExecutor(max(1, len(new))) as pool:
                tokens.update(zip(new, pool.map(hub.start_server, new)))

        ready(["learner1"])
        hub.run("learner1", tokens["learner1"], notebook)    # warm the disk cache, not timed
        n = 1
        print(f"{'learners':>8} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'MiB/learner':>12}",
              file=out, flush=True)
        while n <= max_learners:
            names = [f"learner{i + 1}" for i in range(n)]
            ready(names)
            barrier = threading.Barrier(n)

            def one(name):
                barrier.wait()
                return hub.run(name, tokens[name], notebook).total_s

            times, peak = [], 0
            # The single learner is the reference: three runs, so one slow moment does not set it.
            for _ in range(3 if n == 1 else 1):
                with _MemorySampler(hub) as mem, ThreadPoolExecutor(n) as pool:
                    times += list(pool.map(one, names))
                peak = max(peak, mem.peak)
            r = Round(n, percentile(times, 50), percentile(times, 95), max(times),
                      peak / n / 2**20)
            rounds.append(r)
            print(f"{r.learners:>8} {r.p50_s:>7.1f} {r.p95_s:>7.1f} {r.max_s:>7.1f} "
                  f"{r.peak_mib_per_learner:>12.0f}", file=out, flush=True)
            if r.p50_s > slowdown * rounds[0].p50_s:
                break
            n *= 2
    per_core = learners_per_core(rounds, cores, slowdown)
    mib = max(r.peak_mib_per_learner for r in rounds)
    print(f"learners per core: {per_core:.1f} (all running notebook 01 at once, median time "
          f"within {slowdown:g}x one learner's {rounds[0].p50_s:.1f} s)", file=out)
    for room in (30, 100):
        c, gib = sizing(room, per_core, mib)
        print(f"a room of {room}: {c} cores, {gib} GiB", file=out)
    return {"cores": cores, "notebook": notebook, "learners_per_core": per_core,
            "mib_per_learner": mib, "rounds": [asdict(r) for r in rounds]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hub bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-learners", type=int, default=32,
                        help="stop doubling past this many learners (default 32)")
    parser.add_argument("--notebook", default=NOTEBOOK,
                        help=f"the notebook under cuda-graphs-lab/notebooks/ (default {NOTEBOOK})")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    result = bench(args.max_learners, args.notebook)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0
