"""Notebook 10's helpers: the capstone's decode step piecewise, and the GPU-only comparison rows.

* `step_launches` lists one decode step's launches (kernel, grid, block, arguments): the
  decoder's own `launches`, then ``advance``, the order `labkit.course.decoder.step` makes them.
* `PiecewiseStep` runs that step as vLLM's PIECEWISE mode does: the attention kernels
  (scores, softmax, weighted sum) launched eagerly, every run of kernels between them replayed
  as a captured graph. `generate_piecewise` decodes with it, like the decoder's
  ``generate_eager`` / ``generate_graph``.
* `mlp_block` is a small function of device arrays for `labkit.graphed`; `mlp_eager_call` is
  a graphed call's work without the graph, to time against it.
* `torch_compile_generate` and `cupy_capture_generate`: the same step through
  ``torch.compile(mode="reduce-overhead")`` and CuPy's stream capture; only on backend "cuda"
  with those packages installed (they raise otherwise, saying so).
* `torch_compile_capture_check`: did ``reduce-overhead`` capture? Inductor's skip counter and
  its "skipping cudagraphs" messages for a function it graphs and two it cannot (GPU only).
* A step with a data-dependent decision, three ways (`HostDecision`): the host reads a value and
  branches (a sync each step; cannot be captured), the step split into graphs around that
  decision, and the decision kept on the device (one graph, no sync).
* `sources` / `sources_note`: the framework files the course read, at the commits read
  (``reference/frameworks.json``).
"""
from __future__ import annotations

import json
import math
import time
from importlib import resources

import numpy as np
from numba import cuda

from .. import _nvtx
from ..backends import is_gpu, name as _backend_name
from .._errors import check
from .._handles import stream_handle
from ..backends import rt
from ..backends import host_us
from .._capture import capture
from .._kernel import device_array, kernel
from .decoder import step as dec_step
from .decoder import (TPB, DecodeResult, advance, attn_out, attn_scores, generated, launches,
                      matvec, prefill, prompt_tokens, rmsnorm, silu, softmax)
from .decoder.kernels import EPS

__all__ = ["ATTENTION", "step_launches", "PiecewiseStep", "generate_piecewise",
           "mlp_block", "mlp_eager_call", "mlp_reference", "NVTX_PHASES", "nvtx_range_us",
           "torch_compile_generate", "cupy_capture_generate", "torch_compile_capture_check",
           "flag_above", "halve_or_add", "HostDecision", "sources", "sources_note", "reports",
           "reports_note"]

NVTX_PHASES = tuple(_nvtx.PHASES)       # labkit's NVTX ranges, in the domain _nvtx.DOMAIN


def nvtx_range_us(n: int = 20000) -> float:
    """Real (not simulated) µs of one labkit NVTX range, push and pop, timed over ``n``."""
    t0 = time.perf_counter()
    for _ in range(n):
        _nvtx.push("launch")
        _nvtx.pop()
    return (time.perf_counter() - t0) / n * 1e6

ATTENTION = (attn_scores, softmax, attn_out)   # the kernels a PIECEWISE engine runs eagerly


def _blocks(n: int) -> int:
    return (n + TPB - 1) // TPB


def step_launches(m) -> list[tuple]:
    """One decode step's launches ``(kernel, grid, block, args)``, in `decoder.step`'s order:
    the decoder's own `launches` (the step up to the token), then ``advance``."""
    return list(launches(m.cfg, m.dev, m.state)) + [(advance, 1, 1, (m.state["pos"],))]


def _launch(launch_list, stream) -> None:
    for kern, grid, block, args in launch_list:
        kern[grid, block, stream](*args)


