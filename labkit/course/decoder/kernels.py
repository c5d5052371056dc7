"""The decoder's kernels, each with its numpy reference and bytes-moved cost.

Every kernel has a numpy reference (the simulator runs it; ``tests/course/test_decoder.py``
proves it equal to the kernel's own code under numba's CUDA simulator) and a bytes-moved cost.
The reductions (a block's sum or maximum) all go through one device function,
`block_reduce`, so they share one summation order.

Weights are float64 so that the GPU's summation order cannot flip a near-tie in argmax: the
token sequences of eager, graph and numpy runs must be identical.
"""
from __future__ import annotations

import math
import numpy as np
from numba import cuda, float64, int32

from ..._kernel import kernel

__all__ = ["TPB", "EPS", "KERNELS", "block_reduce", "embed", "rmsnorm", "matvec", "store_kv",
           "attn_scores", "softmax", "attn_out", "residual_add", "silu", "argmax", "advance", "load_prompt"]

TPB = 64            # threads per block of every reduction kernel (a constant: shared arrays)
EPS = 1e-6


def _bytes_cost(P, grid, block, *args):
    """Launch-floor plus the bytes the kernel reads and writes at device bandwidth (µs)."""
    nbytes = sum(int(getattr(a, "nbytes", 0)) for a in args)
    return P("kernel_us") + nbytes / (P("device_GBps") * 1e3)


def _step_cost(P, grid, block, *args):
    """A decoder kernel's GPU time (µs): the measured time of the decoder's kernels (their mean,
    ``decode_kernel_us``, from `labkit.course.decode_costs`) in place of the tiny calibration
    kernel's launch floor, plus its bytes at device bandwidth. These kernels are latency-bound:
    block reductions whose every step waits on a ``syncthreads``, not the bytes they move."""
    nbytes = sum(int(getattr(a, "nbytes", 0)) for a in args)
    return P("decode_kernel_us") + nbytes / (P("device_GBps") * 1e3)


@cuda.jit(device=True)
def block_reduce(buf, t, acc, take_max):
    """Combine every thread's ``acc`` across the block; every thread gets the result.

    A shared-memory tree over ``buf`` (``TPB`` elements, one per thread ``t``): the sum, or the
    maximum when ``take_max``. All ``TPB`` threads of the block must call it, since it
    synchronizes them; it synchronizes once more before returning, so the caller may reuse
    ``buf`` for another reduction straight away.
    """
    buf[t] = acc
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            if take_max:
                buf[t] = max(buf[t], buf[t + s])
            else:
                buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    total = buf[0]
    cuda.syncthreads()
    return total


# ------------------------------------------------------------------ kernels and references

def _embed_ref(grid, block, E, Pe, tok, pos, x):
    x[:] = E[int(tok[0])] + Pe[int(pos[0])]


@kernel(reference=_embed_ref, cost=_step_cost)
def embed(E, Pe, tok, pos, x):
    """x = E[tok[0]] + Pe[pos[0]]: the token and position are read from device memory."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = E[tok[0], i] + Pe[pos[0], i]


def _rmsnorm_ref(grid, block, x, w, out):
    out[:] = x / np.sqrt(np.mean(x * x) + EPS) * w


@kernel(reference=_rmsnorm_ref, cost=_step_cost)
def rmsnorm(x, w, out):
    """out = x / rms(x) * w, one block: a block sum of squares."""
    t = cuda.threadIdx.x
    buf = cuda.shared.array(TPB, float64)
    n = x.shape[0]
    acc = 0.0
    for j in range(t, n, TPB):
        acc += x[j] * x[j]
    inv = 1.0 / math.sqrt(block_reduce(buf, t, acc, False) / n + EPS)
    for j in range(t, n, TPB):
        out[j] = x[j] * inv * w[j]


def _matvec_ref(grid, block, W, x, y):
    y[:] = W @ x


@kernel(reference=_matvec_ref, cost=_step_cost)
def matvec(W, x, y):
    """y = W @ x, one block per output row, a block sum over the row."""
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    buf = cuda.shared.array(TPB, float64)
    acc = 0.0
    if row < W.shape[0]:
        for j in range(t, W.shape[1], TPB):
            acc += W[row, j] * x[j]
    total = block_reduce(buf, t, acc, False)
    if t == 0 and row < W.shape[0]:
        y[row] = total


def _store_kv_ref(grid, block, k, v, kc, vc, pos):
    p = int(pos[0])
    kc[p] = k
    vc[p] = v


@kernel(reference=_store_kv_ref, cost=_step_cost)
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


@kernel(reference=_scores_ref, cost=_step_cost)
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


@kernel(reference=_softmax_ref, cost=_step_cost)
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
    m = block_reduce(buf, t, m, True)
    acc = 0.0
    for j in range(t, p + 1, TPB):
        acc += math.exp(scores[h, j] - m)
    total = block_reduce(buf, t, acc, False)
    for j in range(t, S, TPB):
        probs[h, j] = math.exp(scores[h, j] - m) / total if j <= p else 0.0


def _attn_out_ref(grid, block, probs, vc, pos, out):
    H, S = probs.shape
    hd = out.shape[0] // H
    p = int(pos[0])
    vh = vc[:p + 1].reshape(p + 1, H, hd)
    out[:] = np.einsum("ht,thd->hd", probs[:, :p + 1], vh).reshape(-1)


@kernel(reference=_attn_out_ref, cost=_step_cost)
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
    total = block_reduce(buf, t, acc, False)
    if t == 0 and i < out.shape[0]:
        out[i] = total


def _residual_ref(grid, block, x, y):
    x += y


@kernel(reference=_residual_ref, cost=_step_cost)
def residual_add(x, y):
    """x += y."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] += y[i]


def _silu_ref(grid, block, u):
    u[:] = u / (1.0 + np.exp(-u))


@kernel(reference=_silu_ref, cost=_step_cost)
def silu(u):
    """u = u * sigmoid(u), in place."""
    i = cuda.grid(1)
    if i < u.shape[0]:
        u[i] = u[i] / (1.0 + math.exp(-u[i]))


def _argmax_ref(grid, block, logits, tok, history, pos):
    best = int(np.argmax(logits))     # numpy: the first of equal maxima
    tok[0] = best
    history[int(pos[0])] = best


@kernel(reference=_argmax_ref, cost=_step_cost)
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


@kernel(reference=_advance_ref, cost=_step_cost)
def advance(pos):
    """pos[0] += 1: the step's last kernel moves the KV-cache position on, inside the graph."""
    if cuda.grid(1) == 0:
        pos[0] += 1


def _load_prompt_ref(grid, block, prompt, pos, tok):
    tok[0] = prompt[int(pos[0])]


@kernel(reference=_load_prompt_ref, cost=_step_cost)
def load_prompt(prompt, pos, tok):
    """tok[0] = prompt[pos[0]]: during the prefill, the next token is the prompt's, not the
    model's pick."""
    if cuda.grid(1) == 0:
        tok[0] = prompt[pos[0]]


KERNELS = [embed, rmsnorm, matvec, store_kv, attn_scores, softmax, attn_out, residual_add,
           silu, argmax, advance]
