"""What a CUPTI trace adds to the host cost of one call, and how to keep it out (issue 15).

Run on a GPU, from the checkout root::

    PYTHONPATH=$PWD LABKIT_BACKEND=cuda python tests/measure/trace_honesty_probe.py --out probe.json

Each option runs in its own subprocess (a crash in one, e.g. a segfault in CUPTI, does not stop
the rest; faulthandler prints where it died). All host times are µs of ONE call, timed with
perf_counter_ns around the call only (a synchronize follows, untimed). Every option measures its
own untraced baseline in the same process first. Options:

- ``first_*``  (a) is CUPTI's first-call cost inside a trace global (absorbed by a warm-up of a
  DIFFERENT kernel / graph / a memset right after activity_enable) or per function?
- ``gt_*``     (b) GRAPH_TRACE alone: which step crashes (callback order, record reading,
  flush, finalize, process exit) and, if it works, its host cost per graph launch.
- ``PROBE_DRY=1`` with a stand-in ``cupti`` package on PYTHONPATH and LABKIT_BACKEND=sim runs
  the control flow without a GPU (numbers meaningless); that is how the probe was checked.
- ``gt_kernel`` GRAPH_TRACE together with CONCURRENT_KERNEL: refused, or graph-level records?
- ``toggle*``  (c) CONCURRENT_KERNEL on, but disabled around cudaGraphLaunch: the toggles'
  cost, the launch's cost, and whether the graph's kernels are then absent.
- ``prealloc``, ``hwtrace`` (d) activity attributes that pre-allocate CUPTI's buffers at enable
  time, and hardware tracing, as ways to remove the first-call or per-node cost.

Not a test: it prints a table and writes every number (and each child's crash tail) to --out.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

BUDGET_S = 115          # the whole probe, all subprocesses
CHILD_TIMEOUT_S = 35
OPTIONS = ["first_cost", "gt_lead_order", "gt_sample_order", "gt_no_finalize", "gt_runtime",
           "gt_kernel",
           "toggle", "toggle_gt", "prealloc", "hwtrace", "clock"]


# ============================================================================ child side

def _emit(key, value):
    """One partial result per line, so a later crash keeps what came before."""
    print("PART " + json.dumps({key: value}), flush=True)


def _step(msg):
    print(f"STEP {msg}", file=sys.stderr, flush=True)


class Bench:
    """labkit's calls to time: numba eager, labkit eager, prepared, a 200-node graph, and
    'other' work (a different kernel, a different 1-node graph, a memset) for warm-ups."""

    def __init__(self):
        import numpy as np
        import labkit
        from labkit.course.workloads import add_one, scale
        from numba import cuda
        self.labkit = labkit
        self.rt = labkit.rt
        s = labkit.Stream()
        self.s = s
        x = labkit.to_device(np.zeros(1024, np.float32))
        y = labkit.to_device(np.ones(1024, np.float32))
        dry = labkit.backend == "sim"      # PROBE_DRY: control flow only, no GPU
        if not dry:
            nst = cuda.external_stream(int(labkit.stream_handle(s)))
            raw = add_one.dispatcher
        p = labkit.prepare(add_one, 4, 256, s, x)
        with labkit.capture(s) as cap:
            for _ in range(200):
                add_one[4, 256, s](x)
        g200 = cap.graph.instantiate()
        with labkit.capture(s) as cap1:
            scale[4, 256, s](y, 1.0)
        g1 = cap1.graph.instantiate()
        self.keep = (x, y, cap, cap1)
        h = int(labkit.stream_handle(s))
        yptr = 0 if dry else int(y.device_ctypes_pointer.value)
        if not dry:
            from cuda.bindings import driver
            cu_s = driver.CUstream(h)
        self.calls = {
            "numba_eager": (lambda: add_one[4, 256, s](x)) if dry else (lambda: raw[4, 256, nst](x)),
            "labkit_eager": lambda: add_one[4, 256, s](x),
            "prepared": p,
            "graph200": lambda: g200.launch(s),
        }
        self.other = {
            "other_kernel": lambda: scale[4, 256, s](y, 1.0),
            "other_graph": lambda: g1.launch(s),
            "memset": (lambda: scale[4, 256, s](y, 1.0)) if dry else
            (lambda: driver.cuMemsetD32Async(yptr, 0, 1, cu_s)),
        }
        for fn in list(self.calls.values()) + list(self.other.values()):
            for _ in range(5):
                fn()
        self.sync()

    def sync(self):
        self.s.synchronize()

    def one(self, fn) -> float:
        t0 = time.perf_counter_ns()
        fn()
        t1 = time.perf_counter_ns()
        return (t1 - t0) / 1e3

    def series(self, fn, n) -> list[float]:
        out = []
        for _ in range(n):
            out.append(round(self.one(fn), 2))
            self.sync()
        return out

    def untraced(self, n=100) -> dict:
        import numpy as np
        return {k: round(float(np.median(self.series(fn, n))), 2) for k, fn in self.calls.items()}


def _median(v):
    import numpy as np
    return round(float(np.median(v)), 2) if len(v) else None


class Raw:
    """CUPTI driven by hand (cupti.cupti), collecting every record's plain fields."""

    def __init__(self):
        from labkit.measure import _cupti
        self.m = _cupti._require()
        self.records = []
        self.registered = False

    def _requested(self):
        return 8 * 1024 * 1024, 0

    def _completed(self, activities):
        for a in activities:
            d = {"kind": int(a.kind)}
            for f in ("start", "end", "graph_id", "stream_id", "correlation_id", "cbid"):
                v = getattr(a, f, None)
                if v is not None:
                    d[f] = int(v)
            self.records.append(d)

    def register(self):
        self.m.activity_register_callbacks(self._requested, self._completed)
        self.registered = True

    def kind(self, name):
        return self.m.ActivityKind[name]

    def summary(self) -> dict:
        names = {}
        for r in self.records:
            try:
                n = self.m.ActivityKind(r["kind"]).name
            except ValueError:
                n = str(r["kind"])
            names[n] = names.get(n, 0) + 1
        return names