class PiecewiseStep:
    """One decode step as graph pieces with eager launches between them.

    Consecutive launches of kernels not in ``eager`` are captured into one graph each (a
    *piece*); the kernels in ``eager`` are launched one by one between the pieces. With the
    decoder's 4 layers and attention eager: 5 pieces and 12 eager kernels per token.
    """

    def __init__(self, m, stream, eager=ATTENTION):
        self.segments: list[tuple[str, object]] = []
        run: list = []
        for launch in step_launches(m):
            if launch[0] in eager:
                if run:
                    self.segments.append(("graph", run))
                    run = []
                if self.segments and self.segments[-1][0] == "eager":
                    self.segments[-1][1].append(launch)
                else:
                    self.segments.append(("eager", [launch]))
            else:
                run.append(launch)
        if run:
            self.segments.append(("graph", run))
        _launch(step_launches(m), stream)      # warm-up: every kernel compiled and loaded
        stream.synchronize()
        execs = []
        for kind, group in self.segments:
            if kind == "graph":
                with capture(stream) as cap:
                    _launch(group, stream)
                ex = cap.graph.instantiate()
                ex.upload(stream)
                execs.append((kind, ex))
            else:
                execs.append((kind, group))
        stream.synchronize()
        self._run = execs

    @property
    def pieces(self) -> int:
        """Graphs replayed per step."""
        return sum(1 for kind, _ in self._run if kind == "graph")

    @property
    def eager_kernels(self) -> int:
        """Kernels launched eagerly per step."""
        return sum(len(x) for kind, x in self._run if kind == "eager")

    @property
    def kernels(self) -> int:
        """All kernels of one step (graph nodes and eager launches)."""
        return sum(len(x) for _, x in self.segments)

    def __call__(self, stream) -> None:
        for kind, x in self._run:
            if kind == "graph":
                x.launch(stream)
            else:
                _launch(x, stream)


def generate_piecewise(m, prompt, n_tokens: int, stream, step=None) -> DecodeResult:
    """Greedy decode with a `PiecewiseStep` (built here unless ``step`` is given), after the
    decoder's eager `prefill`, like ``generate_eager`` and ``generate_graph``."""
    plen = len(prompt_tokens(prompt))
    if not 1 <= n_tokens <= m.cfg.max_seq - (plen - 1):
        raise ValueError(f"n_tokens must be 1..max_seq ({m.cfg.max_seq}) less the prompt's "
                         f"{plen - 1} prefilled tokens, got {n_tokens}")
    t0 = host_us()
    pw = step if step is not None else PiecewiseStep(m, stream)
    setup = host_us() - t0 if step is None else 0.0
    pre = prefill(m, prompt, stream)
    lat = []
    for _ in range(n_tokens):
        t0 = host_us()
        pw(stream)
        stream.synchronize()
        lat.append(host_us() - t0)
    return DecodeResult(generated(m, prompt, n_tokens), np.array(lat), setup, pw.kernels, pre)


def mlp_block(m, layer: int = 0):
    """``fn(stream, x) -> y``: one layer's MLP half (RMSNorm, up, SiLU, down) of model ``m``,
    out of place: it allocates its output and temporaries, for `labkit.graphed`."""
    c, lw = m.cfg, m.dev["layers"][layer]

    def mlp(stream, x):
        h = device_array(c.d_model, np.float64)
        u = device_array(c.d_ff, np.float64)
        y = device_array(c.d_model, np.float64)
        rmsnorm[1, TPB, stream](x, lw["norm2"], h)
        matvec[c.d_ff, TPB, stream](lw["Wup"], h, u)
        silu[_blocks(c.d_ff), TPB, stream](u)
        matvec[c.d_model, TPB, stream](lw["Wdown"], u, y)
        return y

    return mlp


def mlp_eager_call(m, stream, layer: int = 0):
    """``call(x) -> y``: what a call of ``labkit.graphed(mlp_block(m), x)`` does, without the
    graph. Its buffers are allocated once, here, as the graphed callable's are at capture; each
    call copies ``x`` (a numpy array) in on ``stream``, launches `mlp_block`'s four kernels one
    by one, waits for them, and returns the same device array every time. So a timing of it
    against the graphed call differs only in how the four kernels are launched."""
    c, lw = m.cfg, m.dev["layers"][layer]
    x_dev = device_array(c.d_model, np.float64)
    h = device_array(c.d_model, np.float64)
    u = device_array(c.d_ff, np.float64)
    y = device_array(c.d_model, np.float64)
    sh = stream_handle(stream)

    def call(x):
        src = np.ascontiguousarray(x, np.float64)
        check(rt.cudaMemcpyAsync(x_dev.device_ctypes_pointer.value, src.ctypes.data,
                                 x_dev.nbytes, rt.cudaMemcpyKind.cudaMemcpyHostToDevice, sh),
              "cudaMemcpyAsync (the input in)")
        rmsnorm[1, TPB, stream](x_dev, lw["norm2"], h)
        matvec[c.d_ff, TPB, stream](lw["Wup"], h, u)
        silu[_blocks(c.d_ff), TPB, stream](u)
        matvec[c.d_model, TPB, stream](lw["Wdown"], u, y)
        stream.synchronize()
        return y

    return call


