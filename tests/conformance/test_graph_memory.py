"""Conformance: graph memory nodes follow CUDA's rules, the same file on both backends.

NOT PROBED on the H200 yet: every rule here is CUDA's documentation (cudaGraphLaunch,
cudaGraphInstantiate, cudaGraphAddMemFreeNode, the programming guide's "Graph memory nodes");
the GPU issue runs this file there. Where the documentation says only "an error", the test
asserts that the call fails, not which code.

An allocation node's address is fixed when the node is made; each launch allocates it anew and
it lives until freed (in the graph, in another graph, by cudaFreeAsync or cudaFree). A relaunch
while last launch's allocation is unfreed is cudaErrorInvalidValue, unless the executable was
instantiated with AutoFreeOnLaunch. A graph with memory nodes has one executable at a time and
cannot be cloned.
"""
from __future__ import annotations

import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
from labkit import rt

E = rt.cudaError_t
OK = (E.cudaSuccess,)
H2D = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
D2H = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
AUTO_FREE = rt.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagAutoFreeOnLaunch
MEM = rt.cudaGraphMemAttributeType
N = 1024
NBYTES = N * 4


def alloc_params(nbytes=NBYTES):
    p = rt.cudaMemAllocNodeParams()
    p.bytesize = nbytes
    p.poolProps.allocType = rt.cudaMemAllocationType.cudaMemAllocationTypePinned
    p.poolProps.location.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice
    p.poolProps.location.id = 0
    return p


def new_graph(res):
    err, g = rt.cudaGraphCreate(0)
    assert err == E.cudaSuccess
    return res.graph(g)


def round_trip_graph(res, host_in, host_out, free_in_graph=True):
    """alloc -> copy host_in in -> copy out to host_out [-> free]; returns (graph, address)."""
    g = new_graph(res)
    p = alloc_params()
    err, a = rt.cudaGraphAddMemAllocNode(g, None, 0, p)
    assert err == E.cudaSuccess and int(p.dptr) != 0
    d = int(p.dptr)
    err, cin = rt.cudaGraphAddMemcpyNode1D(g, [a], 1, d, host_in, NBYTES, H2D)
    err, cout = rt.cudaGraphAddMemcpyNode1D(g, [cin], 1, host_out, d, NBYTES, D2H)
    assert err == E.cudaSuccess
    if free_in_graph:
        assert rt.cudaGraphAddMemFreeNode(g, [cout], 1, d)[0] == E.cudaSuccess
    return g, d


def instantiate(res, g, flags=0):
    err, ge = rt.cudaGraphInstantiate(g, flags)
    assert err == E.cudaSuccess, err
    return res.exec(ge)


def run(ge, s):
    assert rt.cudaGraphLaunch(ge, s) == OK
    assert rt.cudaStreamSynchronize(s) == OK


def test_each_launch_allocates_anew_and_a_graph_that_frees_relaunches(res):
    host_in, host_out = np.zeros(N, np.float32), np.zeros(N, np.float32)
    g, _ = round_trip_graph(res, host_in, host_out)
    ge, s = instantiate(res, g), res.stream()
    for value in (1.0, 2.0, 3.0):
        host_in[:] = value
        run(ge, s)
        np.testing.assert_array_equal(host_out, host_in)


def test_a_relaunch_while_the_last_allocation_is_unfreed_is_invalid_value(res):
    host_in, host_out = np.full(N, 5.0, np.float32), np.zeros(N, np.float32)
    g, d = round_trip_graph(res, host_in, host_out, free_in_graph=False)
    ge, s = instantiate(res, g), res.stream()
    run(ge, s)
    np.testing.assert_array_equal(host_out, host_in)      # readable after the launch, too
    assert rt.cudaGraphLaunch(ge, s) == (E.cudaErrorInvalidValue,)
    assert rt.cudaGetLastError() == (E.cudaErrorInvalidValue,)
    assert rt.cudaFree(d) == OK                            # freed outside any graph
    host_in[:] = 6.0
    run(ge, s)                                             # allocated anew
    np.testing.assert_array_equal(host_out, host_in)
    assert rt.cudaFreeAsync(d, s) == OK                    # or freed in stream order
    assert rt.cudaStreamSynchronize(s) == OK


def test_auto_free_on_launch_frees_the_last_allocation_at_a_relaunch(res):
    host_in, host_out = np.full(N, 7.0, np.float32), np.zeros(N, np.float32)
    g, d = round_trip_graph(res, host_in, host_out, free_in_graph=False)
    ge, s = instantiate(res, g, AUTO_FREE), res.stream()
    run(ge, s)
    run(ge, s)
    np.testing.assert_array_equal(host_out, host_in)
    assert rt.cudaFree(d) == OK


