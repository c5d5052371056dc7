"""Notebook 09's exercise: a broken graph decode with three planted bugs, and its check.

The decode captures one step of the capstone's decoder (`labkit.course.decoder`) with
`labkit.captured` and replays it once per token. `broken_decode` carries three bugs a learner
finds with the notebook's method: a sync inside the capture, a buffer freed while the
executable still uses it, and a stale input (a name rebound instead of a copy into the captured
buffer). `check_decode` runs a learner's ``decode(model, prompt_token, n_tokens, stream)`` on
a fresh model and compares its tokens with numpy's (`labkit.course.decoder.reference_generate`).

``variant(...)`` builds the decode with any subset of the bugs fixed: the tests prove the check
rejects each partially fixed version. On the simulator the freed buffer is always caught (its
replay is ``cudaErrorIllegalAddress``); on a GPU a replay into freed memory is undefined: a
sticky 700, or reads and writes that happen to work, so there only the other two bugs are
caught for certain.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .. import decoder as dec
from ..._compare import captured
from ..._eager import graphs_are_eager
from ..._errors import CudaError, check
from ..._kernel import to_device
from ..._handles import stream_handle
from ...backends import is_gpu, reset_after_fault, rt

__all__ = ["RawArray", "raw_array", "new_model", "start", "variant", "broken_decode",
           "check_decode", "PROMPT", "N_TOKENS"]

PROMPT, N_TOKENS = 7, 8
_MODEL = dict(seed=9, n_layers=2, max_seq=32)   # small: the check runs in well under a second


class RawArray:
    """A device array over memory you allocated yourself (``cudaMalloc``): its address, shape
    and dtype, nothing more. labkit cannot keep such memory alive: it is yours to free, after
    every executable that uses it is gone."""

    def __init__(self, ptr, shape, dtype):
        self.ptr = int(ptr)
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape))
        self.nbytes = self.size * self.dtype.itemsize
        self.ndim = len(self.shape)
        self.strides = tuple(int(np.prod(self.shape[i + 1:])) * self.dtype.itemsize
                             for i in range(self.ndim))

    @property
    def device_ctypes_pointer(self):
        return ctypes.c_void_p(self.ptr)

    @property
    def __cuda_array_interface__(self):    # how numba takes it as a kernel argument on a GPU
        return {"shape": self.shape, "strides": None, "typestr": self.dtype.str,
                "data": (self.ptr, False), "version": 3, "stream": None}

    def __len__(self):
        return self.shape[0]

    def copy_to_host(self):
        out = np.empty(self.shape, self.dtype)
        check(rt.cudaMemcpy(out.ctypes.data, self.ptr, self.nbytes,
                            rt.cudaMemcpyKind.cudaMemcpyDeviceToHost), "copying a RawArray back")
        return out

    def __repr__(self):
        return f"<RawArray {self.shape} {self.dtype} at {self.ptr:#x}>"


def raw_array(ptr, shape, dtype=np.float64) -> RawArray:
    """A `RawArray` over ``ptr`` (from ``cudaMalloc``)."""
    return RawArray(ptr, shape, dtype)


def new_model():
    """The exercise's decoder (small, seeded: the same for everyone)."""
    return dec.make_model(**_MODEL)


def start(m, prompt_token: int):
    """Put the prompt token and position 0 into the model's token and position buffers
    (synchronous copies: call it while the decode stream is idle)."""
    m.state["tok"].copy_to_device(np.array([prompt_token], np.int32))
    m.state["pos"].copy_to_device(np.zeros(1, np.int32))


def variant(stale_input=True, freed_buffer=True, sync_in_capture=True):
    """The decode with the chosen bugs left in (all three: `broken_decode`; none: a solution)."""

    def decode(m, prompt_token, n_tokens, stream):
        scratch = check(rt.cudaMalloc(m.cfg.vocab * 8), "cudaMalloc")   # the logits' buffer
        m.state["logits"] = raw_array(scratch, m.cfg.vocab)
        start(m, 0)                             # warm up: every kernel compiled and loaded
        dec.step(m, stream)
        stream.synchronize()

        def one_token(st):
            dec.step(m, st)
            if sync_in_capture:
                st.synchronize()
        step = captured(one_token)
        step.capture(stream)                    # captured once, before decoding
        if freed_buffer:
            check(rt.cudaFree(scratch), "cudaFree")      # "the graph is built: done with it"
        if stale_input:
            m.state["tok"] = to_device(np.array([prompt_token], np.int32))
            m.state["pos"] = to_device(np.zeros(1, np.int32))
        else:
            start(m, prompt_token)
        for _ in range(n_tokens):
            step(stream)
        stream.synchronize()
        tokens = m.state["history"].copy_to_host()[:n_tokens]
        step.close()
        if not freed_buffer:
            check(rt.cudaFree(scratch), "cudaFree")      # after the executable is gone
        return tokens

    return decode


broken_decode = variant()


