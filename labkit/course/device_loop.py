"""The capstone's decoder as one WHILE graph: a whole generation in one ``cudaGraphLaunch``.

The graph is ``start`` (token, position and stop flag set from a control buffer) followed by a
WHILE node whose body is one decode step: `labkit.course.decoder.step_to_token` (the step's
kernels but its last) and `advance_or_stop`, which does the step's last kernel's work (the
position moves on) and, in the same single thread, sets the loop's condition to 0 once the step
produced the end-of-sequence token or the position reached the token limit. So the body has
exactly the kernels of one step (65): the stop test costs no kernel of its own, and the loop's
only extra GPU work per token is the WHILE iteration itself. Everything the loop decides on
lives in device memory:

* ``ctl`` (int32): ``[eos, limit, prompt_token]``, written by the host only when they change;
* the decoder's own ``tok``, ``pos`` and ``history``;
* ``done`` (int32): 1 once the loop has stopped, 2 if it stopped at EOS.

The host launches once and waits once, on an event made with ``cudaEventBlockingSync`` so the
waiting thread sleeps instead of spinning: the host CPU time of a generation is its launch plus
one sleeping wait (the wake-up included), whatever its length, so the CPU per token falls as
the generation grows. `LoopResult` keeps the two parts apart. What this cannot do: anything per
token that needs the host (sampling with host randomness, a stop rule written in Python).

`StreamingLoop` is the same graph whose last kernel, `advance_stop_publish`, also publishes each
token as it is made to mapped pinned host memory (`labkit.mapped_array`): the host reads the
tokens as they arrive, with no launch per token, so it can stream them to a client. The price:
a host thread that watches the counter (spinning, so its CPU time is the generation's).

`k_per_launch` is the middle way between one graph per token and the device loop: a graph of
``k`` steps (`capture_steps`), launched until the host, which reads the ``k`` tokens after each
launch, finds the end-of-sequence token among them. The check comes late: the steps after EOS
in the last launch run for nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import cuda

from . import decoder as dec
from .decoder.generate import _warm
from .decoder.kernels import _bytes_cost, _step_cost
from .._errors import check
from .._handles import stream_handle
from .._kernel import kernel, to_device
from .._capture import capture
from .._mapped import mapped_array
from ..backends import cpu_us, host_us, rt
from ..conditional import conditional_graph, set_condition

__all__ = ["DeviceLoop", "StreamingLoop", "build", "generate", "reference_until_eos",
           "LoopResult", "StreamResult", "start", "advance_or_stop", "advance_stop_publish",
           "capture_steps", "k_per_launch", "KResult", "eos_for"]


def _start_ref(grid, block, ctl, tok, pos, done):
    tok[0] = ctl[2]
    pos[0] = 0
    done[0] = 0


@kernel(reference=_start_ref, cost=_bytes_cost)
def start(ctl, tok, pos, done):
    """Begin a generation on the device: token = the prompt, position 0, not done."""
    if cuda.grid(1) == 0:
        tok[0] = ctl[2]
        pos[0] = 0
        done[0] = 0


def _advance_or_stop_ref(grid, block, ctl, tok, pos, done, h):
    pos[0] += 1
    if int(tok[0]) == int(ctl[0]) or int(pos[0]) >= int(ctl[1]):
        done[0] = 2 if int(tok[0]) == int(ctl[0]) else 1
        set_condition(h, 0)


@kernel(reference=_advance_or_stop_ref, cost=_step_cost)
def advance_or_stop(ctl, tok, pos, done, h):
    """The loop body's last kernel: the step's ``advance`` (pos += 1), then stop the loop at
    the end-of-sequence token or at the token limit."""
    if cuda.grid(1) == 0:
        p = pos[0] + 1
        pos[0] = p
        if tok[0] == ctl[0] or p >= ctl[1]:
            done[0] = 2 if tok[0] == ctl[0] else 1
            set_condition(h, 0)


def _publish_ref(grid, block, ctl, tok, pos, done, out, h):
    _advance_or_stop_ref(grid, block, ctl, tok, pos, done, h)
    p = int(pos[0])
    out[2 + p - 1] = tok[0]
    out[1] = done[0]
    out[0] = p


@kernel(reference=_publish_ref, cost=_step_cost)
def advance_stop_publish(ctl, tok, pos, done, out, h):
    """`advance_or_stop`, and publish the token just made to mapped host memory ``out``:
    ``out[2 + i]`` is token ``i``, ``out[0]`` how many tokens there are and ``out[1]`` the stop
    code (2 at EOS). Each is written after a system-wide fence, so a host that sees the count
    sees its tokens, and a host that sees the stop code sees the final count."""
    if cuda.grid(1) == 0:
        p = pos[0] + 1
        pos[0] = p
        out[2 + p - 1] = tok[0]
        cuda.threadfence_system()
        out[0] = p
        if tok[0] == ctl[0] or p >= ctl[1]:
            done[0] = 2 if tok[0] == ctl[0] else 1
            cuda.threadfence_system()
            out[1] = done[0]
            set_condition(h, 0)


@dataclass
class LoopResult:
    """One generation: ``tokens``, the ``wall_us`` from launch to done, the host ``cpu_us``
    spent on it (this process's CPU time, every thread, from before the launch to after the
    wait), of which ``launch_cpu_us`` before the wait, and whether it ``stopped_at_eos``."""
    tokens: np.ndarray
    wall_us: float
    cpu_us: float
    stopped_at_eos: bool
    launch_cpu_us: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        return 1e6 * len(self.tokens) / self.wall_us

    @property
    def us_per_token(self) -> float:
        return self.wall_us / max(len(self.tokens), 1)

    @property
    def cpu_us_per_token(self) -> float:
        return self.cpu_us / max(len(self.tokens), 1)


class DeviceLoop:
    """An instantiated whole-generation graph for model ``m`` (see the module's docstring)."""

    def __init__(self, m: dec.Model, stream):
        self.m, self.stream = m, stream
        s = m.state
        self.ctl = to_device(np.array([-1, m.cfg.max_seq, 0], np.int32))
        self.done = to_device(np.zeros(1, np.int32))
        self.out = self._mapped()
        _warm(m, stream)
        g = conditional_graph()
        with g.capture(stream) as head:
            start[1, 1, stream](self.ctl, s["tok"], s["pos"], self.done)
        cond = g.condition(default=1)
        body = g.while_loop(cond, deps=head.nodes)
        with body.capture(stream):
            dec.step_to_token(m, stream)
            self._last_kernel(stream, cond)
        self.graph, self.condition, self.body = g, cond, body
        # CUDA refuses the Upload instantiate flag on a graph with conditional nodes; a one-token run
        # here does the upload, so no timed run() pays it
        self.exec = g.instantiate()
        self._h = stream_handle(stream)
        # the host sleeps on this event instead of spinning: its CPU time is what we measure
        flags = rt.cudaEventBlockingSync | rt.cudaEventDisableTiming
        self._ev = check(rt.cudaEventCreateWithFlags(flags), "cudaEventCreateWithFlags")
        self._params = None
        self.run(0, 1)

    def _mapped(self):
        return None

    def _last_kernel(self, stream, cond):
        s = self.m.state
        advance_or_stop[1, 1, stream](self.ctl, s["tok"], s["pos"], self.done, cond.arg)

    def set(self, prompt_token: int, limit: int, eos: int = -1):
        """Write the control buffer (only when it changes: a host-to-device copy)."""
        if not 1 <= limit <= self.m.cfg.max_seq:
            raise ValueError(f"limit must be 1..max_seq ({self.m.cfg.max_seq}), got {limit}")
        p = (int(eos), int(limit), int(prompt_token))
        if p != self._params:
            check(rt.cudaStreamSynchronize(self._h), "synchronize")
            self.ctl.copy_to_device(np.array(p, np.int32))
            self._params = p

    def run(self, prompt_token: int, limit: int, eos: int = -1) -> LoopResult:
        """One generation: one launch, one (sleeping) wait, then the tokens are read back."""
        self.set(prompt_token, limit, eos)
        w0, c0 = host_us(), cpu_us()
        self.exec.launch(self.stream)
        check(rt.cudaEventRecord(self._ev, self._h), "cudaEventRecord")
        c1 = cpu_us()
        check(rt.cudaEventSynchronize(self._ev), "cudaEventSynchronize")
        wall, cpu = host_us() - w0, cpu_us() - c0
        n = int(self.m.state["pos"].copy_to_host()[0])
        toks = self.m.state["history"].copy_to_host()[:n].copy()
        done = int(self.done.copy_to_host()[0])
        return LoopResult(toks, wall, cpu, done == 2, c1 - c0)

    def close(self):
        rt.cudaEventDestroy(self._ev)
        self.out = None
        self.exec.close()
        self.graph.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class StreamResult:
    """One streamed generation: ``tokens``, the host time each was seen (``arrival_us``, from
    the launch), ``wall_us`` from the launch until the host saw the last, the host ``cpu_us``,
    and whether it ``stopped_at_eos``."""
    tokens: np.ndarray
    arrival_us: np.ndarray
    wall_us: float
    cpu_us: float
    stopped_at_eos: bool

    @property
    def tokens_per_s(self) -> float:
        return 1e6 * len(self.tokens) / self.wall_us

    @property
    def ttft_us(self) -> float:
        """Time to first token: from the launch until the host saw token 0."""
        return float(self.arrival_us[0])

    @property
    def inter_token_us(self) -> np.ndarray:
        """The time between one token's arrival at the host and the next one's."""
        return np.diff(self.arrival_us)


class StreamingLoop(DeviceLoop):
    """The device loop that publishes every token to mapped host memory as it makes it.

    One launch per generation, as `DeviceLoop`; the body's last kernel is
    `advance_stop_publish`. `run` reads the tokens as they arrive (see the module's text)."""

    def _mapped(self):
        return mapped_array(2 + self.m.cfg.max_seq, np.int32)

    def _last_kernel(self, stream, cond):
        s = self.m.state
        advance_stop_publish[1, 1, stream](self.ctl, s["tok"], s["pos"], self.done,
                                           self.out.device, cond.arg)

    def run(self, prompt_token: int, limit: int, eos: int = -1) -> StreamResult:
        """One generation: one launch; the host takes each token as it arrives."""
        self.set(prompt_token, limit, eos)
        self.out.host[:2] = 0          # the count and the stop code (the GPU is idle here)
        w0, c0 = host_us(), cpu_us()
        self.exec.launch(self.stream)
        check(rt.cudaEventRecord(self._ev, self._h), "cudaEventRecord")
        seen = []
        for count, t in self.out.arrivals(0, 1):
            seen.extend([t - w0] * (count - len(seen)))   # every token up to the count
        wall, cpu = host_us() - w0, cpu_us() - c0
        check(rt.cudaEventSynchronize(self._ev), "cudaEventSynchronize")
        n = len(seen)
        toks = self.out.host[2:2 + n].copy()
        return StreamResult(toks, np.array(seen), wall, cpu, int(self.out.host[1]) == 2)


def capture_steps(m: dec.Model, stream, k: int):
    """``k`` decode steps captured back to back in one instantiated graph: one launch, ``k``
    tokens (notebook 07's exercise)."""
    dec.capture_step(m, stream).close()      # compiled and loaded outside the capture
    with capture(stream) as cap:
        for _ in range(k):
            dec.step(m, stream)
    ex = cap.graph.instantiate()
    ex.upload(stream)
    return ex


@dataclass
class KResult:
    """A generation of ``k`` steps per launch: ``tokens`` (up to EOS), the host time each was
    seen (``arrival_us``, from the first launch), ``wall_us``, host ``cpu_us``, the ``wasted``
    steps that ran after EOS, and whether it ``stopped_at_eos``."""
    tokens: np.ndarray
    arrival_us: np.ndarray
    wall_us: float
    cpu_us: float
    wasted: int
    stopped_at_eos: bool

    @property
    def tokens_per_s(self) -> float:
        return 1e6 * len(self.tokens) / self.wall_us

    @property
    def inter_token_us(self) -> np.ndarray:
        return np.diff(self.arrival_us)


def k_per_launch(m: dec.Model, ex, k: int, prompt_token: int, limit: int, stream,
                 eos: int = -1) -> KResult:
    """Greedy decode with ``ex`` (``k`` steps per launch, from `capture_steps`): launch, wait,
    read the ``k`` new tokens, stop at the first EOS among them or before passing ``limit``."""
    dec.reset(m, prompt_token, stream)
    h = stream_handle(stream)
    toks, arrivals = [], []
    w0, c0 = host_us(), cpu_us()
    wasted, at_eos = 0, False
    while len(toks) + k <= limit:
        ex.launch(stream)
        check(rt.cudaStreamSynchronize(h), "synchronize")
        new = m.state["history"].copy_to_host()[len(toks):len(toks) + k]
        t = host_us() - w0
        hits = np.flatnonzero(new == eos)
        if len(hits):
            new, wasted, at_eos = new[:hits[0] + 1], k - hits[0] - 1, True
        toks.extend(int(x) for x in new)
        arrivals.extend([t] * len(new))
        if at_eos:
            break
    return KResult(np.array(toks, np.int32), np.array(arrivals), host_us() - w0,
                   cpu_us() - c0, wasted, at_eos)


def build(m: dec.Model, stream) -> DeviceLoop:
    """Capture and instantiate model ``m``'s whole-generation WHILE graph."""
    return DeviceLoop(m, stream)


def generate(m: dec.Model, prompt_token: int, limit: int, stream, eos: int = -1,
             loop: DeviceLoop | None = None) -> LoopResult:
    """Greedy decode on the device until ``eos`` (included) or ``limit`` tokens."""
    loop = loop or build(m, stream)
    return loop.run(prompt_token, limit, eos)


def reference_until_eos(m: dec.Model, prompt_token: int, limit: int, eos: int = -1) -> np.ndarray:
    """numpy's tokens, cut after the first ``eos`` (what the device loop must produce)."""
    ref = dec.reference_generate(m, prompt_token, limit)
    hits = np.flatnonzero(ref == eos)
    return ref[:hits[0] + 1] if len(hits) else ref


def eos_for(ref: np.ndarray, n: int) -> tuple[int, int]:
    """An end-of-sequence token that stops ``ref`` at about ``n`` tokens: ``(eos, tokens)``.

    The token at position ``n - 1``, or the nearest earlier one that appears there first."""
    for k in range(min(n, len(ref)) - 1, -1, -1):
        if int(ref[k]) not in ref[:k].tolist():
            return int(ref[k]), k + 1
    return -1, n
