"""Handles: one base class for what owns a CUDA handle, and the one way to read a raw handle.

A leaf module: it imports nothing from labkit, so every layer may use it.
"""
from __future__ import annotations

__all__ = ["Handle", "stream_handle"]


class Handle:
    """Owns one CUDA handle: ``int(h)`` is the raw value, ``close()`` destroys it, and ``with``
    closes it at the end of the block. Subclasses name what they hold (``_what``) and how it is
    destroyed (``_destroy``); ``handle`` is None once closed."""

    _what = "handle"
    handle = None

    def _destroy(self, handle) -> None:      # the subclass's cudaXxxDestroy
        raise NotImplementedError

    def __int__(self):
        return int(self._open())

    def _open(self):
        """The handle, or a ValueError saying this was closed (CUDA would only say "invalid
        argument" about the NULL handle a closed object passes on)."""
        h = self.handle
        if h is None:
            raise ValueError(f"this {self._what} was closed (by close() or the end of its with "
                             f"block): make a new one")
        return h

    def close(self):
        if self.handle is not None:
            self._destroy(self.handle)
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def stream_handle(stream) -> int:
    """The raw handle of a labkit Stream, a cudaStream_t, or an int (0 = legacy stream)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    h = getattr(stream, "handle", stream)
    if h is None:   # a closed labkit.Stream: its old handle may be reused
        raise ValueError("the stream was closed (by close() or the end of its with block): "
                         "submit work to an open labkit.Stream")
    try:
        return int(h)
    except TypeError:
        raise TypeError(f"expected a labkit.Stream, a cudaStream_t or an int, got "
                        f"{type(stream).__name__}") from None
