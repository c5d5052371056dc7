"""The decoder's configuration, weights and device buffers, and one decode step's launches."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..._kernel import device_array, to_device
from .kernels import (TPB, advance, argmax, attn_out, attn_scores, embed, matvec, residual_add,
                      rmsnorm, silu, softmax, store_kv)

__all__ = ["Config", "Model", "make_model", "step", "step_to_token", "launches", "prompt_tokens"]


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
        "prompt": device_array(c.max_seq, np.int32),
        "kc": [device_array((c.max_seq, D), f8) for _ in range(c.n_layers)],
        "vc": [device_array((c.max_seq, D), f8) for _ in range(c.n_layers)],
    }
    return m


def _blocks(n: int) -> int:
    return (n + TPB - 1) // TPB


def step(m: Model, stream) -> int:
    """Launch one decode step on ``stream``; returns the number of kernels launched.

    Reads the token and position from device memory and leaves the next token and position
    there, so the same launches (or their captured graph) serve every token: `step_to_token`,
    then ``advance`` moves the position on.
    """
    n = step_to_token(m, stream)
    advance[1, 1, stream](m.state["pos"])
    return n + 1


def step_to_token(m: Model, stream) -> int:
    """A decode step up to the next token, without its last kernel (``advance``).

    The step's kernels but the last, which moves the position on: a caller that needs more
    from that last single-thread kernel (the device loop's stop test,
    `labkit.course.device_loop.advance_or_stop`) launches its own instead, so its loop body
    has exactly as many kernels as `step`. Returns the number of kernels launched.
    """
    n = 0
    for kern, grid, block, args in launches(m.cfg, m.dev, m.state):
        kern[grid, block, stream](*args)
        n += 1
    return n


def launches(c: Config, d: dict, s: dict):
    """The launches of `step_to_token`, in order: ``(kernel, grid, block, args)``.

    ``d`` holds the weights and ``s`` the buffers (`Model.dev`, `Model.state`); anything with
    ``nbytes`` and ``shape`` will do, which is how `labkit.course.decoder.whatif` prices the
    same step at sizes no simulator could hold.
    """
    D, H = c.d_model, c.n_heads
    g = _blocks(D)
    yield embed, g, TPB, (d["E"], d["Pe"], s["tok"], s["pos"], s["x"])
    for li, lw in enumerate(d["layers"]):
        kc, vc = s["kc"][li], s["vc"][li]
        yield rmsnorm, 1, TPB, (s["x"], lw["norm1"], s["h"])
        yield matvec, D, TPB, (lw["Wq"], s["h"], s["q"])
        yield matvec, D, TPB, (lw["Wk"], s["h"], s["k"])
        yield matvec, D, TPB, (lw["Wv"], s["h"], s["v"])
        yield store_kv, g, TPB, (s["k"], s["v"], kc, vc, s["pos"])
        yield attn_scores, H, TPB, (s["q"], kc, s["pos"], s["scores"])
        yield softmax, H, TPB, (s["scores"], s["pos"], s["probs"])
        yield attn_out, D, TPB, (s["probs"], vc, s["pos"], s["att"])
        yield matvec, D, TPB, (lw["Wo"], s["att"], s["o"])
        yield residual_add, g, TPB, (s["x"], s["o"])
        yield rmsnorm, 1, TPB, (s["x"], lw["norm2"], s["h"])
        yield matvec, c.d_ff, TPB, (lw["Wup"], s["h"], s["u"])
        yield silu, _blocks(c.d_ff), TPB, (s["u"],)
        yield matvec, D, TPB, (lw["Wdown"], s["u"], s["o"])
        yield residual_add, g, TPB, (s["x"], s["o"])
    yield rmsnorm, 1, TPB, (s["x"], d["norm_f"], s["h"])
    yield matvec, c.vocab, TPB, (d["W_out"], s["h"], s["logits"])
    yield argmax, 1, TPB, (s["logits"], s["tok"], s["history"], s["pos"])


def _check_len(c: Config, n_tokens: int, prompt_len: int = 1):
    if not 1 <= n_tokens <= c.max_seq - (prompt_len - 1):
        raise ValueError(f"n_tokens must be 1..max_seq ({c.max_seq}) less the prompt's "
                         f"{prompt_len - 1} prefilled tokens, got {n_tokens}")


def prompt_tokens(prompt) -> list[int]:
    """A prompt as a list of token ids: one id (an ``int``) or a sequence of them."""
    toks = [int(prompt)] if np.ndim(prompt) == 0 else [int(t) for t in prompt]
    if not toks:
        raise ValueError("the prompt needs at least one token")
    return toks
