"""The capstone decoder every way the course runs it (``python -m labkit bench --decode``).

Rows: eager launches, one graph per token (a sync each), the same graph launched back to back
(one sync at the end: the GPU-bound limit, which cannot stop at end-of-sequence), ``K`` steps
per launch with the host checking for EOS after each launch (`device_loop.k_per_launch`), the
whole generation as one WHILE graph (`labkit.course.device_loop`) that stops at the EOS token,
and the same loop streaming each token to mapped host memory as it is made
(`device_loop.StreamingLoop`). Every decoder's tokens are compared with numpy's. ``--host-load`` repeats the rows while busy loops keep most of
the host's cores busy; the load stops by itself after a deadline. (On the simulator the load
cannot slow the virtual clock: the loaded rows equal the others there.)

The generation is long (about 185 tokens of a 256-position model: ``tokens`` in the output says
how many), as a served answer is: the device loop's host CPU is one launch and one sleeping wait
per generation, so its CPU per token is that fixed cost over the tokens. Host CPU per token is
this process's CPU time (every thread) over the whole generation, launches and waits included,
for every row: eager and one graph per token spin in a synchronize after each token, back to
back spins once at the end.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import time

import numpy as np

import labkit
from labkit.course import decoder as dec, device_loop as dl

MAX_SEQ = 256       # the bench's model: positions (the KV cache's length)
N_TOKENS = 192      # about how many tokens a generation makes (the EOS is picked to stop there)
PROMPT = 1
K = 4               # steps per launch of the middle way


def _spin(deadline: float):
    while time.monotonic() < deadline:
        pass


class HostLoad:
    """Busy loops on all cores but one, each ending by itself at ``seconds`` from now."""

    def __init__(self, seconds: float = 120.0, procs: int | None = None):
        self.n = procs or max(1, (os.cpu_count() or 2) - 1)
        self.deadline = time.monotonic() + seconds
        # fork: the children only spin in Python and never touch CUDA (a spawned child would
        # import labkit, and with it open a CUDA context of its own)
        ctx = mp.get_context("fork")
        self.procs = [ctx.Process(target=_spin, args=(self.deadline,), daemon=True)
                      for _ in range(self.n)]

    def __enter__(self):
        for p in self.procs:
            p.start()
        time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.terminate()
            p.join(5)


def _back_to_back(m, ex, stream, n) -> tuple[float, float]:
    """(tokens/s, host CPU µs per token) of ``n`` replays launched back to back, one sync."""
    dec.reset(m, PROMPT, stream)
    t0, c0 = labkit.host_us(), labkit.cpu_us()
    for _ in range(n):
        ex.launch(stream)
    stream.synchronize()
    wall, cpu = labkit.host_us() - t0, labkit.cpu_us() - c0
    return 1e6 * n / wall, cpu / n


def measure(repeat: int = 5, m=None, stream=None, n_tokens: int = N_TOKENS) -> dict:
    """The decode bench's figures (medians over ``repeat`` interleaved rounds).

    ``m``: the model (by default seed 0 with `MAX_SEQ` positions); a generation makes about
    ``n_tokens`` tokens (at most the model's ``max_seq``): the EOS token is numpy's token there.
    """
    m = m or dec.make_model(seed=0, max_seq=MAX_SEQ)
    s = stream or labkit.Stream()
    ref = dec.reference_generate(m, PROMPT, m.cfg.max_seq)
    eos, n = dl.eos_for(ref, min(n_tokens, m.cfg.max_seq))
    want = ref[:n]
    step_ex = dec.capture_step(m, s)
    loop = dl.build(m, s)
    streaming = dl.StreamingLoop(m, s)
    k_ex = dl.capture_steps(m, s, K)
    rows = {k: [] for k in ("eager", "graph", "b2b", "loop", "loop_cpu", "eager_cpu", "graph_cpu",
                            "b2b_cpu", "graph_p99", "loop_us", "loop_launch_cpu", "loop_wait_cpu",
                            "stream", "stream_cpu", "stream_ttft", "stream_p50", "stream_p99",
                            "graph_ttft", "graph_p50", "k", "k_cpu", "k_p50", "k_p99", "k_wasted")}
    match = True
    stopped = True
    for _ in range(repeat):
        c0 = labkit.cpu_us()
        e = dec.generate_eager(m, PROMPT, n, s)
        rows["eager_cpu"].append((labkit.cpu_us() - c0) / n)
        c0 = labkit.cpu_us()
        g = dec.generate_graph(m, PROMPT, n, s, exec_=step_ex)
        rows["graph_cpu"].append((labkit.cpu_us() - c0) / n)
        b2b, b2b_cpu = _back_to_back(m, step_ex, s, n)
        rows["b2b"].append(b2b)
        rows["b2b_cpu"].append(b2b_cpu)
        st = streaming.run(PROMPT, m.cfg.max_seq, eos)
        rows["stream"].append(st.tokens_per_s)
        rows["stream_cpu"].append(st.cpu_us / max(len(st.tokens), 1))
        rows["stream_ttft"].append(st.ttft_us)
        rows["stream_p50"].append(float(np.percentile(st.inter_token_us, 50)))
        rows["stream_p99"].append(float(np.percentile(st.inter_token_us, 99)))
        rows["graph_ttft"].append(g.ttft_us)
        rows["graph_p50"].append(float(np.percentile(g.inter_token_us, 50)))
        kr = dl.k_per_launch(m, k_ex, K, PROMPT, m.cfg.max_seq, s, eos)
        rows["k"].append(kr.tokens_per_s)
        rows["k_cpu"].append(kr.cpu_us / max(len(kr.tokens), 1))
        rows["k_p50"].append(float(np.percentile(kr.inter_token_us, 50)))
        rows["k_p99"].append(float(np.percentile(kr.inter_token_us, 99)))
        rows["k_wasted"].append(kr.wasted)
        r = loop.run(PROMPT, m.cfg.max_seq, eos)
        rows["loop_launch_cpu"].append(r.launch_cpu_us)
        rows["loop_wait_cpu"].append(r.cpu_us - r.launch_cpu_us)
        rows["eager"].append(e.tokens_per_s)
        rows["graph"].append(g.tokens_per_s)
        rows["graph_p99"].append(float(np.percentile(g.token_us, 99)))
        rows["loop"].append(r.tokens_per_s)
        rows["loop_us"].append(r.us_per_token)
        rows["loop_cpu"].append(r.cpu_us_per_token)
        match &= bool(np.array_equal(e.tokens, want) and np.array_equal(g.tokens, want)
                      and np.array_equal(r.tokens, want) and np.array_equal(st.tokens, want)
                      and np.array_equal(kr.tokens, want))
        stopped &= (r.stopped_at_eos and len(r.tokens) == n and st.stopped_at_eos
                    and kr.stopped_at_eos)
    med = {k: float(np.median(v)) for k, v in rows.items()}
    loop.close()
    streaming.close()
    step_ex.close()
    k_ex.close()
    return {
        "backend": labkit.backend, "device": labkit.device_name(),
        "eager_tokens_per_s": med["eager"],
        "graph_tokens_per_s": med["graph"],
        "graph_back_to_back_tokens_per_s": med["b2b"],
        "device_loop_tokens_per_s": med["loop"],
        "device_loop_host_cpu_us_per_token": med["loop_cpu"],
        "eager_host_cpu_us_per_token": med["eager_cpu"],
        "graph_host_cpu_us_per_token": med["graph_cpu"],
        "graph_back_to_back_host_cpu_us_per_token": med["b2b_cpu"],
        "device_loop_launch_cpu_us": med["loop_launch_cpu"],
        "device_loop_wait_cpu_us": med["loop_wait_cpu"],
        "graph_p99_token_us": med["graph_p99"],
        "device_loop_us_per_token": med["loop_us"],
        "device_loop_vs_back_to_back": med["loop"] / med["b2b"],
        "device_loop_vs_graph": med["loop"] / med["graph"],
        "graph_ttft_us": med["graph_ttft"],
        "graph_inter_token_us_p50": med["graph_p50"],
        "device_loop_streaming_tokens_per_s": med["stream"],
        "device_loop_streaming_ttft_us": med["stream_ttft"],
        "device_loop_streaming_inter_token_us_p50": med["stream_p50"],
        "device_loop_streaming_inter_token_us_p99": med["stream_p99"],
        "device_loop_streaming_host_cpu_us_per_token": med["stream_cpu"],
        "k_per_launch": K,
        "k_per_launch_tokens_per_s": med["k"],
        "k_per_launch_host_cpu_us_per_token": med["k_cpu"],
        "k_per_launch_inter_token_us_p50": med["k_p50"],
        "k_per_launch_inter_token_us_p99": med["k_p99"],
        "k_per_launch_wasted_steps": med["k_wasted"],
        "device_loop_stopped_at_eos": stopped,
        "eos": eos, "tokens": n, "tokens_match": match,
        "kernels_per_token": m.cfg.kernels_per_token, "max_seq": m.cfg.max_seq,
    }


def by_step_size(layers=(1, 2, 4), repeat: int = 5, n_tokens: int = N_TOKENS,
                 max_seq: int = MAX_SEQ, measured: dict | None = None) -> list[dict]:
    """Where the device loop pays: one graph per token (a sync each), back to back and the
    device loop for models of ``layers`` layers (``15 * layers + 5`` kernels per step).

    A smaller step leaves the same host round trip per token to one graph per token (its
    launch, the wait and the wake-up) and the same WHILE iteration to the device loop, so the
    loop's gain grows as the step shrinks. Each generation makes ``n_tokens`` tokens (the loop
    stops at that limit, on the device). Medians over ``repeat`` interleaved rounds; each row's
    tokens are checked against numpy's.

    ``measured``: a `measure` result of the same size (``max_seq`` positions, ``n_tokens``
    tokens, seed 0); the row of its layer count is taken from it, not measured again, so one
    configuration shows one figure wherever it appears.
    """
    s = labkit.Stream()
    out = []
    for n_layers in layers:
        m = dec.make_model(seed=0, max_seq=max_seq, n_layers=n_layers)
        if measured is not None and (measured["kernels_per_token"], measured["tokens"],
                                     measured["max_seq"]) == (m.cfg.kernels_per_token,
                                                              min(n_tokens, max_seq), max_seq):
            out.append(_row(n_layers, measured))
            continue
        # the loop stops at the token limit: a one-layer model soon repeats one token, so an
        # end-of-sequence token would stop its generations after a handful of tokens
        n = min(n_tokens, m.cfg.max_seq)
        ref = dec.reference_generate(m, PROMPT, n)
        step_ex, loop = dec.capture_step(m, s), dl.build(m, s)
        rows = {"graph": [], "b2b": [], "loop": []}
        match = True
        for _ in range(repeat):
            g = dec.generate_graph(m, PROMPT, n, s, exec_=step_ex)
            rows["graph"].append(g.tokens_per_s)
            rows["b2b"].append(_back_to_back(m, step_ex, s, n)[0])
            r = loop.run(PROMPT, n)
            rows["loop"].append(r.tokens_per_s)
            match &= bool(np.array_equal(g.tokens, ref) and np.array_equal(r.tokens, ref))
        loop.close()
        step_ex.close()
        med = {k: float(np.median(v)) for k, v in rows.items()}
        out.append(_row(n_layers, {
            "kernels_per_token": m.cfg.kernels_per_token, "tokens": n,
            "graph_tokens_per_s": med["graph"], "graph_back_to_back_tokens_per_s": med["b2b"],
            "device_loop_tokens_per_s": med["loop"], "tokens_match": match}))
    return out


def _row(n_layers: int, r: dict) -> dict:
    """One row of `by_step_size` from a measurement's figures (its own, or `measure`'s)."""
    return {"layers": n_layers, "kernels_per_token": r["kernels_per_token"],
            "tokens": r["tokens"], "graph_tokens_per_s": r["graph_tokens_per_s"],
            "graph_back_to_back_tokens_per_s": r["graph_back_to_back_tokens_per_s"],
            "device_loop_tokens_per_s": r["device_loop_tokens_per_s"],
            "device_loop_vs_graph": r["device_loop_tokens_per_s"] / r["graph_tokens_per_s"],
            "device_loop_vs_back_to_back": (r["device_loop_tokens_per_s"]
                                            / r["graph_back_to_back_tokens_per_s"]),
            "tokens_match": r["tokens_match"]}
