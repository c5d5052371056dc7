"""Which backend `labkit.backend` takes: the rules, applied once at ``import labkit``.

``LABKIT_BACKEND=auto|cuda|sim`` (auto by default): auto takes "cuda" when cuda-python finds a
usable GPU and "sim" otherwise. Asking for "cuda" where there is none is an error, never a
silent fall-back. The choice also decides how numba.cuda is imported: on "sim" numba runs
kernels in its CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which must be set before
``numba.cuda`` is first imported.
"""
from __future__ import annotations

import os
import sys

_CHOICES = ("auto", "cuda", "sim")


class BackendError(RuntimeError):
    """The backend asked for cannot be used here; the message says what to do."""


def _probe_gpu() -> tuple[bool, str]:
    from cuda.bindings import runtime as rt

    err, count = rt.cudaGetDeviceCount()
    if int(err) != 0:
        return False, f"cudaGetDeviceCount returned {err.name}"
    if count < 1:
        return False, "cudaGetDeviceCount found no device"
    err, props = rt.cudaGetDeviceProperties(0)
    if int(err) != 0:
        return False, f"cudaGetDeviceProperties returned {err.name}"
    name = props.name.decode(errors="replace").rstrip("\x00")
    return True, f"found {count} GPU(s), device 0 is {name}"


def _numba_cuda_mode() -> str | None:
    """'sim' or 'cuda' if numba.cuda is already imported, else None."""
    if "numba.cuda" not in sys.modules:
        return None
    config = sys.modules.get("numba.cuda.core.config")
    return "sim" if config is not None and getattr(config, "ENABLE_CUDASIM", 0) else "cuda"


def choose() -> tuple[str, str]:
    """Return ``(backend, reason)`` and prepare numba for it."""
    want = os.environ.get("LABKIT_BACKEND", "auto").strip().lower() or "auto"
    if want not in _CHOICES:
        raise BackendError(
            f"LABKIT_BACKEND={want!r} is not one of {', '.join(_CHOICES)}; "
            "set it to auto (default), cuda (a real GPU) or sim (the CPU simulator)")
    numba_mode = _numba_cuda_mode()
    if want == "sim":
        backend, reason = "sim", "LABKIT_BACKEND=sim"
    elif os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and want == "auto":
        backend, reason = "sim", "NUMBA_ENABLE_CUDASIM=1 is set, so numba can only simulate"
    else:
        has_gpu, why = _probe_gpu()
        if want == "cuda" and not has_gpu:
            raise BackendError(
                f"LABKIT_BACKEND=cuda but no usable GPU: {why}. Run on a machine with an "
                "NVIDIA GPU and driver, or unset LABKIT_BACKEND (auto) / set LABKIT_BACKEND=sim "
                "to use the CPU simulator")
        if want == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            raise BackendError(
                "LABKIT_BACKEND=cuda but NUMBA_ENABLE_CUDASIM=1 makes numba simulate every "
                "kernel; unset NUMBA_ENABLE_CUDASIM")
        backend = "cuda" if has_gpu else "sim"
        reason = ("LABKIT_BACKEND=cuda: " if want == "cuda" else "auto: ") + why
    if numba_mode is not None and numba_mode != backend:
        raise BackendError(
            f"numba.cuda was imported before labkit in {numba_mode!r} mode, but labkit chose "
            f"the {backend!r} backend ({reason}). Restart the Python kernel and import labkit "
            "before numba.cuda (or set LABKIT_BACKEND to match)")
    if backend == "sim":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # The course launches tiny grids on purpose (launch cost is the subject); numba's warning
    # about grids under 128 blocks would fill every GPU output. Set it to 1 to see them.
    if "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS" not in os.environ:
        os.environ["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
        config = sys.modules.get("numba.cuda.core.config")
        if config is not None:
            config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    return backend, reason