def test_a_free_node_in_another_graph_frees_the_allocation(res):
    host_in, host_out = np.full(N, 8.0, np.float32), np.zeros(N, np.float32)
    g, d = round_trip_graph(res, host_in, host_out, free_in_graph=False)
    free_g = new_graph(res)
    assert rt.cudaGraphAddMemFreeNode(free_g, None, 0, d)[0] == E.cudaSuccess
    ge, free_ge, s = instantiate(res, g), instantiate(res, free_g), res.stream()
    for _ in range(2):
        run(ge, s)
        run(free_ge, s)


def test_a_graph_with_memory_nodes_has_one_executable_at_a_time(res):
    g, _ = round_trip_graph(res, np.zeros(N, np.float32), np.zeros(N, np.float32))
    err, first = rt.cudaGraphInstantiate(g, 0)
    assert err == E.cudaSuccess
    err, second = rt.cudaGraphInstantiate(g, 0)
    assert err != E.cudaSuccess                            # "an error": code not documented
    rt.cudaGetLastError()
    assert rt.cudaGraphExecDestroy(first) == OK
    instantiate(res, g)


def test_a_graph_with_memory_nodes_cannot_be_cloned(res):
    g, _ = round_trip_graph(res, np.zeros(N, np.float32), np.zeros(N, np.float32))
    err, clone = rt.cudaGraphClone(g)
    assert err != E.cudaSuccess                            # "cannot be cloned": code not documented
    rt.cudaGetLastError()


def test_a_free_node_takes_only_an_allocation_nodes_address_once_per_graph(res):
    err, plain = rt.cudaMalloc(NBYTES)
    g = new_graph(res)
    assert rt.cudaGraphAddMemFreeNode(g, None, 0, plain) == (E.cudaErrorInvalidValue, None)
    assert rt.cudaFree(plain) == OK
    g2, d = round_trip_graph(res, np.zeros(N, np.float32), np.zeros(N, np.float32))
    assert rt.cudaGraphAddMemFreeNode(g2, None, 0, d) == (E.cudaErrorInvalidValue, None)
    rt.cudaGetLastError()


def test_the_graph_memory_footprint_counts_live_allocations_and_trim_gives_back(res):
    def attr(a):
        err, v = rt.cudaDeviceGetGraphMemAttribute(0, a)
        assert err == E.cudaSuccess
        return int(v)
    host_in, host_out = np.zeros(N, np.float32), np.zeros(N, np.float32)   # alive while it runs
    g, d = round_trip_graph(res, host_in, host_out, free_in_graph=False)
    ge, s = instantiate(res, g), res.stream()
    before = attr(MEM.cudaGraphMemAttrUsedMemCurrent)
    run(ge, s)
    live = attr(MEM.cudaGraphMemAttrUsedMemCurrent)
    assert live >= before + NBYTES
    assert attr(MEM.cudaGraphMemAttrUsedMemHigh) >= live
    assert attr(MEM.cudaGraphMemAttrReservedMemCurrent) >= live
    assert rt.cudaFree(d) == OK
    assert attr(MEM.cudaGraphMemAttrUsedMemCurrent) <= live - NBYTES
    reserved = attr(MEM.cudaGraphMemAttrReservedMemCurrent)
    assert rt.cudaDeviceGraphMemTrim(0) == OK
    assert attr(MEM.cudaGraphMemAttrReservedMemCurrent) <= reserved
    assert rt.cudaDeviceSetGraphMemAttribute(0, MEM.cudaGraphMemAttrUsedMemHigh, 0) == OK


def test_a_captured_malloc_async_is_an_allocation_node_made_at_each_launch(res):
    host_in, host_out = np.full(N, 9.0, np.float32), np.zeros(N, np.float32)
    s, cap = res.stream(), res.stream()
    glob = rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    assert rt.cudaStreamBeginCapture(cap, glob) == OK
    err, d = rt.cudaMallocAsync(NBYTES, cap)
    assert err == E.cudaSuccess
    assert rt.cudaMemcpyAsync(d, host_in, NBYTES, H2D, cap) == OK
    assert rt.cudaMemcpyAsync(host_out, d, NBYTES, D2H, cap) == OK
    assert rt.cudaFreeAsync(d, cap) == OK
    err, g = rt.cudaStreamEndCapture(cap)
    res.graph(g)
    types = [rt.cudaGraphNodeGetType(n)[1] for n in rt.cudaGraphGetNodes(g, 4)[1]]
    assert types[0] == rt.cudaGraphNodeType.cudaGraphNodeTypeMemAlloc
    assert types[-1] == rt.cudaGraphNodeType.cudaGraphNodeTypeMemFree
    ge = instantiate(res, g)
    for value in (9.0, 10.0):
        host_in[:] = value
        run(ge, s)
        np.testing.assert_array_equal(host_out, host_in)
