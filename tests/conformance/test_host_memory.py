"""Conformance: host memory and pointer arguments, the same file on both backends.

What these follow is CUDA's documentation (NOT PROBED on the H200 yet; the GPU issue runs this
file there): ``cudaFree(0)`` is a no-op; ``cudaMallocHost`` / ``cudaHostAlloc`` return host
memory the host reads and writes at its address; with unified addressing page-locked memory is
mapped and its device pointer is its host pointer; ``cudaHostRegister`` refuses a range already
registered (712) and ``cudaHostUnregister`` one that is not (713); pointer arguments are taken
as cuda-bindings takes them: an int, or any object with the buffer protocol (its address).
"""
from __future__ import annotations

import ctypes

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest
from labkit import rt

E = rt.cudaError_t
OK = (E.cudaSuccess,)
H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
DEFAULT = rt.cudaMemcpyKind.cudaMemcpyDefault
N = 256


def _as_floats(addr, n=N):
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(addr))


@pytest.fixture
def dptr():
    err, d = rt.cudaMalloc(N * 4)
    assert err == E.cudaSuccess
    yield d
    assert rt.cudaFree(d) == OK


def test_cuda_free_of_null_is_a_no_op_that_succeeds():
    assert rt.cudaFree(0) == OK
    assert rt.cudaGetLastError() == OK


def test_malloc_host_memory_is_host_memory_numpy_reads_and_writes(res, dptr):
    err, p = rt.cudaMallocHost(N * 4)
    assert err == E.cudaSuccess
    res.pinned_ptr(p)
    host = _as_floats(p)
    host[:] = np.arange(N, dtype=np.float32)              # written by the host, in place
    assert rt.cudaMemcpy(dptr, p, N * 4, H2D) == OK
    host[:] = 0
    assert rt.cudaMemcpy(p, dptr, N * 4, D2H) == OK
    np.testing.assert_array_equal(host, np.arange(N, dtype=np.float32))


def test_host_alloc_mapped_memory_has_its_host_pointer_as_device_pointer(res, dptr):
    err, p = rt.cudaHostAlloc(N * 4, rt.cudaHostAllocMapped)
    assert err == E.cudaSuccess
    res.pinned_ptr(p)
    err, d = rt.cudaHostGetDevicePointer(p, 0)
    assert err == E.cudaSuccess and int(d) == int(p)       # unified addressing
    _as_floats(p)[:] = 7.0
    assert rt.cudaMemcpy(dptr, d, N * 4, DEFAULT) == OK    # read through the device pointer
    out = np.zeros(N, np.float32)
    assert rt.cudaMemcpy(out, dptr, N * 4, D2H) == OK
    np.testing.assert_array_equal(out, np.full(N, 7.0, np.float32))


def test_host_alloc_refuses_unknown_flags():
    assert rt.cudaHostAlloc(64, 0x100) == (E.cudaErrorInvalidValue, None)
    assert rt.cudaGetLastError() == (E.cudaErrorInvalidValue,)


def test_host_register_pins_a_numpy_array_once_and_unregister_undoes_it_once(dptr):
    a = np.arange(N, dtype=np.float32)
    assert rt.cudaHostRegister(a, a.nbytes, 0) == OK
    try:
        assert rt.cudaHostRegister(a, a.nbytes, 0) == (E.cudaErrorHostMemoryAlreadyRegistered,)
        assert rt.cudaMemcpy(dptr, a, a.nbytes, H2D) == OK
        err, attrs = rt.cudaPointerGetAttributes(a)
        assert err == E.cudaSuccess and attrs.type == rt.cudaMemoryType.cudaMemoryTypeHost
    finally:
        assert rt.cudaHostUnregister(a) == OK
    assert rt.cudaHostUnregister(a) == (E.cudaErrorHostMemoryNotRegistered,)
    rt.cudaGetLastError()
    out = np.zeros(N, np.float32)
    assert rt.cudaMemcpy(out, dptr, a.nbytes, D2H) == OK
    np.testing.assert_array_equal(out, a)


def test_pointer_attributes_tell_device_memory_from_page_locked_memory(res, dptr):
    err, attrs = rt.cudaPointerGetAttributes(dptr)
    assert err == E.cudaSuccess and attrs.type == rt.cudaMemoryType.cudaMemoryTypeDevice
    assert int(attrs.devicePointer) == int(dptr)
    err, p = rt.cudaMallocHost(64)
    res.pinned_ptr(p)
    err, attrs = rt.cudaPointerGetAttributes(p)
    assert err == E.cudaSuccess and attrs.type == rt.cudaMemoryType.cudaMemoryTypeHost
    assert int(attrs.hostPointer) == int(p) == int(attrs.devicePointer)


# ------------------------------------------------------------------ pointer arguments

def test_a_numpy_array_is_a_pointer_argument_by_its_buffer(dptr):
    src = np.arange(N, dtype=np.float32)
    assert rt.cudaMemcpy(dptr, src, src.nbytes, H2D) == OK
    out = np.zeros(N, np.float32)
    assert rt.cudaMemcpy(out, dptr, out.nbytes, D2H) == OK
    np.testing.assert_array_equal(out, src)