def mlp_reference(m, x, layer: int = 0) -> np.ndarray:
    """numpy's answer for `mlp_block`: what each graphed call must return."""
    lw = m.weights["layers"][layer]
    h = x / np.sqrt(np.mean(x * x) + EPS) * lw["norm2"]
    u = lw["Wup"] @ h
    return lw["Wdown"] @ (u / (1.0 + np.exp(-u)))


def _need_gpu(what: str):
    if not is_gpu:
        raise RuntimeError(f"{what} needs a GPU (backend 'cuda'); this is backend "
                           f"{_backend_name!r}. On the simulator, run labkit's equivalent instead")


def torch_compile_generate(m, prompt_token: int, n_tokens: int, warmup: int = 3) -> DecodeResult:
    # a one-token prompt, as in the notebook: the compiled step starts at position 0
    """The capstone's step as a module compiled by ``torch.compile(mode="reduce-overhead")``.

    PyTorch records CUDA graphs itself (CUDA graph trees) after warm-up runs; each token calls
    ``torch.compiler.cudagraph_mark_step_begin()`` first, which tells it a new iteration begins.
    The weights and the decode state (KV cache, token, position, history) are the module's
    buffers, so their addresses are static and the step may update the state in place inside the
    graph, as `labkit.course.decoder.torch_generate` does with ``torch.cuda.graph``. Backend
    "cuda" only.
    """
    _need_gpu("torch.compile")
    import torch
    c, w = m.cfg, m.weights
    H, hd, S, nl = c.n_heads, c.d_model // c.n_heads, c.max_seq, c.n_layers

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()

            def buf(name, a):
                self.register_buffer(name, torch.as_tensor(np.ascontiguousarray(a)))

            for k in ("E", "Pe", "norm_f", "W_out"):
                buf(k, w[k])
            for li, lw in enumerate(w["layers"]):
                for k, v in lw.items():
                    buf(f"{k}_{li}", v)
            buf("kc", np.zeros((nl, S, c.d_model)))
            buf("vc", np.zeros((nl, S, c.d_model)))
            buf("tok", np.zeros(1, np.int64))
            buf("pos", np.zeros(1, np.int64))
            buf("hist", np.zeros(S, np.int64))
            buf("ar", np.arange(S, dtype=np.int64))

        def forward(self):
            def norm(x, g):
                return x * torch.rsqrt((x * x).mean() + EPS) * g

            def W(name, li):
                return getattr(self, f"{name}_{li}")

            x = self.E.index_select(0, self.tok)[0] + self.Pe.index_select(0, self.pos)[0]
            mask = self.ar > self.pos
            for li in range(nl):
                h = norm(x, W("norm1", li))
                q = W("Wq", li) @ h
                self.kc[li].index_copy_(0, self.pos, (W("Wk", li) @ h)[None])
                self.vc[li].index_copy_(0, self.pos, (W("Wv", li) @ h)[None])
                sc = torch.einsum("hd,thd->ht", q.view(H, hd),
                                  self.kc[li].view(S, H, hd)) / math.sqrt(hd)
                pr = torch.softmax(sc.masked_fill(mask[None], float("-inf")), dim=1)
                att = torch.einsum("ht,thd->hd", pr, self.vc[li].view(S, H, hd)).reshape(-1)
                x = x + W("Wo", li) @ att
                u = W("Wup", li) @ norm(x, W("norm2", li))
                x = x + W("Wdown", li) @ torch.nn.functional.silu(u)
            nxt = torch.argmax(self.W_out @ norm(x, self.norm_f)).view(1)
            self.tok.copy_(nxt)
            self.hist.index_copy_(0, self.pos, nxt)
            self.pos.add_(1)

    mod = Step().cuda()
    step = torch.compile(mod, mode="reduce-overhead")
    skips_before = _cudagraph_skips()
    for _ in range(warmup):
        mod.pos.zero_()
        torch.compiler.cudagraph_mark_step_begin()
        step()
    torch.cuda.synchronize()
    skips = _cudagraph_skips()
    if skips is None or skips_before is None:
        note = "not confirmed that PyTorch used CUDA graphs (this version keeps no skip counter)"
    elif skips > skips_before:
        note = ("PyTorch did NOT use CUDA graphs: it skipped them (TORCH_LOGS=perf_hints says "
                "why); this row is compiled kernels launched eagerly")
    else:
        note = "CUDA graphs used (PyTorch counted no cudagraph skip)"
    mod.tok.fill_(int(prompt_token))
    mod.pos.zero_()
    torch.cuda.synchronize()
    lat = []
    for _ in range(n_tokens):
        t0 = host_us()
        torch.compiler.cudagraph_mark_step_begin()
        step()
        torch.cuda.synchronize()
        lat.append(host_us() - t0)
    toks = mod.hist.cpu().numpy()[:n_tokens].astype(np.int32)
    return DecodeResult(toks, np.array(lat), 0.0, -1, note=note)


