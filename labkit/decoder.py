"""A tiny transformer decoder as numba kernels: the capstone's (notebook 07) decode loop.

One decode step is the shape of a real one: embedding lookup (+ a learned position embedding),
per layer RMSNorm, Q/K/V projections (matrix-vector), a KV-cache write, attention scores,
softmax, the attention-weighted sum of values, the output projection, a residual add, RMSNorm,
an MLP (up projection, SiLU, down projection) and a second residual add; then a final RMSNorm,
the logits projection and a greedy argmax. With 4 layers that is 65 short kernels per token.

Every kernel has a numpy reference (the simulator runs it; ``tests/test_decoder.py`` proves it
equal to the kernel's own code under numba's CUDA simulator) and a bytes-moved cost.

Why the position lives in device memory: a captured graph freezes every kernel argument,
scalars included. Were the KV-cache position passed as an ``int``, every replay would write
position 0 again. So the kernels read the position from a one-element device array, and the
last kernel of the step increments it; likewise argmax writes the next token id into a device
buffer that the embedding kernel of the next step reads. The graph is then valid for every
token and nothing on the host changes between replays -- what serving engines do with their
static "positions" / "sequence lengths" buffers. The other way, updating the parameters of the
position-dependent nodes before each replay, costs a host call per node per token.

Weights are float64 so that the GPU's summation order cannot flip a near-tie in argmax: the
token sequences of eager, graph and numpy runs must be identical.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import cuda, float64, int32

from .backend import rt as _rt
from ._kernel import kernel, to_device, device_array

__all__ = ["Config", "Model", "make_model", "step", "reference_generate", "generate_eager",
           "generate_graph", "DecodeResult", "KERNELS", "torch_generate"]

TPB = 64            # threads per block of every reduction kernel (a constant: shared arrays)
EPS = 1e-6


def _bytes_cost(P, grid, block, *args):
    """Launch-floor plus the bytes the kernel reads and writes at device bandwidth (µs)."""
    nbytes = sum(int(getattr(a, "nbytes", 0)) for a in args)
    return P("kernel_us") + nbytes / (P("device_GBps") * 1e3)


# ------------------------------------------------------------------ kernels and references

def _embed_ref(grid, block, E, Pe, tok, pos, x):
    x[:] = E[int(tok[0])] + Pe[int(pos[0])]


@kernel(reference=_embed_ref, cost=_bytes_cost)
def embed(E, Pe, tok, pos, x):
    """x = E[tok[0]] + Pe[pos[0]]: the token and position are read from device memory."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = E[tok[0], i] + Pe[pos[0], i]


def _rmsnorm_ref(grid, block, x, w, out):
    out[:] = x / np.sqrt(np.mean(x * x) + EPS) * w


@kernel(reference=_rmsnorm_ref, cost=_bytes_cost)
def rmsnorm(x, w, out):
    """out = x / rms(x) * w, one block: a shared-memory sum of squares."""
    t = cuda.threadIdx.x
    buf = cuda.shared.array(TPB, float64)
    n = x.shape[0]
    acc = 0.0
    for j in range(t, n, TPB):
        acc += x[j] * x[j]
    buf[t] = acc
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    inv = 1.0 / math.sqrt(buf[0] / n + EPS)
    for j in range(t, n, TPB):
        out[j] = x[j] * inv * w[j]


def _matvec_ref(grid, block, W, x, y):
    y[:] = W @ x


@kernel(reference=_matvec_ref, cost=_bytes_cost)
def matvec(W, x, y):
    """y = W @ x, one block per output row, a shared-memory reduction over the row."""
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    buf = cuda.shared.array(TPB, float64)
    acc = 0.0
    if row < W.shape[0]:
        for j in range(t, W.shape[1], TPB):
            acc += W[row, j] * x[j]
    buf[t] = acc
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0 and row < W.shape[0]:
        y[row] = buf[0]


def _store_kv_ref(grid, block, k, v, kc, vc, pos):
    p = int(pos[0])
    kc[p] = k
    vc[p] = v