def child_first_cost(b: Bench):
    """(a): per target call, per warm-up kind, a fresh labkit KernelTrace (GPU kinds only)."""
    from labkit.measure import _cupti
    _emit("untraced", b.untraced())
    warms = ["none", "same", "other_kernel", "other_graph", "memset"]
    targets = ["labkit_eager", "prepared", "graph200"]
    for rep in range(2):
        for target in targets:
            for warm in warms:
                _step(f"first_cost rep{rep} {target} warm={warm}")
                fn = b.calls[target]
                t0 = time.perf_counter_ns()
                with _cupti.KernelTrace(kinds=("kernel", "memcpy", "memset")) as tr:
                    t1 = time.perf_counter_ns()
                    w = None
                    if warm != "none":
                        wf = fn if warm == "same" else b.other[warm]
                        w = round(b.one(wf), 1)
                        b.sync()
                    calls = b.series(fn, 8)
                    t2 = time.perf_counter_ns()
                t3 = time.perf_counter_ns()
                _emit(f"first/{target}/{warm}/rep{rep}", {
                    "enter_us": round((t1 - t0) / 1e3, 1), "warm_us": w, "calls_us": calls,
                    "steady_median_us": _median(calls[3:]),
                    "exit_us": round((t3 - t2) / 1e3, 1), "records": len(tr.records)})
    _emit("untraced_after", b.untraced(50))


