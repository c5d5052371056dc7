"""The same greedy decode outside labkit's kernels: the ground truth and a comparison row.

* `reference_generate`: plain numpy, the tokens both GPU paths must reproduce exactly.
* `torch_generate`: the model in PyTorch on the GPU, eager or replaying a CUDA graph (the
  capstone's comparison rows; backend "cuda" with torch installed).
"""
from __future__ import annotations

import math

import numpy as np

from ...backends import host_us
from .generate import DecodeResult
from .kernels import EPS
from .model import Model, _check_len, prompt_tokens

__all__ = ["reference_generate", "torch_generate"]


def reference_generate(m: Model, prompt, n_tokens: int) -> np.ndarray:
    """The same greedy decode in plain numpy: the ground truth for both GPU paths.

    ``prompt``: one token id or a sequence of them; returns the ``n_tokens`` tokens that
    follow the prompt."""
    c, w = m.cfg, m.weights
    prompt = prompt_tokens(prompt)
    _check_len(c, n_tokens, len(prompt))
    kc = [np.zeros((c.max_seq, c.d_model)) for _ in range(c.n_layers)]
    vc = [np.zeros((c.max_seq, c.d_model)) for _ in range(c.n_layers)]
    H, hd = c.n_heads, c.d_model // c.n_heads

    def norm(x, g):
        return x / np.sqrt(np.mean(x * x) + EPS) * g

    tok, out = prompt[0], []
    for p in range(len(prompt) - 1 + n_tokens):
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
        if p + 1 < len(prompt):        # still in the prompt: its next token, not the pick
            tok = prompt[p + 1]
        else:
            out.append(tok)
    return np.array(out, dtype=np.int32)


def torch_generate(m: Model, prompt, n_tokens: int, graph: bool = False,
                   warmup: int = 3) -> DecodeResult:
    """The same model in PyTorch on the GPU, eager or replaying a ``torch.cuda.CUDAGraph``.

    Only for backend "cuda" with torch installed. Like the numba version it keeps the token
    and the position in device tensors, so one captured step serves every token.
    """
    import torch
    prompt = prompt_tokens(prompt)
    _check_len(m.cfg, n_tokens, len(prompt))
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

    # warm up on a side stream, as PyTorch's CUDA-graph notes do: the side stream first waits
    # for the current stream (which made the tensors above), and the current stream for it after
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warmup):
            pos.zero_()
            one_step()
    torch.cuda.current_stream().wait_stream(s)
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
    tok.fill_(prompt[0])
    pos.zero_()
    t0 = host_us()
    for nxt in prompt[1:]:         # the prefill: eager, the prompt's tokens but the last
        one_step()
        tok.fill_(nxt)
    torch.cuda.synchronize()
    prefill = host_us() - t0
    lat = []
    for _ in range(n_tokens):
        t0 = host_us()
        run()
        torch.cuda.synchronize()
        lat.append(host_us() - t0)
    P = len(prompt) - 1
    toks = hist.cpu().numpy()[P:P + n_tokens].astype(np.int32)
    return DecodeResult(toks, np.array(lat), setup, -1, prefill)
