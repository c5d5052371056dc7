"""The backend interface, written down: what `labkit.backends.cuda` and `labkit.backends.sim` both
implement, and all that labkit above the backend may use of either.

`Backend` is the module's interface, `KernelParamBlock` the parameter block's (a backend's
``KernelParams(k, grid, block, args)``). ``tests/core/test_backend_interface.py`` checks both
backends against them, names and parameters alike.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable, Protocol, runtime_checkable

__all__ = ["Backend", "KernelParamBlock"]


@runtime_checkable
class KernelParamBlock(Protocol):
    """``kernel[grid, block](*args)`` as the driver (or the simulator) sees it, built once."""

    name: str
    grid: tuple
    block: tuple
    args: tuple
    func: Any                 # the function the block launches (CUfunction, or the simulator's)
    node_params: Any          # the kernel-node parameter struct the graph calls take

    def launch(self, stream: int, programmatic: bool = False) -> None:
        """One launch of the block on ``stream`` (a raw handle): a prepared launch;
        ``programmatic``: with programmatic stream serialization (PDL), the driver's
        ``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION``."""

    def set_node(self, node) -> int:
        """Make graph node ``node`` launch this block; the error code."""

    def exec_node_setter(self, graph_exec, node) -> Callable[[], tuple]:
        """A callable returning ``(err,)`` that sets ``node`` of ``graph_exec`` to this block."""

    def raw_exec_set(self, graph_exec, node) -> tuple[Callable, tuple]:
        """``(fn, args)``: the bare call `exec_node_setter` wraps, for measuring beside it."""

    def add_node(self, graph, deps) -> tuple[int, Any]:
        """Add a kernel node launching this block after ``deps``; ``(err, node)``."""


@runtime_checkable
class Backend(Protocol):
    """What a backend module provides (``IS_GPU``, ``rt`` and ``KernelParams`` as attributes)."""

    IS_GPU: bool
    rt: Any                   # the runtime API: cuda.bindings.runtime, or the simulator's mirror
    KernelParams: type        # builds a `KernelParamBlock` from (kernel, grid, block, args)

    def to_device(self, ary, stream=0) -> Any:
        """A device copy of host array ``ary`` (on ``stream``, a handle or a labkit.Stream)."""

    def device_array(self, shape, dtype) -> Any:
        """An uninitialised device array."""

    def pinned_array(self, shape, dtype) -> Any:
        """A page-locked host array."""

    def mapped_array(self, shape, dtype) -> tuple[Any, Any]:
        """``(kernel argument, host numpy view)`` of new mapped, pinned host memory."""

    def poll_step(self) -> bool:
        """One step of a host loop that polls memory the GPU writes (mapped memory): on a GPU,
        nothing to do (True: the GPU runs on its own); on the simulator, the host's clock moves
        to the next piece of GPU work taking effect (False when none is left)."""

    def launcher(self, k, grid, block, stream, owner=None) -> Callable[..., None]:
        """``fn(*args)`` launching labkit kernel ``k`` eagerly on ``stream`` (see `_launch`)."""

    def bare_launch(self, k, grid, block, stream: int) -> Callable[..., None]:
        """The same launch without labkit, to measure labkit's share beside it."""

    def host_us(self) -> float:
        """The host's wall clock, µs (the simulator's modelled one there)."""

    def cpu_us(self) -> float:
        """This process's CPU time, µs (modelled on the simulator)."""

    def start_trace(self) -> bool:
        """Start recording the backend's own timeline; False where it has none (a GPU)."""

    def stop_trace(self) -> list:
        """Stop recording; the spans recorded (`labkit._span.Span`-shaped)."""

    def stream_trace_id(self, handle: int) -> int:
        """The number a trace of this backend names stream ``handle`` by (its rows read
        "stream N"): the driver's stream id on a GPU, the handle on the simulator."""

    def kernel_node_name(self, node) -> str | None:
        """The name of the function kernel node ``node`` runs, or None."""

    def provenance(self, device: str) -> str:
        """A figure's provenance line for numbers from this backend on ``device``."""

    def frees_held(self) -> AbstractContextManager:
        """A context in which device-memory frees wait (a capture must not see one)."""

    def races(self) -> list:
        """The data races seen between unordered GPU operations (the simulator's; always
        empty on a GPU, where no tool reports them)."""

    def clear_races(self) -> None:
        """Forget the races seen so far."""

    def reset_after_fault(self) -> None:
        """After a sticky fault: the simulator forgets it; a GPU refuses (restart the process)."""

    def make_set_condition(self, cu_path: str) -> Callable:
        """``set_condition(handle, value)``, callable from a kernel: CUDA's
        ``cudaGraphSetConditional``."""