@kernel(reference=_store_kv_ref, cost=_bytes_cost)
def store_kv(k, v, kc, vc, pos):
    """Write this token's key and value into row pos[0] of the KV cache."""
    i = cuda.grid(1)
    if i < k.shape[0]:
        kc[pos[0], i] = k[i]
        vc[pos[0], i] = v[i]


def _scores_ref(grid, block, q, kc, pos, scores):
    H, S = scores.shape
    hd = q.shape[0] // H
    p = int(pos[0])
    scale = 1.0 / math.sqrt(hd)
    qh = q.reshape(H, hd)
    kh = kc[:p + 1].reshape(p + 1, H, hd)
    scores[:] = -1e30
    scores[:, :p + 1] = np.einsum("hd,thd->ht", qh, kh) * scale


@kernel(reference=_scores_ref, cost=_bytes_cost)
def attn_scores(q, kc, pos, scores):
    """scores[h, t] = q_h . k_t / sqrt(head_dim) for t <= pos[0]; -1e30 (masked) beyond."""
    h = cuda.blockIdx.x
    H = scores.shape[0]
    S = scores.shape[1]
    hd = q.shape[0] // H
    scale = 1.0 / math.sqrt(hd)
    p = pos[0]
    for t in range(cuda.threadIdx.x, S, TPB):
        if h < H:
            if t <= p:
                acc = 0.0
                for j in range(hd):
                    acc += q[h * hd + j] * kc[t, h * hd + j]
                scores[h, t] = acc * scale
            else:
                scores[h, t] = -1e30


def _softmax_ref(grid, block, scores, pos, probs):
    p = int(pos[0])
    s = scores[:, :p + 1]
    e = np.exp(s - s.max(axis=1, keepdims=True))
    probs[:] = 0.0
    probs[:, :p + 1] = e / e.sum(axis=1, keepdims=True)


@kernel(reference=_softmax_ref, cost=_bytes_cost)
def softmax(scores, pos, probs):
    """Row-wise softmax over the first pos[0]+1 entries, one block per head."""
    h = cuda.blockIdx.x
    t = cuda.threadIdx.x
    S = scores.shape[1]
    p = pos[0]
    buf = cuda.shared.array(TPB, float64)
    m = -1e308
    for j in range(t, p + 1, TPB):
        m = max(m, scores[h, j])
    buf[t] = m
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            buf[t] = max(buf[t], buf[t + s])
        cuda.syncthreads()
        s //= 2
    m = buf[0]
    cuda.syncthreads()
    acc = 0.0
    for j in range(t, p + 1, TPB):
        acc += math.exp(scores[h, j] - m)
    buf[t] = acc
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    total = buf[0]
    for j in range(t, S, TPB):
        probs[h, j] = math.exp(scores[h, j] - m) / total if j <= p else 0.0


def _attn_out_ref(grid, block, probs, vc, pos, out):
    H, S = probs.shape
    hd = out.shape[0] // H
    p = int(pos[0])
    vh = vc[:p + 1].reshape(p + 1, H, hd)
    out[:] = np.einsum("ht,thd->hd", probs[:, :p + 1], vh).reshape(-1)


@kernel(reference=_attn_out_ref, cost=_bytes_cost)
def attn_out(probs, vc, pos, out):
    """out[i] = sum_t probs[head(i), t] * v_t[i] over t <= pos[0], one block per element."""
    i = cuda.blockIdx.x
    t = cuda.threadIdx.x
    H = probs.shape[0]
    hd = out.shape[0] // H
    buf = cuda.shared.array(TPB, float64)
    acc = 0.0
    if i < out.shape[0]:
        h = i // hd
        for j in range(t, pos[0] + 1, TPB):
            acc += probs[h, j] * vc[j, i]
    buf[t] = acc
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0 and i < out.shape[0]:
        out[i] = buf[0]


def _residual_ref(grid, block, x, y):
    x += y


