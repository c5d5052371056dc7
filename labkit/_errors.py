"""CudaError, `check`, and the hints that tell a learner what to change.

Both backends return cuda-python's ``(err, *values)`` tuples; `check` turns a failure into
an exception whose message has the error's name, CUDA's own description and a hint.
"""
from __future__ import annotations

from cuda.bindings import runtime as _names  # enums and error strings only: needs no GPU

__all__ = ["CudaError", "check", "hint_for"]

_HINTS = {
    1: "an argument is invalid: check handles, sizes and pointers (a host pointer where a "
       "device pointer is expected is a common cause)",
    2: "the GPU is out of memory: free arrays you no longer need or use smaller problems",
    35: "the CUDA driver is missing or older than the runtime: on a machine without a GPU use "
        "LABKIT_BACKEND=sim",
    100: "no CUDA GPU was found: use LABKIT_BACKEND=sim (the CPU simulator) or run on a GPU host",
    400: "the handle is not valid any more: it was destroyed (or never created); create a new "
         "stream/event/graph",
    600: "the work is not finished yet; this is a status, not a failure: synchronize or poll again",
    700: "a kernel accessed memory it must not: check indices against array sizes, and that no "
         "graph replays into a freed buffer",
    900: "this call is not allowed on a capturing stream (or in this capture's mode). Usual "
         "causes: the legacy NULL stream 0 (capture a stream you created, labkit.Stream()); a "
         "synchronize or query of the capturing stream (do it after cudaStreamEndCapture); an "
         "allocation or free in global mode (do it before the capture); a numpy array passed "
         "to a numba kernel (numba would allocate a temporary device buffer: pass device "
         "arrays). A refused call inside a capture also invalidates it",
    901: "the capture was invalidated by an earlier illegal call inside it; the graph is lost. "
         "End the capture, fix the call that failed first (often a synchronize or a host array), "
         "and capture again",
    902: "two separate captures would be merged: do not make a stream of one capture wait on an "
         "event recorded in another",
    903: "the capture was not ended on the stream that began it: call cudaStreamEndCapture on the "
         "origin stream, after joining the other streams back into it",
    904: "a stream forked into the capture has work that was never joined back: record an event "
         "on it and make the origin stream wait on that event before ending the capture",
    905: "the capture would depend on work outside it: only wait on events recorded inside the "
         "same capture (or synchronize before beginning it)",
    906: "the legacy NULL stream would wait on a capturing blocking stream: capture streams made "
         "with cudaStreamNonBlocking and do not use stream 0 while capturing",
    907: "this event was last recorded in a capturing stream, so it has no time yet: query, "
         "synchronize or time events after the graph has been launched",
    908: "a thread-local capture must be ended by the thread that began it",
    910: "the new graph differs from the executable in a way an update cannot express (a node "
         "added or removed, a node of another type): instantiate the new graph instead",
}


def hint_for(code: int) -> str:
    """Return labkit's advice for a cudaError_t value (an empty string where it has none)."""
    return _HINTS.get(int(code), "")


def _describe(code: int) -> tuple[str, str]:
    try:
        enum = _names.cudaError_t(int(code))
    except ValueError:
        return f"cudaError {int(code)}", "unknown error code"
    name = enum.name
    err, text = _names.cudaGetErrorString(enum)
    return name, text.decode() if isinstance(text, bytes) else str(text)


class CudaError(RuntimeError):
    """A CUDA call failed.

    Attributes
    ----------
    code : int
        The ``cudaError_t`` value.
    name : str
        Its name, e.g. ``"cudaErrorStreamCaptureUnsupported"``.
    hint : str
        What usually causes it and what to change.
    """

    def __init__(self, code, context: str = "", hint: str | None = None):
        self.code = int(code)
        self.name, self.description = _describe(self.code)
        self.hint = hint_for(self.code) if hint is None else hint
        self.context = context
        where = f"{context}: " if context else ""
        msg = f"{where}{self.name} ({self.code}): {self.description}"
        if self.hint:
            msg += f"\n  hint: {self.hint}"
        super().__init__(msg)


def check(result, context: str = ""):
    """Check a cuda-python result tuple and return its values.

    Parameters
    ----------
    result : tuple
        What a ``labkit.rt`` call returned: ``(err, *values)``.
    context : str, optional
        Words that say what was being done, put at the start of the message.

    Returns
    -------
    None, the single value, or a tuple of the values.

    Raises
    ------
    CudaError
        If ``err`` is not ``cudaSuccess``.
    """
    if not isinstance(result, tuple):
        result = (result,)
    err, values = result[0], result[1:]
    if int(err) != 0:
        raise CudaError(err, context)
    if not values:
        return None
    return values[0] if len(values) == 1 else values
