"""Conformance: NVIDIA's graph samples (cuda-samples, 3_CUDA_Features), ported to labkit.rt and
run unchanged on both backends.

Ported: simpleCudaGraphs (the manual and the stream-capture paths, each with a clone),
graphMemoryNodes (stream-captured and explicit graphs; the result freed outside the stream, in
stream order outside the graph, and in another graph), graphConditionalNodes (IF, IF/ELSE,
do-while, a WHILE added during capture, SWITCH; kernel nodes added with cudaGraphAddNode) and
jacobiCudaGraphs' two update loops (cudaGraphExecKernelNodeSetParams, and capture with
cudaGraphExecUpdate). Every CUDA call is the sample's own, through ``labkit.rt``.

What a port changes: the kernels are labkit kernels (numba) on labkit arrays, so where a sample
hands a kernel a raw pointer (graphMemoryNodes' graph allocations), the port copies between that
memory and a labkit array around the kernel; a sample's printf becomes a write the test checks;
sizes are small. NOT PROBED on the H200 yet: the GPU issue runs this file there.
"""
from __future__ import annotations

import ctypes

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
from labkit import explicit, rt, set_condition
from numba import cuda

E = rt.cudaError_t
NT = rt.cudaGraphNodeType
OK = (E.cudaSuccess,)
H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
D2D = rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice
DEFAULT = rt.cudaMemcpyKind.cudaMemcpyDefault
GLOBAL = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
T = rt.cudaGraphConditionalNodeType
THREADS = 64


def ptr(a):
    return a.device_ctypes_pointer.value


def ok(result):
    assert result[0] == E.cudaSuccess, result[0]
    return result[1] if len(result) == 2 else result[1:]


def add_kernel(g, deps, kernel, grid=None, block=None, *args):
    """cudaGraphAddKernelNode of a labkit kernel (its parameter block built by labkit)."""
    return explicit.add_kernel_node(labkit.Graph(g, owned=False), list(deps), kernel, grid,
                                    block, *args)


# ================================================================== simpleCudaGraphs

def _reduce_ref(grid, block, x, partial):
    partial[:] = x.reshape(partial.size, -1).astype(np.float64).sum(axis=1)


@labkit.kernel(reference=_reduce_ref)
@cuda.jit
def reduce(x, partial):
    i = cuda.grid(1)
    if i < partial.size:
        chunk = x.size // partial.size
        s = 0.0
        for j in range(i * chunk, (i + 1) * chunk):
            s += x[j]
        partial[i] = s


def _reduce_final_ref(grid, block, partial, result):
    result[0] = partial.sum()


@labkit.kernel(reference=_reduce_final_ref)
@cuda.jit
def reduce_final(partial, result):
    if cuda.grid(1) == 0:
        s = 0.0
        for j in range(partial.size):
            s += partial[j]
        result[0] = s


_seen: list = []        # what the host node saw, as the sample's callback prints it
_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
    lambda p: _seen.append(ctypes.c_double.from_address(p).value))
_FN = ctypes.cast(_CALLBACK, ctypes.c_void_p).value


def _sample_input(n=4096, blocks=64):
    x = (np.arange(n) % 7).astype(np.float32)     # small integers: every sum is exact
    return x, float(x.astype(np.float64).sum()), blocks


def _pitched_copy(dst, src, nbytes, kind):
    p = rt.cudaMemcpy3DParms()
    p.srcPos, p.dstPos = rt.make_cudaPos(0, 0, 0), rt.make_cudaPos(0, 0, 0)
    p.srcPtr = rt.make_cudaPitchedPtr(src, nbytes, nbytes, 1)
    p.dstPtr = rt.make_cudaPitchedPtr(dst, nbytes, nbytes, 1)
    p.extent, p.kind = rt.make_cudaExtent(nbytes, 1, 1), kind
    return p


def _memset(dst, width_floats):
    p = rt.cudaMemsetParams()
    p.dst, p.value, p.pitch, p.elementSize, p.width, p.height = dst, 0, 0, 4, width_floats, 1
    return p


