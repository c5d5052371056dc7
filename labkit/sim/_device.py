"""The device, versions and errors of the simulated runtime."""
from __future__ import annotations

from cuda.bindings import runtime as _cr

from .. import _calibration
from . import _capture_rules as _rules
from . import _state as S
from . import clock as _clock

E, P = S.E, S.P


def cudaGetDeviceCount():
    return E.cudaSuccess, 1


class _Props:
    """The device properties the notebooks print, for the GPU the model was calibrated on."""

    def __init__(self):
        cal = _calibration.load()
        self.name = f"simulated {cal['gpu']}".encode()
        self.multiProcessorCount = int(cal.get("sm_count", 132))
        self.major, self.minor = cal.get("compute_capability", [9, 0])
        self.totalGlobalMem = int(cal.get("total_mem", 150109880320))


def cudaGetDeviceProperties(device):
    if int(device) != 0:
        return (S.fail(E.cudaErrorInvalidDevice), None)
    return E.cudaSuccess, _Props()


def cudaGetDevice():
    return E.cudaSuccess, 0


def cudaDriverGetVersion():
    return E.cudaSuccess, 13000


def cudaRuntimeGetVersion():
    return E.cudaSuccess, 13000


def cudaGetLastError():
    return (_rules.take_last_error(),)


def cudaPeekAtLastError():
    return (_rules.last_error(),)


def cudaDeviceSynchronize():
    with S.lock:
        for c in S.active_captures():
            S.invalidate(c)
            return (S.fail(E.cudaErrorStreamCaptureUnsupported),)
        t = max([s.ready_us for s in S.streams.values()] + [_clock.host_us()])
        _clock.api("cudaDeviceSynchronize", P("sync_us"), wait_until=t)
        return S.OK


cudaGetErrorName = _cr.cudaGetErrorName
cudaGetErrorString = _cr.cudaGetErrorString