def _cudagraph_skips():
    """How many times PyTorch's Inductor declined to use CUDA graphs in this process (its
    ``counters["inductor"]["cudagraph_skips"]``), or None where this PyTorch keeps no count."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return None
    return int(counters["inductor"]["cudagraph_skips"])


def cupy_capture_generate(m, prompt, n_tokens: int) -> DecodeResult:
    """The capstone's numba step captured by CuPy: ``cupy.cuda.Stream.begin_capture`` /
    ``end_capture`` around the same launches, made on that stream through numba's
    ``cuda.external_stream``, then ``Graph.launch`` per token. Backend "cuda" only."""
    _need_gpu("CuPy's stream capture")
    import cupy
    from numba import cuda

    cs = cupy.cuda.Stream(non_blocking=True)
    ns = cuda.external_stream(cs.ptr)
    _launch(step_launches(m), ns)          # warm-up outside the capture
    cs.synchronize()
    t0 = host_us()
    # numba frees collected arrays when its queue fills, and a cudaFree inside the capture would
    # invalidate it: hold every free until the capture has ended (notebook 09)
    with cuda.defer_cleanup():
        cs.begin_capture()
        dec_step(m, ns)
        graph = cs.end_capture()
    if hasattr(graph, "upload"):           # CuPy's Graph.upload: the first launch is not slower
        graph.upload(cs)
    cs.synchronize()
    setup = host_us() - t0
    pre = prefill(m, prompt, ns)           # the decoder's eager prefill, on the same stream
    cs.synchronize()
    lat = []
    for _ in range(n_tokens):
        t0 = host_us()
        graph.launch(cs)
        cs.synchronize()
        lat.append(host_us() - t0)
    return DecodeResult(generated(m, prompt, n_tokens), np.array(lat), setup,
                        m.cfg.kernels_per_token, pre)


def torch_compile_capture_check(n: int = 1024, calls: int = 4) -> dict:
    """Did ``torch.compile(mode="reduce-overhead")`` capture? For three small functions.

    ``reduce-overhead`` runs a function eagerly, without a word at the default log level, when
    it cannot graph it. Inductor counts each such skip in
    ``torch._dynamo.utils.counters["inductor"]["cudagraph_skips"]`` and says why on its
    ``perf_hints`` log ("skipping cudagraphs due to ..."). This compiles a function it can graph
    and two it cannot (one mutates its input, one mixes in a CPU tensor), calls each a few times,
    and returns ``{name: (skips counted, [messages])}``. Backend "cuda" with PyTorch only.
    """
    _need_gpu("torch.compile")
    import logging

    import torch
    from torch._dynamo.utils import counters

    def graphable(x):
        return torch.relu(x) * 2.0 + 1.0

    def mutates_input(x):
        x.add_(1.0)
        return x * 2.0

    def mixes_devices(x):
        return x.sum() + torch.ones(3).sum()          # torch.ones(3) lives on the CPU

    class _Keep(logging.Handler):
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.messages = []

        def emit(self, record):
            msg = record.getMessage()
            if "cudagraph" in msg:
                self.messages.append(msg)

    torch._logging.set_logs(perf_hints=True)
    out = {}
    try:
        for fn in (graphable, mutates_input, mixes_devices):
            torch._dynamo.reset()
            keep = _Keep()
            logging.getLogger("torch").addHandler(keep)
            before = counters["inductor"]["cudagraph_skips"]
            try:
                f = torch.compile(fn, mode="reduce-overhead")
                x = torch.randn(n, device="cuda")
                for _ in range(calls):
                    torch.compiler.cudagraph_mark_step_begin()
                    f(x)
                torch.cuda.synchronize()
            finally:
                logging.getLogger("torch").removeHandler(keep)
            out[fn.__name__] = (counters["inductor"]["cudagraph_skips"] - before, keep.messages)
    finally:
        torch._logging.set_logs()
    return out


# --------------------------------------------------------- a decision that depends on the data

def _flag_above_ref(grid, block, x, thr, flag):
    flag[0] = 1 if x.reshape(-1)[0] > thr else 0


@kernel(reference=_flag_above_ref)
def flag_above(x, thr, flag):
    """flag[0] = 1 if x[0] > thr else 0: the decision, taken on the device (one thread)."""
    if cuda.grid(1) == 0:
        flag[0] = 1 if x[0] > thr else 0


def _halve_or_add_ref(grid, block, x, flag):
    n = min(x.size, grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2])
    v = x.reshape(-1)[:n]
    if flag[0]:
        v *= x.dtype.type(0.5)
    else:
        v += x.dtype.type(1)


@kernel(reference=_halve_or_add_ref)
def halve_or_add(x, flag):
    """x[i] *= 0.5 if flag[0] else x[i] += 1: both branches in one kernel, chosen on the device."""
    i = cuda.grid(1)
    if i < x.size:
        if flag[0]:
            x[i] *= 0.5
        else:
            x[i] += 1.0


class HostDecision:
    """One step whose second half depends on a value the first half computes.

    The step: add one to every element of ``x``; then, if ``x[0]`` exceeds ``thr``, halve every
    element, else add one again. Three ways to run it, each ``(stream)`` per step:

    * `eager`: the host waits for the GPU and reads ``x`` (what ``tensor.item()`` does), then
      launches one branch. The wait makes it uncapturable: a sync inside a capture is refused;
    * `split`: what a framework does around an operation it cannot capture: the first half is
      one graph, the host reads and decides eagerly, and each branch is a graph of its own;
    * `on_device`: the decision is a kernel (`flag_above`) and both branches one kernel
      (`halve_or_add`) that reads the flag, so the whole step is one graph and never waits.

    All three leave the same numbers in ``x``.
    """

    def __init__(self, x, thr: float, stream, grid: int = 4, block: int = 256):
        from .workloads import add_one, scale
        self.x, self.thr, self.grid, self.block = x, float(thr), grid, block
        self._add_one, self._scale = add_one, scale
        self.flag = device_array(1, np.int32)
        self.syncs = 0
        self.eager(stream)                             # compiled and loaded before any capture
        stream.synchronize()
        self._first = self._capture(stream, lambda st: add_one[grid, block, st](x))
        self._halve = self._capture(stream, lambda st: scale[grid, block, st](x, 0.5))
        self._add = self._capture(stream, lambda st: add_one[grid, block, st](x))
        self._whole = self._capture(stream, self._device_step)

    @staticmethod
    def _capture(stream, record):
        with capture(stream) as cap:
            record(stream)
        ex = cap.graph.instantiate()
        ex.upload(stream)
        return ex

    def _above(self, stream) -> bool:
        stream.synchronize()                           # .item(): wait for the GPU, then read
        self.syncs += 1
        return bool(self.x.copy_to_host()[0] > self.thr)

    def eager(self, stream):
        """The host decides: launch, wait, read, launch one branch."""
        g, b, x = self.grid, self.block, self.x
        self._add_one[g, b, stream](x)
        if self._above(stream):
            self._scale[g, b, stream](x, 0.5)
        else:
            self._add_one[g, b, stream](x)

    def split(self, stream):
        """Two graphs with the host's decision between them."""
        self._first.launch(stream)
        (self._halve if self._above(stream) else self._add).launch(stream)

    def _device_step(self, stream):
        g, b, x = self.grid, self.block, self.x
        self._add_one[g, b, stream](x)
        flag_above[1, 1, stream](x, self.thr, self.flag)
        halve_or_add[g, b, stream](x, self.flag)

    def on_device(self, stream):
        """One graph: the decision is made by a kernel; the host never waits."""
        self._whole.launch(stream)

    def close(self):
        for ex in (self._first, self._halve, self._add, self._whole):
            ex.close()


