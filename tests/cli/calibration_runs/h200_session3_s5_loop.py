"""Session-3 probe (issue 19): where the device loop's per-token cost goes.

GPU time (CUDA timing events) and wall time per token of: back to back replays, the device loop
(labkit's, one step per WHILE iteration) and unrolled loops (K steps per iteration, later copies
no-ops for the stop test once done), plus one graph per token. Interleaved rounds, medians."""
import json, statistics as st, sys, time
import numpy as np
import labkit
from numba import cuda
from labkit import rt
from labkit._errors import check
from labkit._handles import stream_handle
from labkit.course import decoder as dec, device_loop as dl
from labkit.course.decoder.generate import _warm
from labkit.conditional import conditional_graph, set_condition

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
s = labkit.Stream(); h = stream_handle(s)
m = dec.make_model(seed=0, max_seq=256)
ref = dec.reference_generate(m, 1, 256)
eos, n = dl.eos_for(ref, 185)
want = ref[:n]
print("eos", eos, "tokens", n, flush=True)


@labkit.kernel
def advance_or_stop_guarded(ctl, tok, pos, done, hh):
    if cuda.grid(1) == 0:
        if done[0] != 0:          # stopped earlier in this iteration: leave pos alone
            set_condition(hh, 0)
            return
        p = pos[0] + 1
        pos[0] = p
        if tok[0] == ctl[0] or p >= ctl[1]:
            done[0] = 2 if tok[0] == ctl[0] else 1
            set_condition(hh, 0)


class Unrolled(dl.DeviceLoop):
    def __init__(self, m, stream, K):
        self.m, self.stream = m, stream
        st_ = m.state
        self.ctl = labkit.to_device(np.array([-1, m.cfg.max_seq, 0], np.int32))
        self.done = labkit.to_device(np.zeros(1, np.int32))
        _warm(m, stream)
        g = conditional_graph()
        with g.capture(stream) as head:
            dl.start[1, 1, stream](self.ctl, st_["tok"], st_["pos"], self.done)
        cond = g.condition(default=1)
        body = g.while_loop(cond, deps=head.nodes)
        with body.capture(stream):
            for _ in range(K):
                dec.step_to_token(m, stream)
                advance_or_stop_guarded[1, 1, stream](self.ctl, st_["tok"], st_["pos"], self.done, cond.arg)
        self.graph, self.condition, self.body = g, cond, body
        self.exec = g.instantiate()
        self._h = stream_handle(stream)
        flags = rt.cudaEventBlockingSync | rt.cudaEventDisableTiming
        self._ev = check(rt.cudaEventCreateWithFlags(flags), "ev")
        self._params = None
        self.run(0, 1)


e0 = check(rt.cudaEventCreate(), "e0"); e1 = check(rt.cudaEventCreate(), "e1")


def gpu_ms():
    return check(rt.cudaEventElapsedTime(e0, e1), "elapsed")


step_ex = dec.capture_step(m, s)
loops = {1: dl.build(m, s), 2: Unrolled(m, s, 2), 4: Unrolled(m, s, 4)}
rows = {k: [] for k in ["graph_wall", "b2b_wall", "b2b_gpu"] + [f"loop{K}_{w}" for K in loops for w in ("wall", "gpu", "spinwall")]}
ok = True
for r in range(ROUNDS):
    g = dec.generate_graph(m, 1, n, s, exec_=step_ex)
    rows["graph_wall"].append(1e6 / g.tokens_per_s); ok &= bool(np.array_equal(g.tokens, want))
    dec._reset(m, 1, s)
    t0 = time.perf_counter_ns()
    check(rt.cudaEventRecord(e0, h), "rec")
    for _ in range(n):
        step_ex.launch(s)
    check(rt.cudaEventRecord(e1, h), "rec")
    s.synchronize()
    rows["b2b_wall"].append((time.perf_counter_ns() - t0) / 1e3 / n)
    rows["b2b_gpu"].append(1e3 * gpu_ms() / n)
    for K, lp in loops.items():
        res = lp.run(1, 253, eos)
        ok &= bool(np.array_equal(res.tokens, want)) and res.stopped_at_eos
        rows[f"loop{K}_wall"].append(res.us_per_token)
        # GPU time of the same generation, and its wall with a spinning wait
        lp.set(1, 253, eos)
        t0 = time.perf_counter_ns()
        check(rt.cudaEventRecord(e0, h), "rec")
        lp.exec.launch(s)
        check(rt.cudaEventRecord(e1, h), "rec")
        s.synchronize()
        rows[f"loop{K}_spinwall"].append((time.perf_counter_ns() - t0) / 1e3 / n)
        rows[f"loop{K}_gpu"].append(1e3 * gpu_ms() / n)
        npos = int(m.state["pos"].copy_to_host()[0]); ok &= npos == n
med = {k: st.median(v) for k, v in rows.items()}
out = {"tokens": n, "tokens_ok": ok, "us_per_token": med,
       "tokens_per_s": {k: 1e6 / v for k, v in med.items()},
       "loop_vs_graph": {K: med["graph_wall"] / med[f"loop{K}_wall"] for K in loops},
       "loop_vs_b2b": {K: med["b2b_wall"] / med[f"loop{K}_wall"] for K in loops},
       "W_gpu_us": {K: med[f"loop{K}_gpu"] - med["b2b_gpu"] for K in loops}}
print(json.dumps(out, indent=1), flush=True)