@kernel(reference=_residual_ref, cost=_bytes_cost)
def residual_add(x, y):
    """x += y."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] += y[i]


def _silu_ref(grid, block, u):
    u[:] = u / (1.0 + np.exp(-u))


@kernel(reference=_silu_ref, cost=_bytes_cost)
def silu(u):
    """u = u * sigmoid(u), in place."""
    i = cuda.grid(1)
    if i < u.shape[0]:
        u[i] = u[i] / (1.0 + math.exp(-u[i]))


def _argmax_ref(grid, block, logits, tok, history, pos):
    best = int(np.argmax(logits))     # numpy: the first of equal maxima
    tok[0] = best
    history[int(pos[0])] = best


@kernel(reference=_argmax_ref, cost=_bytes_cost)
def argmax(logits, tok, history, pos):
    """Greedy pick: tok[0] = history[pos[0]] = argmax(logits), the lowest index on ties."""
    t = cuda.threadIdx.x
    vals = cuda.shared.array(TPB, float64)
    idx = cuda.shared.array(TPB, int32)
    bv = -1e308
    bi = 2147483647
    for j in range(t, logits.shape[0], TPB):
        if logits[j] > bv:
            bv = logits[j]
            bi = j
    vals[t] = bv
    idx[t] = bi
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            ov = vals[t + s]
            oi = idx[t + s]
            if ov > vals[t] or (ov == vals[t] and oi < idx[t]):
                vals[t] = ov
                idx[t] = oi
        cuda.syncthreads()
        s //= 2
    if t == 0:
        tok[0] = idx[0]
        history[pos[0]] = idx[0]


def _advance_ref(grid, block, pos):
    pos[0] += 1


@kernel(reference=_advance_ref, cost=_bytes_cost)
def advance(pos):
    """pos[0] += 1: the step's last kernel moves the KV-cache position on, inside the graph."""
    if cuda.grid(1) == 0:
        pos[0] += 1


KERNELS = [embed, rmsnorm, matvec, store_kv, attn_scores, softmax, attn_out, residual_add,
           silu, argmax, advance]


# ------------------------------------------------------------------ the model

@dataclass(frozen=True)
class Config:
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 128
    vocab: int = 256
    n_layers: int = 4
    max_seq: int = 64

    @property
    def kernels_per_token(self) -> int:
        return 15 * self.n_layers + 5


@dataclass
class Model:
    """Host weights (numpy), their device copies and the device-resident decode state."""
    cfg: Config
    weights: dict
    dev: dict = field(default_factory=dict)
    state: dict = field(default_factory=dict)
    warm: bool = False