# ------------------------------------------------------------------ where the rules were read

def _data() -> dict:
    text = (resources.files("labkit.course.reference") / "frameworks.json").read_text("utf-8")
    return json.loads(text)


def sources() -> list[dict]:
    """The framework files the course read for its rules, one row per file: framework, repo,
    path, commit, the day read and the facts taken from it (``reference/frameworks.json``)."""
    return _data()["sources"]


def reports() -> list[dict]:
    """Figures the frameworks reported about their own graphs (label, value, unit, source)."""
    return _data()["reports"]


class _ReportsNote:
    def __init__(self, rows):
        self.rows = rows

    def __repr__(self):
        return "\n".join(["Reported by the frameworks (not measured by the course):"]
                         + [f"  {r['label']}: {r['value']} {r['unit']}".rstrip()
                            + f"  [{r['source']}]" for r in self.rows])

    def _repr_html_(self):
        import html
        rows = "".join(f"<tr><td>{html.escape(r['label'])}</td><td style='text-align:right'>"
                       f"{html.escape(str(r['value']))} {html.escape(r['unit'])}</td>"
                       f"<td><small>{html.escape(r['source'])}</small></td></tr>"
                       for r in self.rows)
        return ('<div class="labkit-reference" style="border-left:4px solid #4a7fb5;'
                'background:#eef4fb;color:#222;padding:6px 10px;margin:4px 0">'
                "<b>Reported by the frameworks (not measured by the course)</b>"
                f"<table style='margin:4px 0'>{rows}</table></div>")


