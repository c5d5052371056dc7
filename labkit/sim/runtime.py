"""A CPU stand-in for ``cuda.bindings.runtime``: the simulated runtime, by concept.

Same function names, the same enum classes and handle types (taken from cuda-python, which
imports without a GPU) and the same ``(err, *values)`` tuples. The behaviour in capture was
read off a real H200 and is pinned by tests/conformance/. The implementation, one concept a
module:

* `labkit.sim._state`: the objects and tables, and the guard of potentially unsafe calls;
* `labkit.sim._heap` and `labkit.sim._memory`: memory and the calls on it;
* `labkit.sim._streams`: streams, events, host functions;
* `labkit.sim._capture` (with `labkit.sim._capture_rules`): stream capture;
* `labkit.sim._graphs`, `labkit.sim._nodes`, `labkit.sim._exec`: graphs, their nodes (through
  cuda-bindings' own structs, `labkit.sim._params`), and executable graphs;
* `labkit.sim._graphmem`: graph memory (allocation and free nodes);
* `labkit.sim._pools`: memory pools (stream-ordered allocation's accounting);
* `labkit.sim._describe`: graph, executable and node IDs, and the DOT print;
* `labkit.sim._conditional`: conditional nodes' handles and rules;
* `labkit.sim._work`: what work does to memory, and what it costs on the GPU clock;
* `labkit.sim._engine`: work taking effect when the clock reaches it (asynchrony, faults);
* `labkit.sim._races`: what orders what, and the race report;
* `labkit.sim._device`: the device, versions, errors.

What it does not do, and says so loudly:

* any function outside the subset raises ``NotImplementedError`` naming the call and the sim
  backend;
* graph launches into a capturing stream;
* SM contention, except within one graph launch: kernels on different streams overlap fully in
  the model; in a launch, kernels whose grids each fill the device (a block per SM or more) run
  one at a time, by node priority under ``cudaGraphInstantiateFlagUseNodePriority``
  (`labkit.sim._exec._place`);
* programmatic dependent launch is modelled, not measured: over a graph's programmatic edge,
  or launched with programmatic stream serialization after a kernel in its stream (labkit's
  hook for ``cuLaunchKernelEx``, `labkit.sim._hooks.launch`; cuda-bindings' runtime has no
  ``cudaLaunchKernelEx``), a kernel starts ``pdl_overlap_us`` before its predecessor's end, 0
  by CUDA's rule for kernels that never trigger early (numba's): the launch gap goes, the
  kernels do not overlap; nothing orders the predecessor's writes before it (a race);
* stream priorities: ``cudaStreamCreateWithPriority`` keeps one, and kernels captured from the
  stream take it as their node's priority; between streams the clock does not use it;
* launching a graph from the device (numba kernels cannot call ``cudaGraphLaunch``); the
  ``cudaGraphInstantiateFlagDeviceLaunch`` rules are checked at instantiation.

Host costs are charged per call, from the calibration: ``cudaGraphExecKernelNodeSetParams``
costs ``raw_node_update_us`` (the driver's call with a prebuilt parameter block),
``cudaGraphAddKernelNode`` costs ``add_kernel_node_us``.

Kernels are registered functions (`labkit.sim._hooks.register_function`), named by handle in
``cudaKernelNodeParams.func`` (or ``cuFunc``). ``kernelParams`` must be a parameter block the
simulator built (`labkit.sim._params`): a raw ``void**`` cannot be read back into Python
values. Arrays are referred to by address only, so a node does not keep an array alive: freed
memory (``cudaFree``, or a labkit array collected) is never reused, and a kernel that touches it
faults with ``cudaErrorIllegalAddress`` when it runs: the launch call succeeds, the next call
that waits returns 700, and so does every call after it (sticky, as on a GPU, until
``labkit.reset_after_fault()``, which a GPU has not).

``labkit.rt`` on the simulator is this module. It exposes only names that
``cuda.bindings.runtime`` has (a test holds it): the functions are the simulator's; enum classes,
structs and constants come from cuda-python. A CUDA function the simulator does not implement
raises ``NotImplementedError`` naming the sim backend; a name CUDA does not have is an
``AttributeError``, as on a GPU. After a fault (`labkit.sim._engine`) every call returns it,
with None for its outputs, as on a GPU whose context is lost (sticky).
"""

import functools as _functools

from cuda.bindings import runtime as _cr

from . import (_capture, _conditional, _describe, _device, _engine, _exec, _graphmem, _graphs,
               _memory, _nodes, _pools, _streams)

_MODULES = (_capture, _conditional, _describe, _device, _exec, _graphmem, _graphs, _memory,
            _nodes, _pools, _streams)
_UNWRAPPED = ("cudaGetErrorName", "cudaGetErrorString")   # they answer after a fault too


def _sticky(fn):
    """After a fault, every call returns it, as on a GPU whose context is lost: the call's
    outputs are None."""
    @_functools.wraps(fn)
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        code = _engine.sticky()
        if code is None or not isinstance(out, tuple):
            return out
        return (_cr.cudaError_t(code),) + (None,) * (len(out) - 1)
    return call


# each module's CUDA calls and structs (the names that start "cuda" and cuda.bindings.runtime has)
for _m in _MODULES:
    for _name, _value in vars(_m).items():
        if _name.startswith("cuda") and hasattr(_cr, _name):
            _call = (callable(_value) and not isinstance(_value, type)
                     and _name not in _UNWRAPPED)
            globals()[_name] = _sticky(_value) if _call else _value

# data cuda-python defines: enums, handle types, constants (no GPU needed)
for _name in ("cudaError_t", "cudaStreamCaptureMode", "cudaStreamCaptureStatus",
              "cudaGraphNodeType", "cudaGraphExecUpdateResult", "cudaMemcpyKind",
              "cudaStream_t", "cudaEvent_t", "cudaGraph_t", "cudaGraphExec_t", "cudaGraphNode_t",
              "cudaGraphExecUpdateResultInfo", "cudaStreamNonBlocking", "cudaStreamDefault",
              "cudaEventDefault", "cudaEventDisableTiming", "cudaEventBlockingSync",
              "cudaGraphConditionalHandle", "cudaGraphConditionalNodeType",
              "cudaGraphConditionalHandleFlags", "cudaStreamUpdateCaptureDependenciesFlags",
              "cudaGraphInstantiateFlags", "cudaHostFn_t", "cudaKernelNodeParams",
              "cudaGraphNodeParams", "cudaConditionalNodeParams",
              "cudaGraphEdgeData", "cudaMemPool_t", "cudaMemPoolProps", "cudaMemPoolAttr",
              "cudaExecutionContext_t", "cudaKernelNodeAttrValue", "cudaLaunchAttributeID",
              # helpers that build structs, no GPU needed
              "make_cudaExtent", "make_cudaPitchedPtr", "make_cudaPos"):
    globals()[_name] = getattr(_cr, _name)


def __getattr__(name):
    value = getattr(_cr, name, None)
    if value is None:
        raise AttributeError(f"cuda.bindings.runtime has no {name!r}, so neither has labkit.rt")
    if isinstance(value, type) or not callable(value):
        return value           # an enum, a struct or a constant: data, no GPU needed
    raise NotImplementedError(
        f"{name} is not part of labkit's simulated runtime (backend 'sim'); it covers the "
        "calls the course uses. Run on a GPU with LABKIT_BACKEND=cuda to use it")