def _make_weights(cfg: Config, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    D, F, V, S = cfg.d_model, cfg.d_ff, cfg.vocab, cfg.max_seq

    def mat(rows, cols):
        return rng.standard_normal((rows, cols)) / math.sqrt(cols)

    w = {"E": rng.standard_normal((V, D)), "Pe": 0.1 * rng.standard_normal((S, D)),
         "norm_f": 1.0 + 0.1 * rng.standard_normal(D), "W_out": mat(V, D), "layers": []}
    for _ in range(cfg.n_layers):
        w["layers"].append({
            "norm1": 1.0 + 0.1 * rng.standard_normal(D), "Wq": mat(D, D), "Wk": mat(D, D),
            "Wv": mat(D, D), "Wo": mat(D, D), "norm2": 1.0 + 0.1 * rng.standard_normal(D),
            "Wup": mat(F, D), "Wdown": mat(D, F)})
    return w


def make_model(seed: int = 0, **cfg) -> Model:
    """A decoder with deterministic random float64 weights (numpy's seeded generator).

    Keyword arguments override `Config` (d_model, n_heads, d_ff, vocab, n_layers, max_seq).
    The weights and all per-step buffers are allocated once, here, never inside a step.
    """
    c = Config(**cfg)
    if c.d_model % c.n_heads:
        raise ValueError(f"d_model ({c.d_model}) must be a multiple of n_heads ({c.n_heads})")
    m = Model(c, _make_weights(c, seed))
    w, D = m.weights, c.d_model
    m.dev = {k: to_device(w[k]) for k in ("E", "Pe", "norm_f", "W_out")}
    m.dev["layers"] = [{k: to_device(v) for k, v in lw.items()} for lw in w["layers"]]
    f8 = np.float64
    m.state = {
        "x": device_array(D, f8), "h": device_array(D, f8), "q": device_array(D, f8),
        "k": device_array(D, f8), "v": device_array(D, f8), "att": device_array(D, f8),
        "o": device_array(D, f8), "u": device_array(c.d_ff, f8),
        "scores": device_array((c.n_heads, c.max_seq), f8),
        "probs": device_array((c.n_heads, c.max_seq), f8),
        "logits": device_array(c.vocab, f8),
        "tok": device_array(1, np.int32), "pos": device_array(1, np.int32),
        "history": device_array(c.max_seq, np.int32),
        "kc": [device_array((c.max_seq, D), f8) for _ in range(c.n_layers)],
        "vc": [device_array((c.max_seq, D), f8) for _ in range(c.n_layers)],
    }
    return m


def _blocks(n: int) -> int:
    return (n + TPB - 1) // TPB


def step(m: Model, stream) -> int:
    """Launch one decode step on ``stream``; returns the number of kernels launched.

    Reads the token and position from device memory and leaves the next token and position
    there, so the same launches (or their captured graph) serve every token.
    """
    c, d, s = m.cfg, m.dev, m.state
    D, H = c.d_model, c.n_heads
    g = _blocks(D)
    n = 0

    def k(kern, grid, block, *args):
        nonlocal n
        kern[grid, block, stream](*args)
        n += 1

    k(embed, g, TPB, d["E"], d["Pe"], s["tok"], s["pos"], s["x"])
    for li, lw in enumerate(d["layers"]):
        kc, vc = s["kc"][li], s["vc"][li]
        k(rmsnorm, 1, TPB, s["x"], lw["norm1"], s["h"])
        k(matvec, D, TPB, lw["Wq"], s["h"], s["q"])
        k(matvec, D, TPB, lw["Wk"], s["h"], s["k"])
        k(matvec, D, TPB, lw["Wv"], s["h"], s["v"])
        k(store_kv, g, TPB, s["k"], s["v"], kc, vc, s["pos"])
        k(attn_scores, H, TPB, s["q"], kc, s["pos"], s["scores"])
        k(softmax, H, TPB, s["scores"], s["pos"], s["probs"])
        k(attn_out, D, TPB, s["probs"], vc, s["pos"], s["att"])
        k(matvec, D, TPB, lw["Wo"], s["att"], s["o"])
        k(residual_add, g, TPB, s["x"], s["o"])
        k(rmsnorm, 1, TPB, s["x"], lw["norm2"], s["h"])
        k(matvec, c.d_ff, TPB, lw["Wup"], s["h"], s["u"])
        k(silu, _blocks(c.d_ff), TPB, s["u"])
        k(matvec, D, TPB, lw["Wdown"], s["u"], s["o"])
        k(residual_add, g, TPB, s["x"], s["o"])
    k(rmsnorm, 1, TPB, s["x"], d["norm_f"], s["h"])
    k(matvec, c.vocab, TPB, d["W_out"], s["h"], s["logits"])
    k(argmax, 1, TPB, s["logits"], s["tok"], s["history"], s["pos"])
    k(advance, 1, 1, s["pos"])
    return n


# ------------------------------------------------------------------ generation

def reference_generate(m: Model, prompt_token: int, n_tokens: int) -> np.ndarray:
    """The same greedy decode in plain numpy: the ground truth for both GPU paths."""
    c, w = m.cfg, m.weights
    _check_len(c, n_tokens)
    kc = [np.zeros((c.max_seq, c.d_model)) for _ in range(c.n_layers)]
    vc = [np.zeros((c.max_seq, c.d_model)) for _ in range(c.n_layers)]
    H, hd = c.n_heads, c.d_model // c.n_heads

    def norm(x, g):
        return x / np.sqrt(np.mean(x * x) + EPS) * g

    tok, out = int(prompt_token), []
    for p in range(n_tokens):
        x = w["E"][tok] + w["Pe"][p]
        for li, lw in enumerate(w["layers"]):
            h = norm(x, lw["norm1"])
            q, kc[li][p], vc[li][p] = lw["Wq"] @ h, lw["Wk"] @ h, lw["Wv"] @ h
            sc = np.einsum("hd,thd->ht", q.reshape(H, hd),
                           kc[li][:p + 1].reshape(p + 1, H, hd)) / math.sqrt(hd)
            e = np.exp(sc - sc.max(axis=1, keepdims=True))
            pr = e / e.sum(axis=1, keepdims=True)
            att = np.einsum("ht,thd->hd", pr, vc[li][:p + 1].reshape(p + 1, H, hd)).reshape(-1)
            x = x + lw["Wo"] @ att
            u = lw["Wup"] @ norm(x, lw["norm2"])
            x = x + lw["Wdown"] @ (u / (1.0 + np.exp(-u)))
        tok = int(np.argmax(w["W_out"] @ norm(x, w["norm_f"])))
        out.append(tok)
    return np.array(out, dtype=np.int32)


@dataclass
class DecodeResult:
    """Generated ``tokens``, each token's host latency ``token_us`` (launch to done), the
    one-off ``setup_us`` (capture + instantiate + upload for a graph; 0 for eager) and
    ``kernels_per_token``."""
    tokens: np.ndarray
    token_us: np.ndarray
    setup_us: float
    kernels_per_token: int

    @property
    def tokens_per_s(self) -> float:
        return 1e6 * len(self.token_us) / float(np.sum(self.token_us))


def _check_len(c: Config, n_tokens: int):
    if not 1 <= n_tokens <= c.max_seq:
        raise ValueError(f"n_tokens must be 1..max_seq ({c.max_seq}), got {n_tokens}")


def _sync(stream):
    from ._errors import check
    from ._kernel import stream_handle
    check(_rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")


def _reset(m: Model, prompt_token: int, stream):
    # Synchronous copies on the legacy stream: the decode stream is idle here (every caller
    # synchronized it), and a synchronous copy is done when it returns.
    _sync(stream)
    m.state["tok"].copy_to_device(np.array([prompt_token], np.int32))
    m.state["pos"].copy_to_device(np.zeros(1, np.int32))


def _warm(m: Model, stream):
    """Run one step so numba has compiled and loaded every kernel before timing or capture."""
    if not m.warm:
        _reset(m, 0, stream)
        step(m, stream)
        _sync(stream)
        m.warm = True


def generate_eager(m: Model, prompt_token: int, n_tokens: int, stream) -> DecodeResult:
    """Greedy decode launching each step's kernels one by one.

    The token never leaves the device inside the loop: the only host wait per token is one
    stream synchronize at its end, there to time it; the tokens are copied back once.
    """
    from .backend import host_us
    _check_len(m.cfg, n_tokens)
    _warm(m, stream)
    _reset(m, prompt_token, stream)
    lat, n = [], 0
    for _ in range(n_tokens):
        t0 = host_us()
        n = step(m, stream)
        _sync(stream)
        lat.append(host_us() - t0)
    toks = m.state["history"].copy_to_host()
    return DecodeResult(toks[:n_tokens].copy(), np.array(lat), 0.0, n)


def capture_step(m: Model, stream):
    """Capture one decode step into an instantiated, uploaded `labkit.GraphExec`."""
    from ._capture import capture
    _warm(m, stream)
    with capture(stream) as cap:
        step(m, stream)
    ex = cap.graph.instantiate()
    ex.upload(stream)
    _sync(stream)
    return ex


def generate_graph(m: Model, prompt_token: int, n_tokens: int, stream,
                   exec_=None) -> DecodeResult:
    """Greedy decode replaying one captured step per token (captured here unless ``exec_``
    is given). Between replays nothing on the host changes: the graph reads the position and
    the token from device memory and its last kernels write the next ones there."""
    from .backend import host_us
    _check_len(m.cfg, n_tokens)
    _warm(m, stream)
    t0 = host_us()
    ex = exec_ if exec_ is not None else capture_step(m, stream)
    setup = host_us() - t0 if exec_ is None else 0.0
    _reset(m, prompt_token, stream)
    lat = []
    for _ in range(n_tokens):
        t0 = host_us()
        ex.launch(stream)
        _sync(stream)
        lat.append(host_us() - t0)
    toks = m.state["history"].copy_to_host()
    return DecodeResult(toks[:n_tokens].copy(), np.array(lat), setup, m.cfg.kernels_per_token)


# ------------------------------------------------------------------ PyTorch reference rows

def torch_generate(m: Model, prompt_token: int, n_tokens: int, graph: bool = False,
                   warmup: int = 3) -> DecodeResult:
    """The same model in PyTorch on the GPU, eager or replaying a ``torch.cuda.CUDAGraph``.

    Only for backend "cuda" with torch installed. Like the numba version it keeps the token
    and the position in device tensors, so one captured step serves every token.
    """
    import torch
    from .backend import host_us
    _check_len(m.cfg, n_tokens)
    c, w = m.cfg, m.weights
    dev = torch.device("cuda")

    def T(a):
        return torch.as_tensor(np.ascontiguousarray(a), device=dev)

    E, Pe, nf, Wout = T(w["E"]), T(w["Pe"]), T(w["norm_f"]), T(w["W_out"])
    L = [{k: T(v) for k, v in lw.items()} for lw in w["layers"]]
    H, hd, S = c.n_heads, c.d_model // c.n_heads, c.max_seq
    kc = [torch.zeros(S, c.d_model, dtype=torch.float64, device=dev) for _ in L]
    vc = [torch.zeros(S, c.d_model, dtype=torch.float64, device=dev) for _ in L]
    tok = torch.zeros(1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    hist = torch.zeros(S, dtype=torch.long, device=dev)
    ar = torch.arange(S, device=dev)

    def norm(x, g):
        return x * torch.rsqrt((x * x).mean() + EPS) * g

    def one_step():
        x = E.index_select(0, tok)[0] + Pe.index_select(0, pos)[0]
        mask = ar > pos                     # the positions not yet written
        for li, lw in enumerate(L):
            h = norm(x, lw["norm1"])
            q = lw["Wq"] @ h
            kc[li].index_copy_(0, pos, (lw["Wk"] @ h)[None])
            vc[li].index_copy_(0, pos, (lw["Wv"] @ h)[None])
            sc = torch.einsum("hd,thd->ht", q.view(H, hd), kc[li].view(S, H, hd)) / math.sqrt(hd)
            pr = torch.softmax(sc.masked_fill(mask[None], float("-inf")), dim=1)
            att = torch.einsum("ht,thd->hd", pr, vc[li].view(S, H, hd)).reshape(-1)
            x = x + lw["Wo"] @ att
            u = lw["Wup"] @ norm(x, lw["norm2"])
            x = x + lw["Wdown"] @ torch.nn.functional.silu(u)
        nxt = torch.argmax(Wout @ norm(x, nf)).view(1)
        tok.copy_(nxt)
        hist.index_copy_(0, pos, nxt)
        pos.add_(1)

    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(warmup):
            pos.zero_()
            one_step()
    torch.cuda.synchronize()
    run, setup = one_step, 0.0
    if graph:
        g = torch.cuda.CUDAGraph()
        t0 = host_us()
        with torch.cuda.graph(g):
            one_step()
        torch.cuda.synchronize()
        setup = host_us() - t0
        run = g.replay
    tok.fill_(int(prompt_token))
    pos.zero_()
    torch.cuda.synchronize()
    lat = []
    for _ in range(n_tokens):
        t0 = host_us()
        run()
        torch.cuda.synchronize()
        lat.append(host_us() - t0)
    toks = hist.cpu().numpy()[:n_tokens].astype(np.int32)
    return DecodeResult(toks, np.array(lat), setup, -1)