def _launch_n(res, g, times=3):
    s, ge = res.stream(nonblocking=False), res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    for _ in range(times):
        assert rt.cudaGraphLaunch(ge, s) == OK
    assert rt.cudaStreamSynchronize(s) == OK


def test_simple_cuda_graphs_manual_path_and_its_clone(res):
    x_h, want, blocks = _sample_input()
    x_d = labkit.to_device(np.zeros_like(x_h))
    partial = labkit.to_device(np.full(blocks, 99.0))
    result_d = labkit.to_device(np.full(1, 99.0))
    result_h = np.zeros(1, np.float64)
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    copy = ok(rt.cudaGraphAddMemcpyNode(g, None, 0, _pitched_copy(ptr(x_d), x_h, x_h.nbytes, H2D)))
    clear = ok(rt.cudaGraphAddMemsetNode(g, None, 0, _memset(ptr(partial), blocks * 2)))
    k1 = add_kernel(g, [clear, copy], reduce, blocks, THREADS, x_d, partial)
    clear2 = ok(rt.cudaGraphAddMemsetNode(g, None, 0, _memset(ptr(result_d), 2)))
    k2 = add_kernel(g, [k1, clear2], reduce_final, 1, THREADS, partial, result_d)
    back = ok(rt.cudaGraphAddMemcpyNode(g, [k2], 1, _pitched_copy(result_h, ptr(result_d), 8, D2H)))
    host = rt.cudaHostNodeParams()
    host.fn, host.userData = rt.cudaHostFn_t(_FN), result_h.ctypes.data
    ok(rt.cudaGraphAddHostNode(g, [back], 1, host))
    assert rt.cudaGraphGetNodes(g)[2] == 7
    clone = res.graph(ok(rt.cudaGraphClone(g)))
    _seen.clear()
    _launch_n(res, g)
    _launch_n(res, clone)
    assert _seen == [want] * 6
    np.testing.assert_array_equal(partial.copy_to_host(),
                                  x_h.reshape(blocks, -1).astype(np.float64).sum(axis=1))


def test_simple_cuda_graphs_stream_capture_path_and_its_clone(res):
    x_h, want, blocks = _sample_input()
    x_d = labkit.to_device(np.zeros_like(x_h))
    partial = labkit.to_device(np.full(blocks, 99.0))
    result_d = labkit.to_device(np.full(1, 99.0))
    result_h = np.zeros(1, np.float64)
    s1, s2, s3 = (res.stream(nonblocking=False) for _ in range(3))
    fork, m1, m2 = res.event(), res.event(), res.event()
    assert rt.cudaStreamBeginCapture(s1, GLOBAL) == OK
    assert rt.cudaEventRecord(fork, s1) == OK
    assert rt.cudaStreamWaitEvent(s2, fork, 0) == OK and rt.cudaStreamWaitEvent(s3, fork, 0) == OK
    assert rt.cudaMemcpyAsync(ptr(x_d), x_h, x_h.nbytes, DEFAULT, s1) == OK
    assert rt.cudaMemsetAsync(ptr(partial), 0, 8 * blocks, s2) == OK
    assert rt.cudaEventRecord(m1, s2) == OK
    assert rt.cudaMemsetAsync(ptr(result_d), 0, 8, s3) == OK
    assert rt.cudaEventRecord(m2, s3) == OK
    assert rt.cudaStreamWaitEvent(s1, m1, 0) == OK
    reduce[blocks, THREADS, s1](x_d, partial)
    assert rt.cudaStreamWaitEvent(s1, m2, 0) == OK
    reduce_final[1, THREADS, s1](partial, result_d)
    assert rt.cudaMemcpyAsync(result_h, ptr(result_d), 8, DEFAULT, s1) == OK
    assert rt.cudaLaunchHostFunc(s1, rt.cudaHostFn_t(_FN), result_h.ctypes.data) == OK
    g = res.graph(ok(rt.cudaStreamEndCapture(s1)))
    assert rt.cudaGraphGetNodes(g)[2] == 7
    clone = res.graph(ok(rt.cudaGraphClone(g)))
    _seen.clear()
    _launch_n(res, g)
    _launch_n(res, clone)
    assert _seen == [want] * 6


