"""What the capstone's step would cost at a real model's size: a model, not a measurement.

The same decode step (`labkit.course.decoder.launches`, kernel for kernel) is priced with the
simulator's own cost model, for shapes no simulator could hold:

* a kernel's GPU time is the decoder kernel's measured floor (``decode_kernel_us``) plus the
  bytes of its array arguments at the GPU's memory bandwidth (``device_GBps``): what
  `labkit.course.decoder.kernels._step_cost` charges on the simulator. At a 7B-class size the
  weights dominate: batch-1 decoding reads every weight once per token;
* a kernel's host launch is numba's (``numba_launch_us``, plus ``numba_launch_per_array_us``
  for each array argument past the first, as the simulator charges it), or one figure per
  kernel for the other launch paths (a C++ ``<<<>>>`` launch and PyTorch's eager dispatch,
  from notebook 07's reference data);
* eager launches overlap the GPU's work, so an eager token takes the longer of the host's
  launches and the GPU's kernels; a graph token takes one graph launch and the GPU's kernels.
  Both sides pay the same gap between one kernel and the next on the GPU, the one measured
  between graph nodes (``graph_node_gap_us``): the calibration measures no eager gap, and a
  model that charged the graph a gap and eager launches none would favour eager launches.

What the model leaves out is where the published gains at real size come from: the larger
GPU-side gap an eagerly launched kernel leaves before the next, the host's own per-token work,
and (in a framework's figure) what its compiler fuses while it captures.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._calibration import params
from .. import reference as _reference_data
from .model import Config, launches

__all__ = ["SEVEN_B", "Shape", "step_bytes", "price", "table", "published_gain"]

# A 7B-class decoder in the capstone's shape: 32 layers of d_model 4096 (Llama-2-7B's), a
# 32,000-token vocabulary, and d_ff 16,384 so that the capstone's two MLP matrices hold what a
# SwiGLU MLP's three (11,008 wide) do: 6.7 billion parameters in all. A 512-position KV cache.
SEVEN_B = Config(d_model=4096, n_heads=32, d_ff=16384, vocab=32000, n_layers=32, max_seq=512)


class Shape:
    """An array's shape and size, no memory: what the cost model reads of an argument."""

    def __init__(self, shape, itemsize):
        self.shape = tuple(np.atleast_1d(shape).tolist())
        self.nbytes = int(np.prod(self.shape)) * int(itemsize)


def _arrays(c: Config, itemsize: int):
    D, F, V, S, H = c.d_model, c.d_ff, c.vocab, c.max_seq, c.n_heads
    w = lambda *sh: Shape(sh, itemsize)           # noqa: E731 - weights and activations
    i4 = lambda *sh: Shape(sh, 4)                 # noqa: E731 - token ids and positions
    d = {"E": w(V, D), "Pe": w(S, D), "norm_f": w(D), "W_out": w(V, D),
         "layers": [{"norm1": w(D), "Wq": w(D, D), "Wk": w(D, D), "Wv": w(D, D), "Wo": w(D, D),
                     "norm2": w(D), "Wup": w(F, D), "Wdown": w(D, F)} for _ in range(c.n_layers)]}
    s = {k: w(D) for k in ("x", "h", "q", "k", "v", "att", "o")}
    s.update(u=w(F), scores=w(H, S), probs=w(H, S), logits=w(V), tok=i4(1), pos=i4(1),
             history=i4(S), kc=[w(S, D) for _ in range(c.n_layers)],
             vc=[w(S, D) for _ in range(c.n_layers)])
    return d, s


def step_bytes(c: Config, itemsize: int) -> list[tuple[str, int, int]]:
    """``(kernel, array arguments, bytes)`` for each kernel of one step (``advance`` last)."""
    d, s = _arrays(c, itemsize)
    rows = [(k.name, sum(isinstance(a, Shape) for a in args),
             sum(a.nbytes for a in args if isinstance(a, Shape)))
            for k, _, _, args in launches(c, d, s)]
    return rows + [("advance", 1, 4)]


@dataclass
class Priced:
    """One size, priced: the step's ``kernels``, ``gb`` read and written per token, the GPU's
    ``gpu_us`` per token (its kernels and the gaps between them), per launch path the host's launch time per token (``host_us``) and
    the modelled ``speedup`` of a graph over eager launches, and the graph's own launch
    (``graph_launch_us``, one ``cudaGraphLaunch`` of the step)."""
    label: str
    kernels: int
    gb: float
    gpu_us: float
    host_us: dict
    speedup: dict
    graph_launch_us: float = 0.0


def price(c: Config, itemsize: int, label: str, P=None) -> Priced:
    """Price one decode step of ``c`` with ``itemsize``-byte weights (see the module's text)."""
    P = P or {k: v for k, v in params().items()}
    ref = {r["label"]: r["value"] for r in _reference_data.load("07")["figures"]}
    rows = step_bytes(c, itemsize)
    bw = P["device_GBps"] * 1e3                       # bytes per µs
    n = len(rows)
    # each kernel's floor and bytes, and the gap before the next: the same on both sides
    gpu = sum(P["decode_kernel_us"] + b / bw for _, _, b in rows) + n * P["graph_node_gap_us"]
    host = {"numba": sum(P["numba_launch_us"] + P["numba_launch_per_array_us"] * max(a - 1, 0)
                         for _, a, _ in rows),
            "C++": n * ref["C++ <<<>>> launch, per kernel"],
            "PyTorch": n * ref["PyTorch eager op, per kernel"]}
    launch = P["graph_launch_base_us"] + P["graph_launch_per_node_us"] * n
    graph = launch + P["launch_latency_us"] + gpu
    speed = {k: (max(h, gpu) + P["launch_latency_us"]) / graph for k, h in host.items()}
    return Priced(label, n, sum(b for _, _, b in rows) / 1e9, gpu, host, speed, launch)


def table(sizes=None) -> list[Priced]:
    """The capstone's own model (float64) and a 7B-class one (bf16), priced."""
    sizes = sizes or [(Config(), 8, "capstone (d_model 64, float64)"),
                      (SEVEN_B, 2, "7B-class (d_model 4096, bf16)")]
    return [price(c, b, label) for c, b, label in sizes]


#: notebook 07's reference row with llama.cpp's published gain from CUDA graphs
LLAMA_CPP_GAIN = "llama.cpp with CUDA graphs, published gain (7B, batch 1)"


def published_gain() -> tuple[float, float]:
    """llama.cpp's published gain from CUDA graphs, ``(low, high)``, as notebook 07's reference
    data gives it (one place, so a figure's band and the note cannot disagree)."""
    text = str(_reference_data.figure("07", LLAMA_CPP_GAIN)).rstrip("×")
    lo, hi = (float(v) for v in text.split("–"))
    return lo, hi