def _graph_trace_run(b: Bench, order: str, extra=(), finalize=True):
    raw = Raw()
    m = raw.m
    _emit("untraced", b.untraced())
    kinds = ["GRAPH_TRACE", *extra]
    if order == "lead":
        _step("register callbacks")
        raw.register()
    for k in kinds:
        _step(f"enable {k}")
        try:
            m.activity_enable(raw.kind(k))
        except Exception as exc:
            _emit(f"enable_error/{k}", f"{type(exc).__name__}: {exc}")
            _step(f"enable {k} refused: {exc}")
            if k == "GRAPH_TRACE":
                return raw
    if order == "sample":
        _step("register callbacks")
        raw.register()
    res = {}
    for name, fn in b.calls.items():
        _step(f"calls {name}")
        res[name] = b.series(fn, 10)
    _emit("traced_calls", res)
    _emit("traced_steady_median", {k: _median(v[3:]) for k, v in res.items()})
    _step("flush")
    m.activity_flush_all(1)
    _step(f"flushed: {raw.summary()}")
    _emit("records", raw.summary())
    gt = [r for r in raw.records if r["kind"] == int(raw.kind("GRAPH_TRACE"))]
    if gt:
        durs = [round((r["end"] - r["start"]) / 1e3, 2) for r in gt if "end" in r and "start" in r]
        _emit("graph_records", {"n": len(gt), "gpu_us": durs[:10], "first": gt[0]})
    kern = [r for r in raw.records if r["kind"] == int(raw.kind("CONCURRENT_KERNEL"))]
    if kern:
        _emit("kernel_records", {"n": len(kern),
                                 "with_graph_id": sum(1 for r in kern if r.get("graph_id"))})
    for k in reversed(kinds):
        _step(f"disable {k}")
        m.activity_disable(raw.kind(k))
    if finalize:
        _step("finalize")
        m.finalize()
    _step("untraced after")
    _emit("untraced_after", b.untraced(50))
    return raw


def child_gt_lead_order(b):
    _graph_trace_run(b, "lead")


def child_gt_sample_order(b):
    _graph_trace_run(b, "sample")


def child_gt_no_finalize(b):
    """The lead's probe never called finalize: does the process then die at exit?"""
    _graph_trace_run(b, "lead", finalize=False)


def child_gt_runtime(b):
    _graph_trace_run(b, "lead", extra=("RUNTIME",))


def child_gt_kernel(b):
    _graph_trace_run(b, "lead", extra=("CONCURRENT_KERNEL",))


def _toggle(b: Bench, swap_graph_trace: bool):
    """(c): kernel activity on; off (optionally GRAPH_TRACE on) around each graph launch."""
    raw = Raw()
    m = raw.m
    _emit("untraced", b.untraced())
    K = raw.kind("CONCURRENT_KERNEL")
    G = raw.kind("GRAPH_TRACE")
    raw.register()
    m.activity_enable(K)
    b.one(b.other["other_kernel"])     # warm-up: the first-call cost lands here
    b.sync()
    rows = []
    for i in range(8):
        _step(f"toggle {i}")
        t0 = time.perf_counter_ns()
        m.activity_disable(K)
        if swap_graph_trace:
            m.activity_enable(G)
        t1 = time.perf_counter_ns()
        b.calls["graph200"]()
        t2 = time.perf_counter_ns()
        if swap_graph_trace:
            m.activity_disable(G)
        m.activity_enable(K)
        t3 = time.perf_counter_ns()
        b.sync()
        e = b.one(b.calls["labkit_eager"])   # eager right after re-enable: still cheap?
        b.sync()
        rows.append({"off_us": round((t1 - t0) / 1e3, 2), "launch_us": round((t2 - t1) / 1e3, 2),
                     "on_us": round((t3 - t2) / 1e3, 2), "eager_after_us": round(e, 2)})
    _emit("toggle_rows", rows)
    _emit("toggle_median", {k: _median([r[k] for r in rows[2:]]) for k in rows[0]})
    m.activity_flush_all(1)
    kern = [r for r in raw.records if r["kind"] == int(K)]
    gt = [r for r in raw.records if r["kind"] == int(G)]
    _emit("records", {"kernels": len(kern),
                      "kernels_with_graph_id": sum(1 for r in kern if r.get("graph_id")),
                      "graph_trace": len(gt), "all": raw.summary()})
    if swap_graph_trace:
        m.activity_disable(K)
    else:
        m.activity_disable(K)
    m.finalize()
    _emit("untraced_after", b.untraced(50))


