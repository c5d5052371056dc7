"""Draw the course's traced timelines on the active backend, to look at.

    PYTHONPATH=$PWD LABKIT_BACKEND=cuda python tests/measure/trace_honesty_figures.py --out DIR

Writes DIR/timelines.png (20 eager, 20 prepared, one 20-node graph launch, on one time axis),
DIR/fork.png (a four-branch graph), DIR/dag.png and DIR/spans.json (every CPU span's µs next to
the same call's untraced median in this process). Not a test: the figures are for the eye.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import labkit  # noqa: E402
from labkit import plot, timing  # noqa: E402
from labkit.course import workloads  # noqa: E402

K = 20


def untraced_us(fn, s, n=50) -> float:
    out = []
    for _ in range(n):
        t0 = labkit.host_us()          # the backend's host clock: the model's on the simulator
        fn()
        out.append(labkit.host_us() - t0)
        s.synchronize()
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="trace_figures")
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    prep = labkit.prepare(workloads.add_one, 4, 256, s, x)
    with labkit.capture(s) as cap:
        workloads.chain(K, x, s)
    ex = cap.graph.instantiate(upload_stream=s)
    calls = {"launch add_one": lambda: workloads.add_one[4, 256, s](x), "prepared add_one": prep,
             "cudaGraphLaunch": lambda: ex.launch(s)}
    for fn in calls.values():
        fn()
    s.synchronize()
    base = {name: untraced_us(fn, s) for name, fn in calls.items()}

    recs = {}
    with timing.timeline() as recs["eager"]:
        workloads.chain(K, x, s)
        s.synchronize()
    with timing.timeline() as recs["prepared"]:
        for _ in range(K):
            prep()
        s.synchronize()
    with timing.timeline() as recs["graph"]:
        ex.launch(s)
        s.synchronize()
    fig, axes = plt.subplots(3, 1, figsize=(11, 9), constrained_layout=True)
    for ax, (name, rec) in zip(axes, recs.items()):
        plot.timeline(rec.timeline, ax=ax, title=f"{K} kernels, {name}")
    xmax = max(a.get_xlim()[1] for a in axes)
    for a in axes:
        a.set_xlim(0, xmax)
    plot.savefig(fig, os.path.join(out, "timelines.png"))

    sides = [labkit.Stream() for _ in range(3)]
    xs = [labkit.to_device(np.zeros(1 << 20, np.float32)) for _ in range(4)]
    with labkit.capture(s) as cap4:
        with labkit.fork(s, *sides):
            for st, xi in zip([s] + sides, xs):
                workloads.busy[4, 256, st](xi, 2000)
                workloads.busy[4, 256, st](xi, 2000)
    ex4 = cap4.graph.instantiate(upload_stream=s)
    ex4.launch(s)
    s.synchronize()
    with timing.timeline() as rec4:
        ex4.launch(s)
        s.synchronize()
    plot.savefig(plot.timeline(rec4.timeline, title="graph, four branches"),
                 os.path.join(out, "fork.png"))
    plot.savefig(plot.graph_dag(cap4.graph, title="Four branches"), os.path.join(out, "dag.png"))

    spans = {name: [f"{sp.name} {sp.duration_us:.1f} µs" + (f" ({sp.added_us:.1f} added)" if sp.added_us else "")
                     for sp in rec.timeline.row_spans("CPU")] for name, rec in recs.items()}
    report = {"untraced_median_us": base, "cpu_spans": spans,
              "notes": {name: rec.timeline.note for name, rec in recs.items()},
              "fork_rows": rec4.timeline.rows()}
    with open(os.path.join(out, "spans.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report)[:6000])


if __name__ == "__main__":
    main()