# ================================================================== graphMemoryNodes

def _square_ref(grid, block, x, out):
    out[:] = x * x


@labkit.kernel(reference=_square_ref)
@cuda.jit
def square(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * x[i]


def _negate_ref(grid, block, x, out):
    out[:] = -x


@labkit.kernel(reference=_negate_ref)
@cuda.jit
def negate(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = -x[i]


class NegSquares:
    """The sample's arrays, and labkit arrays the kernels work on between graph allocations."""

    def __init__(self, n=2048):
        self.n, self.nbytes, self.blocks = n, n * 4, n // THREADS
        self.input = np.random.default_rng(3).random(n).astype(np.float32)
        self.square = np.zeros(n, np.float32)
        self.neg = np.zeros(n, np.float32)
        self.work = [labkit.to_device(np.zeros(n, np.float32)) for _ in range(4)]
        assert rt.cudaDeviceSynchronize() == OK

    def reset(self):
        self.square[:], self.neg[:] = 5.0, 5.0

    def check(self):
        np.testing.assert_allclose(self.square, self.input * self.input, rtol=1e-6)
        np.testing.assert_allclose(self.neg, -self.input * self.input, rtol=1e-6)


def _alloc_params(nbytes):
    p = rt.cudaMemAllocNodeParams()
    p.bytesize = nbytes
    p.poolProps.allocType = rt.cudaMemAllocationType.cudaMemAllocationTypePinned
    p.poolProps.location.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice
    p.poolProps.location.id = 0
    return p


def _neg_squares_explicitly(res, a: NegSquares, keep_neg=False):
    """createNegateSquaresGraphExplicitly; returns (executable, d_negSquare or None)."""
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    x, y, x2, y2 = a.work
    p = _alloc_params(a.nbytes)
    alloc_in = ok(rt.cudaGraphAddMemAllocNode(g, None, 0, p))
    d_input = int(p.dptr)
    alloc_sq = ok(rt.cudaGraphAddMemAllocNode(g, [alloc_in], 1, p))
    d_square = int(p.dptr)
    copy_in = ok(rt.cudaGraphAddMemcpyNode1D(g, [alloc_sq], 1, d_input, a.input, a.nbytes, H2D))
    to_x = ok(rt.cudaGraphAddMemcpyNode1D(g, [copy_in], 1, ptr(x), d_input, a.nbytes, D2D))
    k_sq = add_kernel(g, [to_x], square, a.blocks, THREADS, x, y)
    from_y = ok(rt.cudaGraphAddMemcpyNode1D(g, [k_sq], 1, d_square, ptr(y), a.nbytes, D2D))
    copy_sq = ok(rt.cudaGraphAddMemcpyNode1D(g, [from_y], 1, a.square, d_square, a.nbytes, D2H))
    free_in = ok(rt.cudaGraphAddMemFreeNode(g, [to_x], 1, d_input))
    alloc_neg = ok(rt.cudaGraphAddMemAllocNode(g, [free_in], 1, p))
    d_neg = int(p.dptr)
    to_x2 = ok(rt.cudaGraphAddMemcpyNode1D(g, [alloc_neg, from_y], 2, ptr(x2), d_square,
                                           a.nbytes, D2D))
    k_neg = add_kernel(g, [to_x2], negate, a.blocks, THREADS, x2, y2)
    from_y2 = ok(rt.cudaGraphAddMemcpyNode1D(g, [k_neg], 1, d_neg, ptr(y2), a.nbytes, D2D))
    ok(rt.cudaGraphAddMemFreeNode(g, [copy_sq, to_x2], 2, d_square))
    copy_neg = ok(rt.cudaGraphAddMemcpyNode1D(g, [from_y2], 1, a.neg, d_neg, a.nbytes, D2H))
    if not keep_neg:
        ok(rt.cudaGraphAddMemFreeNode(g, [copy_neg], 1, d_neg))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    return ge, (d_neg if keep_neg else None)


def _neg_squares_in_stream(res, a: NegSquares, s1):
    """doNegateSquaresInStream, captured on s1 (stream2 forked and joined by events)."""
    x, y, x2, y2 = a.work
    s2 = res.stream(nonblocking=True)
    sq_done, neg_done, sq_freed = res.event(), res.event(), res.event()
    d_input = ok(rt.cudaMallocAsync(a.nbytes, s1))
    d_square = ok(rt.cudaMallocAsync(a.nbytes, s1))
    assert rt.cudaMemcpyAsync(d_input, a.input, a.nbytes, H2D, s1) == OK
    assert rt.cudaMemcpyAsync(ptr(x), d_input, a.nbytes, D2D, s1) == OK
    square[a.blocks, THREADS, s1](x, y)
    assert rt.cudaMemcpyAsync(d_square, ptr(y), a.nbytes, D2D, s1) == OK
    assert rt.cudaEventRecord(sq_done, s1) == OK
    assert rt.cudaStreamWaitEvent(s2, sq_done, 0) == OK
    assert rt.cudaMemcpyAsync(a.square, d_square, a.nbytes, D2H, s2) == OK
    assert rt.cudaFreeAsync(d_input, s1) == OK
    d_neg = ok(rt.cudaMallocAsync(a.nbytes, s1))
    assert rt.cudaMemcpyAsync(ptr(x2), d_square, a.nbytes, D2D, s1) == OK
    negate[a.blocks, THREADS, s1](x2, y2)
    assert rt.cudaMemcpyAsync(d_neg, ptr(y2), a.nbytes, D2D, s1) == OK
    assert rt.cudaEventRecord(neg_done, s1) == OK
    assert rt.cudaMemcpyAsync(a.neg, d_neg, a.nbytes, D2H, s1) == OK
    assert rt.cudaFreeAsync(d_neg, s1) == OK
    assert rt.cudaStreamWaitEvent(s2, neg_done, 0) == OK
    assert rt.cudaFreeAsync(d_square, s2) == OK
    assert rt.cudaEventRecord(sq_freed, s2) == OK
    assert rt.cudaStreamWaitEvent(s1, sq_freed, 0) == OK


def test_graph_memory_nodes_in_a_stream_captured_graph(res):
    a, s = NegSquares(), res.stream(nonblocking=True)
    cap = res.stream(nonblocking=True)
    assert rt.cudaStreamBeginCapture(cap, GLOBAL) == OK
    _neg_squares_in_stream(res, a, cap)
    g = res.graph(ok(rt.cudaStreamEndCapture(cap)))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    for _ in range(2):
        a.reset()
        assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaStreamSynchronize(s) == OK
        a.check()


def test_graph_memory_nodes_in_an_explicit_graph_and_freed_three_ways_outside_it(res):
    a, s = NegSquares(), res.stream(nonblocking=True)
    ge, _ = _neg_squares_explicitly(res, a)
    a.reset()
    assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaStreamSynchronize(s) == OK
    a.check()
    ge, d_neg = _neg_squares_explicitly(res, a, keep_neg=True)
    ref = labkit.to_device(np.zeros(a.n, np.float32))
    # freed outside the stream (cudaFree, after a synchronize)
    a.reset()
    assert rt.cudaGraphLaunch(ge, s) == OK
    assert rt.cudaMemcpyAsync(ptr(ref), d_neg, a.nbytes, D2D, s) == OK   # usable after it
    assert rt.cudaStreamSynchronize(s) == OK and rt.cudaFree(d_neg) == OK
    a.check()
    np.testing.assert_array_equal(ref.copy_to_host(), a.neg)
    # freed outside the graph, in stream order
    a.reset()
    assert rt.cudaGraphLaunch(ge, s) == OK
    assert rt.cudaFreeAsync(d_neg, s) == OK and rt.cudaStreamSynchronize(s) == OK
    a.check()
    # freed in a different graph
    free_g = res.graph(ok(rt.cudaGraphCreate(0)))
    ok(rt.cudaGraphAddMemFreeNode(free_g, None, 0, d_neg))
    free_ge = res.exec(ok(rt.cudaGraphInstantiate(free_g, 0)))
    a.reset()
    assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaGraphLaunch(free_ge, s) == OK
    assert rt.cudaStreamSynchronize(s) == OK
    a.check()


# ================================================================== graphConditionalNodes

@labkit.kernel
def set_from(d, h):
    set_condition(h, d[0])


@labkit.kernel
def mark(out, i):
    out[i] += 1


@labkit.kernel
def count_down(d, h):
    d[0] -= 1
    if d[0] == 0:
        set_condition(h, 0)


@labkit.kernel
def captured_while(d, h):
    if d[0] > 0:
        d[0] -= 1
    set_condition(h, d[0])


def kernel_node(kernel, *args):
    """cudaGraphNodeParams of type kernel for ``kernel[1, 1](*args)``: labkit builds the
    parameter block; the node names the function by its handle (cuFunc)."""
    lp = kernel.params(1, 1, *args)
    native = lp.native.node_params          # the driver's struct on a GPU, the runtime's on sim
    p = rt.cudaGraphNodeParams()
    p.type = NT.cudaGraphNodeTypeKernel
    p.kernel.functionType = rt.cudaKernelFunctionType.cudaKernelFunctionTypeFunction
    p.kernel.cuFunc = native.func
    p.kernel.gridDim, p.kernel.blockDim = _dim3(lp.grid), _dim3(lp.block)
    p.kernel.kernelParams = int(native.kernelParams)
    return p, lp


def _dim3(xyz):
    d = rt.dim3()
    d.x, d.y, d.z = xyz
    return d


def cond_params(h, ctype, size):
    p = rt.cudaGraphNodeParams()
    p.type = NT.cudaGraphNodeTypeConditional
    p.conditional.handle, p.conditional.type, p.conditional.size = h, ctype, size
    return p


def H(h):
    return np.uint64(int(h))


def _u8(value=0, n=1):
    a = labkit.to_device(np.full(n, value, np.uint8))
    assert rt.cudaDeviceSynchronize() == OK
    return a


def _if_graph(res, d, out, size):
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    h = ok(rt.cudaGraphConditionalHandleCreate(g, 0, 0))
    p, keep = kernel_node(set_from, d, H(h))
    k = ok(rt.cudaGraphAddNode(g, None, None, 0, p))
    c = cond_params(h, T.cudaGraphCondTypeIf, size)
    ok(rt.cudaGraphAddNode(g, [k], None, 1, c))
    kept = [keep]
    for i, body in enumerate(list(c.conditional.phGraph_out)[:size]):
        bp, keep = kernel_node(mark, out, np.int32(i))
        ok(rt.cudaGraphAddNode(body, None, None, 0, bp))
        kept.append(keep)
    return res.exec(ok(rt.cudaGraphInstantiate(g, 0))), kept


def _run_with(ge, d, value):
    assert rt.cudaMemset(ptr(d), value, 1) == OK
    assert rt.cudaGraphLaunch(ge, 0) == OK and rt.cudaDeviceSynchronize() == OK


def test_graph_conditional_nodes_simple_if_and_if_else(res):
    d = _u8()
    out = labkit.to_device(np.zeros(2, np.int32))
    ge, _kept = _if_graph(res, d, out, 1)
    _run_with(ge, d, 0)
    _run_with(ge, d, 1)
    assert out.copy_to_host().tolist() == [1, 0]
    out2 = labkit.to_device(np.zeros(2, np.int32))
    ge2, _kept2 = _if_graph(res, d, out2, 2)
    _run_with(ge2, d, 0)
    _run_with(ge2, d, 1)
    assert out2.copy_to_host().tolist() == [1, 1]


def test_graph_conditional_nodes_do_while_captured_into_the_body(res):
    d = _u8()
    out = labkit.to_device(np.zeros(1, np.int32))
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    h = ok(rt.cudaGraphConditionalHandleCreate(
        g, 1, int(rt.cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault)))
    c = cond_params(h, T.cudaGraphCondTypeWhile, 1)
    ok(rt.cudaGraphAddNode(g, None, None, 0, c))
    body = list(c.conditional.phGraph_out)[0]
    s = res.stream(nonblocking=False)
    assert rt.cudaStreamBeginCaptureToGraph(s, body, None, None, 0, GLOBAL) == OK
    mark[1, 1, s](out, np.int32(0))
    count_down[1, 1, s](d, H(h))
    assert rt.cudaStreamEndCapture(s)[0] == E.cudaSuccess
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    _run_with(ge, d, 10)
    assert out.copy_to_host().tolist() == [10] and d.copy_to_host().tolist() == [0]


def test_graph_conditional_nodes_while_added_during_capture(res):
    d = _u8()
    out = labkit.to_device(np.zeros(1, np.int32))
    s = res.stream(nonblocking=False)
    assert rt.cudaStreamBeginCapture(s, GLOBAL) == OK
    info = rt.cudaStreamGetCaptureInfo(s)
    g = info[3]
    h = ok(rt.cudaGraphConditionalHandleCreate(g, 0, 0))
    captured_while[1, 1, s](d, H(h))
    info = rt.cudaStreamGetCaptureInfo(s)
    deps = list(info[4])[:info[6]]
    c = cond_params(h, T.cudaGraphCondTypeWhile, 1)
    node = ok(rt.cudaGraphAddNode(g, deps, None, len(deps), c))
    body = list(c.conditional.phGraph_out)[0]
    set_deps = rt.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies
    assert rt.cudaStreamUpdateCaptureDependencies(s, [node], None, 1, set_deps) == OK
    mark[1, 1, s](out, np.int32(0))
    g = res.graph(ok(rt.cudaStreamEndCapture(s)))
    body_stream = res.stream(nonblocking=False)
    assert rt.cudaStreamBeginCaptureToGraph(body_stream, body, None, None, 0, GLOBAL) == OK
    captured_while[1, 1, body_stream](d, H(h))
    assert rt.cudaStreamEndCapture(body_stream)[0] == E.cudaSuccess
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    _run_with(ge, d, 0)
    assert d.copy_to_host().tolist() == [0] and out.copy_to_host().tolist() == [1]
    _run_with(ge, d, 10)
    assert d.copy_to_host().tolist() == [0] and out.copy_to_host().tolist() == [2]


def test_graph_conditional_nodes_switch(res):
    d = _u8()
    out = labkit.to_device(np.zeros(4, np.int32))
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    h = ok(rt.cudaGraphConditionalHandleCreate(g, 0, 0))
    p, keep = kernel_node(set_from, d, H(h))
    k = ok(rt.cudaGraphAddNode(g, None, None, 0, p))
    c = cond_params(h, T.cudaGraphCondTypeSwitch, 4)
    ok(rt.cudaGraphAddNode(g, [k], None, 1, c))
    kept = [keep]
    for i, body in enumerate(list(c.conditional.phGraph_out)[:4]):
        bp, keep = kernel_node(mark, out, np.int32(i))
        ok(rt.cudaGraphAddNode(body, None, None, 0, bp))
        kept.append(keep)
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    for v in (0, 1, 2, 3, 4, 5):
        _run_with(ge, d, v)
    assert out.copy_to_host().tolist() == [1, 1, 1, 1]


# ================================================================== jacobiCudaGraphs

ROWS = 32


def _jacobi_ref(grid, block, A, b, x, x_new, diff):
    n = b.size
    for i in range(n):
        s = 0.0
        for j in range(n):
            if j != i:
                s += A[i, j] * x[j]
        x_new[i] = (b[i] - s) / A[i, i]
        diff[i] = abs(x_new[i] - x[i])


@labkit.kernel(reference=_jacobi_ref)
@cuda.jit
def jacobi(A, b, x, x_new, diff):
    i = cuda.grid(1)
    if i < b.size:
        s = 0.0
        for j in range(b.size):
            if j != i:
                s += A[i, j] * x[j]
        x_new[i] = (b[i] - s) / A[i, i]
        diff[i] = abs(x_new[i] - x[i])


def _total_ref(grid, block, diff, total):
    s = 0.0
    for v in diff:
        s += v
    total[0] = s


@labkit.kernel(reference=_total_ref)
@cuda.jit
def total(diff, total):
    if cuda.grid(1) == 0:
        s = 0.0
        for j in range(diff.size):
            s += diff[j]
        total[0] = s


class Jacobi:
    def __init__(self):
        rng = np.random.default_rng(5)
        A = rng.random((ROWS, ROWS))
        A[np.diag_indices(ROWS)] = ROWS + 1.0          # diagonally dominant: converges
        self.A_h, self.b_h = A, rng.random(ROWS)
        self.A, self.b = labkit.to_device(A), labkit.to_device(self.b_h)
        self.x = labkit.to_device(np.zeros(ROWS))
        self.x_new = labkit.to_device(np.zeros(ROWS))
        self.diff = labkit.to_device(np.zeros(ROWS))
        self.d_sum = labkit.to_device(np.zeros(1))
        self.sum = np.zeros(1)
        assert rt.cudaDeviceSynchronize() == OK

    def solution(self, k):
        return (self.x_new if k % 2 == 0 else self.x).copy_to_host()

    def check(self, k):
        np.testing.assert_allclose(self.solution(k), np.linalg.solve(self.A_h, self.b_h),
                                   rtol=1e-6)


def test_jacobi_cuda_graphs_exec_kernel_node_set_params_loop(res):
    j, s = Jacobi(), res.stream(nonblocking=True)
    g = res.graph(ok(rt.cudaGraphCreate(0)))
    clear = ok(rt.cudaGraphAddMemsetNode(g, None, 0, _memset(ptr(j.d_sum), 2)))
    even = jacobi.params(1, ROWS, j.A, j.b, j.x, j.x_new, j.diff)
    odd = jacobi.params(1, ROWS, j.A, j.b, j.x_new, j.x, j.diff)
    step = add_kernel(g, [clear], even)
    summed = add_kernel(g, [step], total, 1, 1, j.diff, j.d_sum)
    ok(rt.cudaGraphAddMemcpyNode(g, [summed], 1, _pitched_copy(j.sum, ptr(j.d_sum), 8, D2H)))
    ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
    for k in range(200):
        set_params, args = (even if k % 2 == 0 else odd).native.raw_exec_set(ge, step)
        assert int(set_params(*args)[0]) == 0
        assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaStreamSynchronize(s) == OK
        if j.sum[0] <= 1e-12:
            break
    assert k < 199
    j.check(k)


def test_jacobi_cuda_graphs_capture_and_exec_update_loop(res):
    j, s = Jacobi(), res.stream(nonblocking=True)
    ge = None
    for k in range(200):
        assert rt.cudaStreamBeginCapture(s, GLOBAL) == OK
        assert rt.cudaMemsetAsync(ptr(j.d_sum), 0, 8, s) == OK
        x, x_new = (j.x, j.x_new) if k % 2 == 0 else (j.x_new, j.x)
        jacobi[1, ROWS, s](j.A, j.b, x, x_new, j.diff)
        total[1, 1, s](j.diff, j.d_sum)
        assert rt.cudaMemcpyAsync(j.sum, ptr(j.d_sum), 8, D2H, s) == OK
        g = res.graph(ok(rt.cudaStreamEndCapture(s)))
        if ge is None:
            ge = res.exec(ok(rt.cudaGraphInstantiate(g, 0)))
        else:
            info = ok(rt.cudaGraphExecUpdate(ge, g))
            assert info.result == rt.cudaGraphExecUpdateResult.cudaGraphExecUpdateSuccess
        assert rt.cudaGraphLaunch(ge, s) == OK and rt.cudaStreamSynchronize(s) == OK
        if j.sum[0] <= 1e-12:
            break
    assert k < 199
    j.check(k)