def _refuse_a_leak(m) -> None:
    """On the simulator, refuse a decode that never frees its ``cudaMalloc``'d buffer (deleting
    the free is the tempting fix for the 700). A freed pointer there answers
    ``cudaPointerGetAttributes`` with an error; on a GPU the address may be reused at once, so
    a live answer proves nothing and this check is skipped."""
    if is_gpu:
        return
    for name, arr in m.state.items():
        if isinstance(arr, RawArray):
            err = rt.cudaPointerGetAttributes(arr.ptr)[0]
            rt.cudaGetLastError()
            if int(err) == 0:
                raise AssertionError(
                    f"decode returned with the buffer behind m.state[{name!r}] still "
                    "allocated: memory you cudaMalloc is yours to free, and a decode called "
                    "once per request would leak it every time. When is it safe to free it?")


def check_decode(decode, stream) -> np.ndarray:
    """Check ``decode(model, prompt_token, n_tokens, stream)``: on a fresh model, the tokens
    it returns must be numpy's for `PROMPT`. Returns them."""
    m = new_model()
    want = dec.reference_generate(m, PROMPT, N_TOKENS)
    pos0 = m.state["pos"]          # the position buffer a decode that rebinds nothing captures
    launch, begin, free = rt.cudaGraphLaunch, rt.cudaStreamBeginCapture, rt.cudaFree
    replays, captures, early_frees = [0], [0], []
    # With the eager switch on from outside (LABKIT_GRAPHS=eager, or decode run under
    # labkit.eager() by whoever calls the check), no graph is meant to launch: count only when off.
    switched_on = graphs_are_eager()

    def counted_launch(*args, **kwargs):
        replays[0] += 1
        return launch(*args, **kwargs)

    def counted_begin(*args, **kwargs):
        captures[0] += 1
        return begin(*args, **kwargs)

    def watched_free(ptr, *args, **kwargs):
        # a buffer freed while replays queued on the decode stream have not finished: on a GPU
        # cudaFree happens to wait for them, but nothing in the code does
        raw = {a.ptr for a in m.state.values() if isinstance(a, RawArray)}
        if (replays[0] and int(ptr) in raw
                and int(rt.cudaStreamQuery(stream_handle(stream))[0]) == 600):
            early_frees.append(int(ptr))
        rt.cudaGetLastError()
        return free(ptr, *args, **kwargs)
    try:
        rt.cudaGraphLaunch, rt.cudaStreamBeginCapture = counted_launch, counted_begin
        rt.cudaFree = watched_free
        got = decode(m, PROMPT, N_TOKENS, stream)
    except CudaError as e:
        rt.cudaGetLastError()
        if e.code in (900, 901):
            raise AssertionError(
                f"the capture failed with {e.name} ({e.code}): a call inside the capture is "
                "one a capture refuses. Which line of the captured code waits for work that "
                "has only been recorded?") from None
        if e.code == 700:
            if not is_gpu:      # sticky, as on a GPU; the simulator can go on, a GPU cannot
                reset_after_fault()
            raise AssertionError(
                f"a replay failed with {e.name} ({e.code}): a kernel of the graph touched "
                "memory that is no longer there. Which buffer does the graph still use after "
                "the code has let it go, and who keeps it alive?") from None
        raise AssertionError(f"decode raised {e.name} ({e.code}): {e.hint}") from None
    finally:
        rt.cudaGraphLaunch, rt.cudaStreamBeginCapture, rt.cudaFree = launch, begin, free
    if early_frees:
        raise AssertionError(
            "decode freed a buffer while replays that use it were still queued on the stream "
            "(launched, not yet waited for). A graph's memory must stay valid until every "
            "launch that uses it has finished: what must happen before the free?")
    _refuse_a_leak(m)
    got = np.asarray(got).reshape(-1)
    if got.shape != want.shape:
        raise AssertionError(f"decode returned {got.size} tokens; it must return the "
                             f"{N_TOKENS} tokens it generated")
    if not np.array_equal(got, want):
        first = int(np.argmax(got != want))
        if m.state.get("pos") is pos0 and int(pos0.copy_to_host()[0]) != N_TOKENS:
            raise AssertionError(
                f"the tokens differ from numpy's from token {first} on (got {got.tolist()}, "
                f"numpy {want.tolist()}). After {N_TOKENS} tokens the graph's position buffer "
                f"holds {int(pos0.copy_to_host()[0])}, not {N_TOKENS}: the replays did not "
                "start from position 0. What did the warm-up leave in it?")
        raise AssertionError(
            f"the tokens differ from numpy's from token {first} on (got {got.tolist()}, numpy "
            f"{want.tolist()}). The graph ran without an error, so it computed from the wrong "
            "data: which buffers does the graph read, and are they the ones holding the "
            "prompt? (Run decode with labkit.eager() and compare.)")
    if not switched_on and replays[0] < N_TOKENS:
        raise AssertionError(
            f"the tokens are right, but decode launched a graph {replays[0]} times for "
            f"{N_TOKENS} tokens: it ran the step without its graph, which hides the bugs "
            "instead of fixing them. Keep the capture, and replay it once per token")
    if not switched_on and captures[0] > 1:
        raise AssertionError(
            f"the tokens are right, but decode captured {captures[0]} times for {N_TOKENS} "
            "tokens: a capture and its instantiation cost far more than a replay, so a graph "
            "pays only when it is captured once and replayed. Capture before the loop")
    return got
