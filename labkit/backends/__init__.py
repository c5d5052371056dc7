"""The one place that differs between a GPU and the simulator: chosen once, at ``import labkit``.

``LABKIT_BACKEND=auto|cuda|sim`` (see `_choose`). The chosen module, `labkit.backends.cuda` or
`labkit.backends.sim`, implements the interface written down in `_interface` (``Backend``, and
``KernelParamBlock`` for its ``KernelParams``; a test checks both modules against it), and this
package passes its names on. Everything above this package is the same code on both backends.
The eager launch's shared part (span, closed-stream check, keep-alive) is `_launch`; numba's
private internals sit in `_numba_kernel`, pinned to the numba-cuda versions they are known in.
Mapped host memory (`mapped_array`, and `poll_step` for a host loop reading it) lets a running graph
publish to the host, as notebook 08's streaming loop does.

``labkit.backend`` is the backend's *name*, a plain str ("cuda" or "sim"), which notebooks print
and compare; this package, its implementation, is ``labkit.backends``.
"""
from __future__ import annotations

import sys

from ._choose import BackendError, choose

__all__ = ["name", "reason", "error", "is_gpu", "rt", "to_device", "device_array", "pinned_array",
           "mapped_array", "poll_step",
           "launcher", "bare_launch", "KernelParams", "host_us", "cpu_us", "start_trace", "stop_trace",
           "provenance", "kernel_node_name", "stream_trace_id", "frees_held",
           "make_set_condition",
           "BackendError"]


def _started_as_cli() -> bool:
    argv = getattr(sys, "orig_argv", [])
    return any(a == "-m" and argv[i + 1:i + 2] == ["labkit"] for i, a in enumerate(argv))


error = None
try:
    name, reason = choose()
except BackendError as exc:
    # `python -m labkit doctor` imports labkit before doctor runs: keep the error for it to report
    if not _started_as_cli():
        raise
    name, reason, error = "sim", f"no backend: {exc}", exc

if name == "cuda":
    from . import cuda as _impl
else:
    from . import sim as _impl

is_gpu = _impl.IS_GPU
rt = _impl.rt
to_device = _impl.to_device
device_array = _impl.device_array
pinned_array = _impl.pinned_array
mapped_array = _impl.mapped_array
poll_step = _impl.poll_step
launcher = _impl.launcher
bare_launch = _impl.bare_launch
KernelParams = _impl.KernelParams
host_us = _impl.host_us
cpu_us = _impl.cpu_us
start_trace = _impl.start_trace
stop_trace = _impl.stop_trace
provenance = _impl.provenance
make_set_condition = _impl.make_set_condition
kernel_node_name = _impl.kernel_node_name
stream_trace_id = _impl.stream_trace_id
frees_held = _impl.frees_held
races = _impl.races
clear_races = _impl.clear_races
reset_after_fault = _impl.reset_after_fault
