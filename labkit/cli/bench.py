"""``python -m labkit bench``: the chain benchmark (add one to 1024 float32, grid 4 × 256, K launches).

Prints a table, or with ``--json`` a last line holding one JSON object. The measuring is
`labkit.toolbox.chain`'s (``--wrapper``: labkit's share beside the raw calls), `labkit.toolbox.probes`'
(``--pdl``: what a programmatic edge saves; ``--capture-share``: labkit's share of a one-kernel
capture) and `labkit.course.decode_bench`'s (``--decode``); this module parses and prints.
"""
from __future__ import annotations

import argparse
import json

import labkit
from labkit.backends import is_gpu
from labkit.toolbox import probes
from labkit.toolbox.chain import BLOCK, GRID, N, measure_chain, reference_rows, wrapper_overhead


def at_least_one(text: str) -> int:
    """argparse type for a count: a whole number of 1 or more, else a usage error saying so."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        # 0 repeats would leave nothing to take a median of; 0 kernels, nothing to launch.
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def decode_main(args) -> int:
    """``--decode``: `labkit.course.decode_bench`'s rows, printed (``--json``: one JSON line)."""
    from labkit.course import decode_bench
    repeat = max(3, min(args.repeat, 7))
    res = decode_bench.measure(repeat=repeat)
    if args.host_load:
        with decode_bench.HostLoad() as load:
            loaded = decode_bench.measure(repeat=repeat)
        res["host_load_procs"] = load.n
        for k in ("eager_tokens_per_s", "graph_tokens_per_s", "graph_back_to_back_tokens_per_s",
                  "device_loop_tokens_per_s", "device_loop_host_cpu_us_per_token", "tokens_match"):
            res[f"loaded_{k}"] = loaded[k]
        res["device_loop_loaded_ratio"] = (loaded["device_loop_tokens_per_s"]
                                           / res["device_loop_tokens_per_s"])
    if getattr(args, "by_layers", None):
        res["by_layers"] = decode_bench.by_step_size(tuple(args.by_layers), repeat=repeat)
    print(f"decode bench: {res['tokens']} tokens per generation (EOS {res['eos']}), "
          f"{labkit.provenance()}")
    for k, v in res.items():
        if isinstance(v, float):
            print(f"  {k:44s} {v:12.2f}")
    print(f"  tokens_match {res['tokens_match']}, every loop stopped at EOS "
          f"{res['device_loop_stopped_at_eos']}")
    for row in res.get("by_layers", []):
        print(f"  {row['layers']} layers ({row['kernels_per_token']} kernels): graph per token "
              f"{row['graph_tokens_per_s']:8.0f}, back to back {row['graph_back_to_back_tokens_per_s']:8.0f}, "
              f"device loop {row['device_loop_tokens_per_s']:8.0f} tokens/s "
              f"({row['device_loop_vs_graph']:.3f}x graph per token), tokens match {row['tokens_match']}")
    if args.json:
        print(json.dumps(res))
    return 0


def probes_main(args, argv: list[str]) -> int:
    """``--pdl`` / ``--capture-share``: `labkit.toolbox.probes`' figures, printed."""
    res = {}
    if args.pdl:
        kernels = args.kernels if "--kernels" in argv else 32
        repeat = args.repeat if "--repeat" in argv else 200
        for name, busy_iters in (("pdl", 0), ("pdl_busy", 2000)):
            r = res[name] = probes.pdl_saving(kernels, repeat, busy_iters)
            print(f"PDL: {kernels} x {r['kernel']}, {repeat} launches each, {labkit.provenance()}")
            for k in ("plain_us", "programmatic_us"):
                q = r[k]
                print(f"  {k[:-3]:>13}: p50 {q['p50']:9.2f} us  (p10 {q['p10']:.2f}, "
                      f"p90 {q['p90']:.2f})")
            print(f"  saving per edge: {r['saving_per_edge_us']:.3f} us")
    if args.capture_share:
        r = res["capture_share"] = probes.capture_share()
        print(f"one-kernel capture, {r['rounds']} rounds x {r['repeat']}, {labkit.provenance()}")
        for k, v in r["median_us"].items():
            rounds = ", ".join(f"{t:.1f}" for t in r["per_round_us"][k])
            print(f"  {k:>19}: {v:7.2f} us   (rounds: {rounds})")
        print(f"  labkit's share (labkit - bare): {r['labkit_share_us']:.2f} us")
    if args.json:
        print(json.dumps(res))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m labkit bench", description=__doc__)
    ap.add_argument("--kernels", type=at_least_one, default=200,
                    help="kernels in the chain, 1 or more (default 200)")
    ap.add_argument("--repeat", type=at_least_one, default=20,
                    help="measurements per figure, 1 or more (default 20)")
    ap.add_argument("--json", action="store_true", help="end with one line of JSON")
    ap.add_argument("--wrapper", action="store_true",
                    help="also compare GraphExec.launch with a raw cudaGraphLaunch")
    ap.add_argument("--decode", action="store_true",
                    help="the capstone decoder every way the course runs it (labkit.course.decode_bench)")
    ap.add_argument("--host-load", action="store_true", help="with --decode: repeat under a host load")
    ap.add_argument("--by-layers", type=int, nargs="+", metavar="N",
                    help="with --decode: also graph per token against the device loop for "
                         "models of N layers (smaller steps), e.g. --by-layers 1 2 4")
    ap.add_argument("--pdl", action="store_true",
                    help="what a programmatic edge (PDL) saves per edge in a chain of --kernels "
                         "(default here 32) graph kernels (labkit.toolbox.probes.pdl_saving)")
    ap.add_argument("--capture-share", action="store_true",
                    help="labkit's share of a one-kernel capture beside the bare calls "
                         "(labkit.toolbox.probes.capture_share)")
    a = ap.parse_args(argv)
    if a.decode:
        return decode_main(a)
    if a.pdl or a.capture_share:
        return probes_main(a, argv or [])
    res = measure_chain(a.kernels, a.repeat)
    print(f"chain benchmark: {a.kernels} × add_one over {N} float32 (grid {GRID} × {BLOCK}), "
          f"{labkit.provenance()}")
    for key, v in res.items():
        if isinstance(v, float):
            print(f"  {key:22s} {v:12.2f}")
    if is_gpu:
        for name, v in reference_rows(a.kernels, a.repeat):
            print(f"  {name + ' µs/kernel':22s} {v:12.2f}")
    if a.wrapper:
        w = res["wrapper"] = wrapper_overhead(a.kernels)
        print("labkit beside the raw calls (host µs per call, interleaved rounds):")
        for what, lab, raw, ratio in (
                ("GraphExec.launch vs cudaGraphLaunch", "wrapper_launch_us", "raw_launch_us", "ratio"),
                ("KernelNode update vs cuGraphExecKernelNodeSetParams", "node_update_us",
                 "raw_node_update_us", "node_update_ratio"),
                ("@labkit.kernel launch vs numba k[grid, block, stream]", "kernel_launch_us",
                 "bare_kernel_launch_us", "kernel_launch_ratio")):
            print(f"  {what:56s} {w[lab]:8.2f} vs {w[raw]:8.2f}: {w[ratio]:.3f}×")
    if a.json:
        print(json.dumps(res))
    return 0
