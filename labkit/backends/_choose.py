"""Which backend `labkit.backend` takes: the rules, applied once at ``import labkit``.

``LABKIT_BACKEND=auto|cuda|sim`` (auto by default): auto takes "cuda" when cuda-python finds a
usable GPU and "sim" otherwise. Asking for "cuda" where there is none is an error, never a
silent fall-back. The choice also decides how numba.cuda is imported: on "sim" numba runs
kernels in its CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which must be set before
``numba.cuda`` is first imported.

When labkit sets that variable itself it also sets ``LABKIT_SIM_REASON`` to the reason it chose
"sim", so that a child process (a notebook kernel started by ``python -m labkit run``) that
inherits both reports the parent's real reason ("no NVIDIA driver here"), not the variable.
"""
from __future__ import annotations

import os
import sys

_CHOICES = ("auto", "cuda", "sim")
# Set beside NUMBA_ENABLE_CUDASIM=1 when labkit set that itself, holding the reason it did so.
SIM_REASON_VAR = "LABKIT_SIM_REASON"


class BackendError(RuntimeError):
    """The backend asked for cannot be used here; the message says what to do."""


def _probe_gpu() -> tuple[bool, str]:
    from cuda.bindings import runtime as rt

    err, count = rt.cudaGetDeviceCount()
    if int(err) != 0:
        return False, _no_gpu_words(err, rt)
    if count < 1:
        return False, "the NVIDIA driver sees no GPU (cudaGetDeviceCount found no device)"
    err, props = rt.cudaGetDeviceProperties(0)
    if int(err) != 0:
        return False, f"cudaGetDeviceProperties returned {err.name}"
    name = props.name.decode(errors="replace").rstrip("\x00")
    return True, f"found {count} GPU(s), device 0 is {name}"


def _no_gpu_words(err, rt) -> str:
    """Why there is no usable GPU, in plain words first and CUDA's error name after."""
    detail = f"cudaGetDeviceCount returned {err.name}"
    if err.name == "cudaErrorInsufficientDriver":
        derr, driver = rt.cudaDriverGetVersion()
        if int(derr) != 0 or driver == 0:
            return f"no NVIDIA driver here ({detail})"
        # A driver is there but older than this cuda-bindings' major: the cu12 extra fixes it.
        return (f"the NVIDIA driver supports only CUDA {driver // 1000}.{driver % 1000 // 10}, "
                f"older than the installed cuda-bindings ({detail})")
    if err.name == "cudaErrorNoDevice":
        return f"no NVIDIA GPU here ({detail})"
    return f"the GPU could not be used ({detail})"


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
    # NUMBA_ENABLE_CUDASIM=1 that labkit itself set in a parent process is not the user's
    # choice: report the parent's reason, and let LABKIT_BACKEND=cuda drop it.
    inherited = (os.environ.get(SIM_REASON_VAR)
                 if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else None)
    if inherited and want == "cuda" and numba_mode is None:
        del os.environ["NUMBA_ENABLE_CUDASIM"], os.environ[SIM_REASON_VAR]
        inherited = None
    if want == "sim":
        backend, reason = "sim", "LABKIT_BACKEND=sim"
    elif inherited and want == "auto":
        backend, reason = "sim", inherited
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
    if backend == "sim" and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        os.environ[SIM_REASON_VAR] = reason
    # The course launches tiny grids on purpose (launch cost is the subject); numba's warning
    # about grids under 128 blocks would fill every GPU output. Set it to 1 to see them.
    if "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS" not in os.environ:
        os.environ["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
        config = sys.modules.get("numba.cuda.core.config")
        if config is not None:
            config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    return backend, reason
