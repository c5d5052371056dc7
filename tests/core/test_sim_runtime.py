"""The simulator is a runtime and nothing else: CUDA's names, CUDA's structs, CUDA's errors."""
import ctypes
import gc

import numpy as np
import pytest
from cuda.bindings import runtime as cuda_rt

import labkit
from labkit import rt
from labkit.sim import _hooks
from labkit.course import workloads as w

pytestmark = pytest.mark.skipif(labkit.backend != "sim", reason="the simulator's runtime")
E = rt.cudaError_t
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost


def test_every_public_name_of_the_simulated_runtime_exists_in_cuda_bindings_runtime():
    extra = sorted(n for n in dir(rt) if not n.startswith("_") and not hasattr(cuda_rt, n))
    assert not extra, f"labkit.rt on sim has names cuda.bindings.runtime lacks: {extra}"
    assert {"cudaGraphLaunch", "cudaGraphAddKernelNode", "cudaKernelNodeParams"} <= set(dir(rt))


def test_a_name_cuda_lacks_is_an_attribute_error_and_an_unsimulated_call_raises():
    with pytest.raises(AttributeError, match="cuda.bindings.runtime has no 'P'"):
        rt.P
    with pytest.raises(NotImplementedError, match="^cudaGraphAddExternalSemaphoresSignalNode is "
                                                  "not part of labkit's simulated runtime"):
        rt.cudaGraphAddExternalSemaphoresSignalNode
    assert rt.cudaGraphInstantiateFlags is cuda_rt.cudaGraphInstantiateFlags   # data: CUDA's own


def test_the_structs_are_cuda_bindings_own():
    for name in ("cudaKernelNodeParams", "cudaGraphNodeParams", "cudaConditionalNodeParams",
                 "cudaMemcpy3DParms", "cudaMemsetParams", "cudaHostNodeParams",
                 "cudaMemAllocNodeParams", "cudaDeviceProp", "cudaPointerAttributes"):
        assert getattr(rt, name) is getattr(cuda_rt, name), name
    assert rt.make_cudaExtent(8, 1, 1).width == 8          # helpers that need no GPU work


def test_device_properties_are_cudas_struct_filled_from_the_calibration():
    err, p = rt.cudaGetDeviceProperties(0)
    assert err == E.cudaSuccess and isinstance(p, cuda_rt.cudaDeviceProp)
    assert p.name.rstrip(b"\0").decode().startswith("simulated ")
    assert (p.major, p.minor, p.warpSize) == (9, 0, 32) and p.multiProcessorCount > 0
    assert len(bytes(p.uuid.bytes)) == 16
    assert rt.cudaDeviceGetAttribute(rt.cudaDeviceAttr.cudaDevAttrWarpSize, 0) == (
        E.cudaSuccess, 32)


def test_a_captured_kernel_node_reads_back_as_its_function_grid_and_block():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(64, np.float32))
    with labkit.capture(s) as cap:
        w.add_one[(2, 1), 32, s](x)
    node = cap.graph.kernel_nodes()[0]
    err, p = rt.cudaGraphKernelNodeGetParams(node)
    assert err == E.cudaSuccess and p.func != 0
    assert (p.gridDim.x, p.gridDim.y, p.blockDim.x) == (2, 1, 32)
    values = _hooks.kernel_param_values(p)
    assert len(values) == 1 and values[0].addr == x.device_ctypes_pointer.value
    cap.graph.close(); s.close()


def test_a_node_of_an_unregistered_function_is_invalid_device_function():
    err, g = rt.cudaGraphCreate(0)
    p = rt.cudaKernelNodeParams()
    p.func = 12345
    assert rt.cudaGraphAddKernelNode(g, [], 0, p)[0] == E.cudaErrorInvalidDeviceFunction
    rt.cudaGetLastError()
    rt.cudaGraphDestroy(g)


def test_cuda_free_frees_and_a_second_free_is_invalid_value():
    err, ptr = rt.cudaMalloc(4096)
    assert err == E.cudaSuccess
    assert rt.cudaFree(ptr) == (E.cudaSuccess,)
    out = np.empty(16, np.uint8)
    assert rt.cudaMemcpy(out.ctypes.data, ptr, 16, D2H)[0] == E.cudaErrorInvalidValue
    assert rt.cudaFree(ptr)[0] == E.cudaErrorInvalidValue
    rt.cudaGetLastError()


def test_replaying_a_raw_graph_after_its_array_was_collected_is_an_illegal_address():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    w.add_one[4, 256, s](x)
    assert rt.cudaStreamBeginCapture(s.handle, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)[0] == E.cudaSuccess
    w.add_one[4, 256, s](x)
    err, g = rt.cudaStreamEndCapture(s.handle)
    err, ge = rt.cudaGraphInstantiate(g, 0)
    assert rt.cudaGraphLaunch(ge, s.handle) == (E.cudaSuccess,)
    del x
    gc.collect()                      # numba frees a collected array; so does the simulator
    # as on a GPU: the launch succeeds, the fault comes back from the next synchronizing call
    assert rt.cudaGraphLaunch(ge, s.handle) == (E.cudaSuccess,)
    assert rt.cudaStreamSynchronize(s.handle) == (E.cudaErrorIllegalAddress,)
    # and it is sticky: every call after it returns it, and no more work runs
    assert rt.cudaMalloc(16) == (E.cudaErrorIllegalAddress, None)
    assert rt.cudaGetLastError() == (E.cudaErrorIllegalAddress,)
    labkit.reset_after_fault()        # the simulator's way back; a GPU has none
    assert rt.cudaStreamSynchronize(s.handle) == (E.cudaSuccess,)
    rt.cudaGraphExecDestroy(ge); rt.cudaGraphDestroy(g); s.close()


