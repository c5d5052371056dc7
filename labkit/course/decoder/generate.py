"""Greedy decoding on the GPU path: launching each step's kernels, or replaying one graph."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backends import rt as _rt
from ..._capture import capture
from ..._errors import check
from ..._handles import stream_handle
from ...backends import host_us
from .kernels import load_prompt
from .model import Model, _check_len, prompt_tokens, step

__all__ = ["DecodeResult", "generate_eager", "capture_step", "generate_graph", "prefill",
           "generated", "reset"]


@dataclass
class DecodeResult:
    """Generated ``tokens``; each decode step's host latency ``token_us`` (launch to done);
    the one-off ``setup_us`` (capture + instantiate + upload for a graph; 0 for eager); the
    ``kernels_per_token``; and ``prefill_us``, the eager prefill of the prompt's tokens but
    the last (0 for a one-token prompt); ``note``, what a framework's row says about itself
    (whether PyTorch really replayed CUDA graphs).

    Time to first token is the prefill and the first step; the inter-token latencies are the
    steps after it."""
    tokens: np.ndarray
    token_us: np.ndarray
    setup_us: float
    kernels_per_token: int
    prefill_us: float = 0.0
    note: str = ""           # what a framework's row must say about itself (graphs used or not)

    @property
    def tokens_per_s(self) -> float:
        return 1e6 * len(self.token_us) / float(np.sum(self.token_us))

    @property
    def ttft_us(self) -> float:
        """Time to first token: the prefill, then the step that makes the first token."""
        return self.prefill_us + float(self.token_us[0])

    @property
    def inter_token_us(self) -> np.ndarray:
        """The time between one token and the next: each step after the first."""
        return np.asarray(self.token_us[1:])


def _sync(stream):
    if hasattr(stream, "synchronize"):   # a labkit.Stream: its sync is a span of a timeline
        stream.synchronize()
    else:
        check(_rt.cudaStreamSynchronize(stream_handle(stream)), "synchronize")


def reset(m: Model, prompt_token: int, stream):
    """Put the decoder at position 0 with token ``prompt_token`` (waits for ``stream`` first)."""
    # Synchronous copies on the legacy stream: the decode stream is idle here (we synchronized
    # it), and a synchronous copy is done when it returns.
    _sync(stream)
    m.state["tok"].copy_to_device(np.array([prompt_token], np.int32))
    m.state["pos"].copy_to_device(np.zeros(1, np.int32))



def _warm(m: Model, stream):
    """Run one step so numba has compiled and loaded every kernel before timing or capture."""
    if not m.warm:
        reset(m, 0, stream)
        step(m, stream)
        load_prompt[1, 1, stream](m.state["prompt"], m.state["pos"], m.state["tok"])
        _sync(stream)
        m.warm = True


def prefill(m: Model, prompt, stream) -> float:
    """Run the prompt through the model eagerly; returns its host time (µs).

    Every prompt token but the last goes through one decode step, which fills its row of the
    KV cache; after each, ``load_prompt`` puts the prompt's next token (not the model's pick)
    in the token buffer. The decoder is then at the prompt's last token, and each step from
    there (eager or a graph replay) makes one new token. (A serving engine runs the prompt as
    one batched pass of matrix-matrix products; here it is one position at a time, which is
    the same arithmetic.)
    """
    toks = prompt_tokens(prompt)
    _check_len(m.cfg, 1, len(toks))
    _warm(m, stream)
    reset(m, toks[0], stream)
    buf = np.zeros(m.cfg.max_seq, np.int32)
    buf[:len(toks)] = toks
    m.state["prompt"].copy_to_device(buf)
    s = m.state
    t0 = host_us()
    for _ in toks[1:]:
        step(m, stream)
        load_prompt[1, 1, stream](s["prompt"], s["pos"], s["tok"])
    _sync(stream)
    return host_us() - t0


def generated(m: Model, prompt, n_tokens: int) -> np.ndarray:
    """The ``n_tokens`` tokens the decoder made after ``prompt`` (read back from the device)."""
    first = len(prompt_tokens(prompt)) - 1
    return m.state["history"].copy_to_host()[first:first + n_tokens].copy()


def generate_eager(m: Model, prompt, n_tokens: int, stream) -> DecodeResult:
    """Greedy decode launching each step's kernels one by one, after an eager `prefill`.

    The token never leaves the device inside the loop: the only host wait per token is one
    stream synchronize at its end, there to time it; the tokens are copied back once.
    """
    _check_len(m.cfg, n_tokens, len(prompt_tokens(prompt)))
    _warm(m, stream)
    pre = prefill(m, prompt, stream)
    lat, n = [], 0
    for _ in range(n_tokens):
        t0 = host_us()
        n = step(m, stream)
        _sync(stream)
        lat.append(host_us() - t0)
    return DecodeResult(generated(m, prompt, n_tokens), np.array(lat), 0.0, n, pre)


def capture_step(m: Model, stream):
    """Capture one decode step into an instantiated, uploaded `labkit.GraphExec`."""
    _warm(m, stream)
    with capture(stream) as cap:
        step(m, stream)
    ex = cap.graph.instantiate()
    ex.upload(stream)
    _sync(stream)
    return ex


def generate_graph(m: Model, prompt, n_tokens: int, stream, exec_=None) -> DecodeResult:
    """Greedy decode replaying one captured step per token (captured here unless ``exec_``
    is given), after an eager `prefill`. Between replays nothing on the host changes: the
    graph reads the position and the token from device memory and its last kernels write the
    next ones there."""
    _check_len(m.cfg, n_tokens, len(prompt_tokens(prompt)))
    _warm(m, stream)
    t0 = host_us()
    ex = exec_ if exec_ is not None else capture_step(m, stream)
    setup = host_us() - t0 if exec_ is None else 0.0
    pre = prefill(m, prompt, stream)
    lat = []
    for _ in range(n_tokens):
        t0 = host_us()
        ex.launch(stream)
        _sync(stream)
        lat.append(host_us() - t0)
    return DecodeResult(generated(m, prompt, n_tokens), np.array(lat), setup,
                        m.cfg.kernels_per_token, pre)