def test_a_ctypes_value_is_a_pointer_argument_by_its_address(dptr):
    src = ctypes.c_double(2.5)
    assert rt.cudaMemcpy(dptr, src, 8, H2D) == OK
    dst = ctypes.c_double(0.0)
    assert rt.cudaMemcpy(dst, dptr, 8, D2H) == OK
    assert dst.value == 2.5


def test_a_pointer_argument_of_no_pointer_type_is_a_type_error(dptr):
    with pytest.raises(TypeError, match="^Provided argument is of type <class 'str'>"):
        rt.cudaMemcpy("not a pointer", dptr, 8, D2H)


def test_a_memcpy_node_takes_buffers_as_pointers_too(res, dptr):
    src, out = np.full(N, 4.0, np.float32), np.zeros(N, np.float32)
    err, g = rt.cudaGraphCreate(0)
    res.graph(g)
    err, a = rt.cudaGraphAddMemcpyNode1D(g, None, 0, dptr, src, src.nbytes, H2D)
    assert err == E.cudaSuccess
    err, _ = rt.cudaGraphAddMemcpyNode1D(g, [a], 1, out, dptr, out.nbytes, D2H)
    assert err == E.cudaSuccess
    err, ge = rt.cudaGraphInstantiate(g, 0)
    res.exec(ge)
    s = res.stream()
    assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaStreamSynchronize(s) == OK
    np.testing.assert_array_equal(out, src)


# ------------------------------------------------------------------ structs and callbacks

def test_device_properties_are_cuda_bindings_own_struct():
    from cuda.bindings import runtime as cuda_rt
    err, p = rt.cudaGetDeviceProperties(0)
    assert err == E.cudaSuccess and isinstance(p, cuda_rt.cudaDeviceProp)
    assert p.name.rstrip(b"\0") and p.warpSize == 32 and p.multiProcessorCount > 0
    assert len(bytes(p.uuid.bytes)) == 16


def test_a_captured_kernel_node_reads_back_as_cuda_bindings_struct(res):
    from cuda.bindings import runtime as cuda_rt
    from kernels import add_one
    s, x = res.stream(), labkit.to_device(np.zeros(N, np.float32))
    assert rt.cudaStreamBeginCapture(s, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal) == OK
    add_one[(2, 1), 32, s](x)
    err, g = rt.cudaStreamEndCapture(s)
    res.graph(g)
    node = rt.cudaGraphGetNodes(g, 1)[1][0]
    err, p = rt.cudaGraphKernelNodeGetParams(node)
    assert err == E.cudaSuccess and isinstance(p, cuda_rt.cudaKernelNodeParams)
    assert (p.gridDim.x, p.gridDim.y, p.blockDim.x) == (2, 1, 32)


_calls: list = []
_STREAM_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(
    lambda stream, status, data: _calls.append((status, data)))


def test_stream_add_callback_calls_back_with_success_and_the_user_data(res):
    s = res.stream()
    _calls.clear()
    cb = ctypes.cast(_STREAM_CB, ctypes.c_void_p).value
    assert rt.cudaStreamAddCallback(s, rt.cudaStreamCallback_t(cb), 1234, 0) == OK
    assert rt.cudaStreamSynchronize(s) == OK
    assert _calls == [(0, 1234)]


def test_a_2d_copy_moves_a_sub_matrix_row_by_row(dptr):
    host = np.arange(64, dtype=np.float32).reshape(8, 8)
    # rows 0..3, columns 0..3 of the host matrix into a packed 4x4 block on the device
    assert rt.cudaMemcpy2D(dptr, 16, host, 32, 16, 4, H2D) == OK
    out = np.zeros(16, np.float32)
    assert rt.cudaMemcpy(out, dptr, 64, D2H) == OK
    np.testing.assert_array_equal(out.reshape(4, 4), host[:4, :4])
    assert rt.cudaMemcpy2D(dptr, 8, host, 32, 16, 4, H2D) == (E.cudaErrorInvalidPitchValue,)
    rt.cudaGetLastError()


def test_memory_info_counts_an_allocation_against_the_total():
    err, free0, total = rt.cudaMemGetInfo()
    assert err == E.cudaSuccess and 0 < free0 <= total
    assert total == rt.cudaGetDeviceProperties(0)[1].totalGlobalMem
    err, d = rt.cudaMalloc(64 << 20)
    assert rt.cudaMemGetInfo()[1] <= free0 - (64 << 20)
    assert rt.cudaFree(d) == OK


def test_a_stream_reports_the_flags_it_was_made_with(res):
    assert rt.cudaStreamGetFlags(res.stream(nonblocking=True)) == (
        E.cudaSuccess, rt.cudaStreamNonBlocking)
    assert rt.cudaStreamGetFlags(res.stream(nonblocking=False)) == (
        E.cudaSuccess, rt.cudaStreamDefault)