def child_toggle(b):
    _toggle(b, False)


def child_toggle_gt(b):
    _toggle(b, True)


def _size_t_attr(m, name, value=None):
    import ctypes
    attr = m.ActivityAttribute[name]
    v = ctypes.c_size_t(0)
    size = ctypes.c_size_t(ctypes.sizeof(v))
    if value is None:
        m.activity_get_attribute(int(attr), ctypes.addressof(size), ctypes.addressof(v))
        return int(v.value)
    v.value = value
    m.activity_set_attribute(int(attr), ctypes.addressof(size), ctypes.addressof(v))
    return value


def child_prealloc(b):
    """(d): ask CUPTI to pre-allocate device buffers / semaphores, then no warm-up."""
    from labkit.measure import _cupti
    raw = Raw()
    m = raw.m
    _emit("untraced", b.untraced())
    got = {}
    for name in ("ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE",
                 "ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE", "ATTR_DEVICE_BUFFER_SIZE",
                 "ATTR_PROFILING_SEMAPHORE_POOL_SIZE"):
        try:
            got[name] = _size_t_attr(m, name)
        except Exception as exc:
            got[name] = f"get failed: {type(exc).__name__}: {exc}"
    _emit("attrs_default", got)
    for name, value in (("ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE", 4),
                        ("ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE", 100000)):
        try:
            _size_t_attr(m, name, value)
        except Exception as exc:
            _emit(f"set_error/{name}", f"{type(exc).__name__}: {exc}")
    for rep in range(2):
        for target in ("labkit_eager", "prepared", "graph200"):
            _step(f"prealloc rep{rep} {target}")
            t0 = time.perf_counter_ns()
            with _cupti.KernelTrace(kinds=("kernel", "memcpy", "memset")):
                t1 = time.perf_counter_ns()
                calls = b.series(b.calls[target], 6)
            _emit(f"prealloc/{target}/rep{rep}", {"enter_us": round((t1 - t0) / 1e3, 1),
                                                  "calls_us": calls})


def child_hwtrace(b):
    """(d): hardware event system tracing (documented for newer GPUs) instead of software."""
    from labkit.measure import _cupti
    raw = Raw()
    m = raw.m
    _emit("untraced", b.untraced())
    try:
        m.activity_enable_hw_trace(1)
    except Exception as exc:
        _emit("hw_trace_error", f"{type(exc).__name__}: {exc}")
        return
    with _cupti.KernelTrace(kinds=("kernel", "memcpy", "memset")) as tr:
        b.one(b.other["other_kernel"])
        b.sync()
        res = {k: b.series(fn, 8) for k, fn in b.calls.items()}
    _emit("hw_traced_calls", res)
    _emit("hw_traced_steady_median", {k: _median(v[3:]) for k, v in res.items()})
    _emit("records", len(tr.records))