def reports_note():
    """The frameworks' own reports as one note, each figure with its source."""
    return _ReportsNote(reports())


class _SourcesNote:
    def __init__(self, rows):
        self.rows = rows

    def _lines(self):
        return [(r["framework"], f"{r['repo']}: {r['path']}",
                 r["commit"][:12] if len(r["commit"]) == 40 else r["commit"]) for r in self.rows]

    def __repr__(self):
        return "\n".join(["The rules above, as read in:"]
                         + [f"  {f}: {p} at {c}" for f, p, c in self._lines()])

    def _repr_html_(self):
        import html
        rows = "".join(f"<tr><td>{html.escape(f)}</td><td><code>{html.escape(p)}</code></td>"
                       f"<td><code>{html.escape(c)}</code></td></tr>" for f, p, c in self._lines())
        return ('<div class="labkit-reference" style="border-left:4px solid #4a7fb5;'
                'background:#eef4fb;color:#222;padding:6px 10px;margin:4px 0">'
                "<b>The rules above, as read in</b>"
                f"<table style='margin:4px 0'><tr><th>framework</th><th>file</th><th>commit</th>"
                f"</tr>{rows}</table></div>")


def sources_note(*frameworks: str):
    """A note naming the files (and commits) the rules were read in; all, or ``frameworks``."""
    rows = [r for r in sources() if not frameworks or r["framework"] in frameworks]
    if not rows:
        raise ValueError(f"no sources recorded for {frameworks!r}")
    return _SourcesNote(rows)
