"""A bounded background load on the host: N busy processes that stop by themselves.

Used to check which of the course's timing claims flip on a busy host (issue 18, item 3), e.g.
on the 16-core H200 machine::

    python tools/host_load.py --cores 14 --seconds 300 &
    LABKIT_CLAIMS=learner python -m labkit run    # or nbmake per notebook, LABKIT_CLAIMS=strict

Each worker spins on pure Python arithmetic (no GPU, no memory pressure) until its deadline and
then exits; the parent waits for them, so a Ctrl-C or the deadline ends the whole load.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time


def _spin(deadline: float) -> None:
    x = 0
    while time.monotonic() < deadline:
        for _ in range(10_000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cores", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                   help="busy processes to start (default: all cores but two)")
    p.add_argument("--seconds", type=float, default=300.0,
                   help="how long the load lasts before every worker stops (default 300)")
    a = p.parse_args(argv)
    if a.cores < 1 or a.seconds <= 0:
        p.error("--cores must be >= 1 and --seconds > 0")
    if a.seconds > 3600:
        p.error("--seconds above 3600: a load this long is surely a typo")
    deadline = time.monotonic() + a.seconds
    workers = [mp.Process(target=_spin, args=(deadline,), daemon=True) for _ in range(a.cores)]
    for w in workers:
        w.start()
    print(f"host_load: {a.cores} busy processes for {a.seconds:.0f} s (pids "
          f"{', '.join(str(w.pid) for w in workers)})", flush=True)
    try:
        for w in workers:
            w.join()
    except KeyboardInterrupt:
        for w in workers:
            w.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