def _offset(m):
    """CUPTI clock minus perf_counter_ns, from the tightest of 20 brackets (ns, bracket ns)."""
    best = None
    for _ in range(20):
        a = time.perf_counter_ns()
        c = int(m.get_timestamp())
        z = time.perf_counter_ns()
        if best is None or z - a < best[1]:
            best = (c - (a + z) // 2, z - a)
    return best


def child_clock(b):
    """Can labkit's own host spans (perf_counter_ns) sit on CUPTI's GPU timeline? The offset
    between the clocks over half a second, and where each eager kernel starts relative to the
    host span of its launch (it must start after the span began)."""
    from labkit.measure import _cupti
    m = _cupti._require()
    offs = []
    with _cupti.KernelTrace(kinds=("kernel", "memcpy", "memset")) as tr:
        b.one(b.other["other_kernel"])
        b.sync()
        offs.append(_offset(m))
        spans = []
        for _ in range(10):
            t0 = time.perf_counter_ns()
            b.calls["labkit_eager"]()
            t1 = time.perf_counter_ns()
            spans.append((t0, t1))
            b.sync()
        time.sleep(0.5)
        offs.append(_offset(m))
    off = offs[0][0]
    kern = sorted(r.start_ns for r in tr.records if r.kind == "kernel")[1:]   # skip the warm-up
    rel = [round((k - off - t0) / 1e3, 2) for k, (t0, _) in zip(kern, spans)]
    _emit("clock", {"offsets_ns": offs, "drift_ns_per_s": (offs[1][0] - offs[0][0]) * 2,
                    "kernel_start_minus_launch_start_us": rel,
                    "launch_span_us": [round((t1 - t0) / 1e3, 2) for t0, t1 in spans]})


def child_main(option: str):
    import faulthandler
    faulthandler.enable()
    os.environ.setdefault("LABKIT_BACKEND", "cuda")
    _step(f"start {option}")
    if os.environ.get("PROBE_DRY"):   # a stand-in cupti on PYTHONPATH, the simulator's labkit
        from labkit.measure import _cupti
        _cupti._synchronize_device = lambda: None
    b = Bench()
    import labkit
    _emit("device", labkit.device_name())
    globals()[f"child_{option}"](b)
    _step("done")
    print("DONE", flush=True)


# ============================================================================ parent side

def run_child(option: str, timeout: float) -> dict:
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", option],
                           capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc = "timeout"
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    res = {"rc": rc, "wall_s": round(time.monotonic() - t0, 1), "done": "DONE" in out}
    for line in out.splitlines():
        if line.startswith("PART "):
            res.update(json.loads(line[5:]))
    steps = [l[5:] for l in err.splitlines() if l.startswith("STEP ")]
    res["last_step"] = steps[-1] if steps else None
    if not res["done"]:
        res["stderr_tail"] = err[-3000:]
    return res


def _fmt(v):
    return json.dumps(v, separators=(",", ":"))[:160]


def table(results: dict) -> str:
    lines = []
    for opt, r in results.items():
        lines.append(f"== {opt}: rc={r.get('rc')} done={r.get('done')} {r.get('wall_s')}s "
                     f"last_step={r.get('last_step')!r}")
        base = r.get("untraced", {})
        if base:
            lines.append(f"   untraced µs: {_fmt(base)}")
        for k, v in r.items():
            if k in ("rc", "done", "wall_s", "last_step", "untraced", "stderr_tail", "device"):
                continue
            if k.startswith("first/"):
                _, target, warm, rep = k.split("/")
                lines.append(f"   {target:13s} warm={warm:12s} {rep}: enter {v['enter_us']:>8} "
                             f"warm {v['warm_us']!s:>7}  calls {v['calls_us'][:4]} steady "
                             f"{v['steady_median_us']} (untraced {base.get(target)})")
            else:
                lines.append(f"   {k}: {_fmt(v)}")
        if r.get("stderr_tail"):
            tail = r["stderr_tail"].strip().splitlines()[-8:]
            lines += ["   | " + l for l in tail]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child")
    ap.add_argument("--out", default="trace_honesty_probe.json")
    ap.add_argument("--only", nargs="*", help="run only these options")
    a = ap.parse_args()
    if a.child:
        child_main(a.child)
        return
    start = time.monotonic()
    results = {}
    for opt in a.only or OPTIONS:
        left = BUDGET_S - (time.monotonic() - start)
        if left < 8:
            results[opt] = {"rc": "skipped", "why": "probe budget spent"}
            continue
        results[opt] = run_child(opt, min(CHILD_TIMEOUT_S, left))
        print(f"-- {opt}: rc={results[opt]['rc']} in {results[opt]['wall_s']}s", flush=True)
    text = table(results)
    print(text)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.splitext(a.out)[0] + ".txt", "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
