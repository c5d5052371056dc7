"""CudaError, `check`, and the hints that tell a learner what to change.

Both backends return cuda-python's ``(err, *values)`` tuples; `check` turns a failure into
an exception whose message has the error's name, CUDA's own description and a hint.
"""
from __future__ import annotations

from cuda.bindings import runtime as _names  # enums and error strings only: needs no GPU

__all__ = ["CudaError", "check", "hint_for", "decoder_ring", "DecoderRing"]

_HINTS = {
    1: "an argument is invalid: check handles, sizes and pointers (a host pointer where a "
       "device pointer is expected is a common cause); a graph relaunched while its last "
       "launch's allocation is unfreed: free it (cudaFreeAsync in the capture) or instantiate "
       "with cudaGraphInstantiateFlagAutoFreeOnLaunch",
    2: "the GPU is out of memory: free arrays you no longer need or use smaller problems",
    35: "the CUDA driver is missing or older than the runtime: on a machine without a GPU use "
        "LABKIT_BACKEND=sim",
    100: "no CUDA GPU was found: use LABKIT_BACKEND=sim (the CPU simulator) or run on a GPU host",
    400: "the handle is not valid any more: it was destroyed (or never created); create a new "
         "stream/event/graph",
    600: "the work is not finished yet; this is a status, not a failure: synchronize or poll again",
    700: "a kernel accessed memory it must not: check indices against array sizes, and that no "
         "graph replays into a freed buffer",
    900: "a call that is not allowed while a stream captures (or not in this capture's mode); "
         "refused inside a capture, it also invalidates that capture: stream 0, the legacy NULL "
         "stream, cannot be captured at all (capture a stream you created, labkit.Stream()); a "
         "synchronize or query of the capturing stream (do it after cudaStreamEndCapture); an "
         "allocation or free in global mode (do it before the capture, or cudaMallocAsync/"
         "cudaFreeAsync on the capturing stream); a numpy array passed to a numba kernel (numba "
         "needs a temporary device buffer for it; pass device arrays)",
    901: "the capture was invalidated by an earlier illegal call inside it, so the graph is "
         "lost: end the capture, fix the call that failed first (often a synchronize or a host "
         "array), and capture again",
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
    907: "this event was last recorded in a capturing stream, where a record only joins "
         "streams within the capture (a launch of the graph records nothing in it): record the "
         "event again outside the capture, after launching the graph, then query, synchronize "
         "or time it",
    908: "a global or thread-local capture was ended (or joined) from another thread than the "
         "one that began it: end it on the thread that began it, or capture in relaxed mode",
    910: "the new graph differs from the executable in a way an update cannot express (a node "
         "added or removed, a node of another type): instantiate the new graph instead",
}


# 900 has four usual causes; where the failing call is known, its error names only its own.
# (context word, hint): the first whose word the error's context holds, in any case.
_HINTS_900 = (
    ("begincapture", "stream 0, the legacy NULL stream, cannot be captured (no capture began, "
                     "so none was lost): capture a stream you created, labkit.Stream()"),
    ("on a host array", "numba needs a temporary device buffer for a numpy argument, and its "
                        "allocator refuses to allocate on a capturing stream; the capture is "
                        "lost: pass device arrays (labkit.to_device once, before the capture)"),
    ("synchroniz", "a synchronize while a stream captures would wait for work that only runs "
                   "when the graph is launched; the refusal invalidated the capture: "
                   "synchronize before cudaStreamBeginCapture or after cudaStreamEndCapture"),
    ("query", "a query of a capturing stream is refused, and the refusal invalidated the "
              "capture: query before cudaStreamBeginCapture or after cudaStreamEndCapture"),
    ("malloc", "an allocation is refused in a global-mode capture, and the refusal invalidated "
               "the capture: allocate before the capture, or cudaMallocAsync on the capturing "
               "stream (a graph memory node)"),
    ("free", "a free is refused in a global-mode capture, and the refusal invalidated the "
             "capture: free after the capture, or cudaFreeAsync on the capturing stream"),
)


def hint_for(code: int, context: str = "") -> str:
    """Return labkit's advice for a cudaError_t value (an empty string where it has none).

    ``context``: the failing call, as a `CudaError` names it. For 900, whose usual causes are
    four, a context that names the call gives the hint for that call alone; without one (the
    decoder ring) the hint lists them all.
    """
    code = int(code)
    if code == 900:
        where = context.lower()
        for word, hint in _HINTS_900:
            if word in where:
                return hint
    return _HINTS.get(code, "")


def _cause_and_fix(hint: str) -> tuple[str, str]:
    """A hint reads "likely cause: fix"; the first ": " divides them."""
    cause, sep, fix = hint.partition(": ")
    if not sep or not cause or not fix:
        raise ValueError(f"a hint must read 'likely cause: fix', got {hint!r}")
    return cause, fix


class DecoderRing:
    """The table error -> likely cause -> fix, one row per code labkit has a hint for.

    ``rows``: (code, name, likely cause, fix). Shown as an HTML table in a notebook; ``str()``
    is the same table in Markdown."""

    def __init__(self, rows):
        self.rows = rows

    def __str__(self):
        lines = ["| error | likely cause | fix |", "|---|---|---|"]
        for code, name, cause, fix in self.rows:
            lines.append(f"| `{name}` ({code}) | {cause} | {fix} |")
        return "\n".join(lines)

    def _repr_markdown_(self):
        return str(self)

    def _repr_html_(self):
        """The table as HTML: what a notebook and the course site show."""
        from html import escape
        top = ' style="vertical-align: top; text-align: left; overflow-wrap: anywhere"'
        cols = "".join(f'<col style="width: {w}%">' for w in (28, 32, 40))
        head = f"<tr><th{top}>error</th><th{top}>likely cause</th><th{top}>fix</th></tr>"
        body = "".join(f'<tr><td{top}><code style="word-break: break-all">{escape(name)}</code> '
                       f"({code})</td><td{top}>{escape(cause)}</td><td{top}>{escape(fix)}</td></tr>"
                       for code, name, cause, fix in self.rows)
        return (f'<table class="decoder-ring" style="table-layout: fixed; width: 100%">'
                f"{cols}{head}{body}</table>")

    def __repr__(self):
        return f"<labkit.DecoderRing {len(self.rows)} errors>"


def decoder_ring(codes=None) -> DecoderRing:
    """The error -> likely cause -> fix table, made from labkit's own hints (`hint_for`), so
    the table and the messages a `CudaError` carries never disagree.

    ``codes``: the cudaError_t values to show, in this order (default: every one with a hint).
    """
    codes = sorted(_HINTS) if codes is None else [int(c) for c in codes]
    rows = []
    for code in codes:
        hint = hint_for(code)
        if not hint:
            raise ValueError(f"labkit has no hint for error {code}: it has hints for "
                             f"{sorted(_HINTS)}")
        rows.append((code, _describe(code)[0], *_cause_and_fix(hint)))
    return DecoderRing(rows)


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
        self.hint = hint_for(self.code, context) if hint is None else hint
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
