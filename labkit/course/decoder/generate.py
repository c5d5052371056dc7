"""Greedy decoding on the GPU path: launching each step's kernels, or replaying one graph."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend import rt as _rt
from ..._capture import capture
from ..._errors import check
from ..._handles import stream_handle
from ...backend import host_us
from .model import Model, _check_len, step

__all__ = ["DecodeResult", "generate_eager", "capture_step", "generate_graph"]


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


def _sync(stream):
    if hasattr(stream, "synchronize"):   # a labkit.Stream: its sync is a span of a timeline
        stream.synchronize()
    else:
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