def test_a_fault_comes_back_at_the_next_sync_not_at_the_launch():
    s = labkit.Stream()
    p = rt.cudaMalloc(4096)[1]
    raw = labkit.to_device(np.zeros(4, np.float32))
    assert rt.cudaFree(p) == (E.cudaSuccess,)
    # a kernel into freed memory: the launch call returns success
    w.add_one[1, 4, s](_FreedArray(p))
    assert rt.cudaPeekAtLastError() == (E.cudaSuccess,)
    assert rt.cudaStreamSynchronize(s.handle) == (E.cudaErrorIllegalAddress,)
    assert rt.cudaStreamSynchronize(s.handle) == (E.cudaErrorIllegalAddress,)
    labkit.reset_after_fault()
    del raw
    s.close()


class _FreedArray:
    """A device array over memory that was freed (what a raw pointer kept too long is)."""
    shape, dtype, size, nbytes, ndim = (4,), np.dtype(np.float32), 4, 16, 1

    def __init__(self, p):
        self.device_ctypes_pointer = ctypes.c_void_p(p)


def test_a_parameter_block_the_simulator_did_not_build_is_refused_loudly():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(64, np.float32))
    with labkit.capture(s) as cap:
        w.add_one[2, 32, s](x)
    node = cap.graph.kernel_nodes()[0]
    err, mine = rt.cudaGraphKernelNodeGetParams(node)
    theirs = cuda_rt.cudaKernelNodeParams()
    theirs.func, theirs.gridDim, theirs.blockDim = mine.func, mine.gridDim, mine.blockDim
    theirs.kernelParams = ((x.device_ctypes_pointer.value,), (ctypes.c_void_p,))   # its own
    with pytest.raises(NotImplementedError, match="^the simulator cannot read a kernelParams it "
                                                  "did not build"):
        rt.cudaGraphKernelNodeSetParams(node, theirs)
    cap.graph.close(); s.close()


def test_a_replay_into_freed_graph_memory_is_an_illegal_address():
    """A graph allocation freed (here by cudaFree) has no memory behind it: a kernel node of
    another graph that still names it fails as on a GPU, cudaErrorIllegalAddress."""
    p = rt.cudaMemAllocNodeParams()
    p.bytesize = 256
    err, g = rt.cudaGraphCreate(0)
    assert rt.cudaGraphAddMemAllocNode(g, None, 0, p)[0] == E.cudaSuccess
    err, ge = rt.cudaGraphInstantiate(g, 0)
    assert rt.cudaGraphLaunch(ge, 0) == (E.cudaSuccess,)
    touched = []
    func = _hooks.register_function("touch", lambda grid, block, a: touched.append(a.sum()),
                                    lambda grid, block, a: 1.0)
    arg = _hooks.ArrayArg(int(p.dptr), (64,), np.float32)
    user = rt.cudaGraphCreate(0)[1]
    kp = _hooks.kernel_node_params(func, (1, 1, 1), (64, 1, 1), (arg,))
    assert rt.cudaGraphAddKernelNode(user, None, 0, kp)[0] == E.cudaSuccess
    user_exec = rt.cudaGraphInstantiate(user, 0)[1]
    assert rt.cudaGraphLaunch(user_exec, 0) == (E.cudaSuccess,)
    assert touched == []                   # a launch returns before its work runs
    assert rt.cudaDeviceSynchronize() == (E.cudaSuccess,) and touched == [0.0]
    assert rt.cudaFree(p.dptr) == (E.cudaSuccess,)
    assert rt.cudaGraphLaunch(user_exec, 0) == (E.cudaSuccess,)
    assert rt.cudaDeviceSynchronize() == (E.cudaErrorIllegalAddress,)
    labkit.reset_after_fault()
    for x in (ge, user_exec):
        rt.cudaGraphExecDestroy(x)
    for x in (g, user):
        rt.cudaGraphDestroy(x)


def test_launches_of_one_executable_run_one_after_another_also_from_two_streams():
    """cudaGraphLaunch: "each launch is ordered behind both any previous work in stream and any
    previous launches of graphExec"; two executables of one graph may overlap."""
    from labkit import timing
    s1, s2 = labkit.Stream(), labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    with labkit.capture(s1) as cap:
        w.chain(3, x, s1)
    ex, other = cap.graph.instantiate(upload_stream=s1), cap.graph.instantiate(upload_stream=s2)

    def runs(launches):
        with timing.timeline() as rec:
            for e, s in launches:
                e.launch(s)
            s1.synchronize(), s2.synchronize()
        rows = {}
        for sp in rec.timeline.spans:
            if sp.kind == "kernel":
                rows.setdefault(sp.row, []).append(sp)
        return [(min(k.start_us for k in r), max(k.end_us for k in r)) for r in rows.values()]

    (a0, a1), (b0, b1) = sorted(runs([(ex, s1), (ex, s2)]))
    assert b0 >= a1, f"the second launch of one executable started at {b0} before {a1}"
    (a0, a1), (b0, b1) = sorted(runs([(ex, s1), (other, s2)]))
    assert b0 < a1, "two executables of one graph on two streams should overlap"
