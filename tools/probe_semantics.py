"""Probe real CUDA's behaviour for the capture/graph scenarios the simulator must follow.

Run on a GPU host: python tools/probe_semantics.py. Prints one line per scenario.
"""
import numpy as np
from cuda.bindings import runtime as rt
from numba import cuda

R = {}


def show(name, *vals):
    print(f"{name}: " + " | ".join(str(v) for v in vals), flush=True)


@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


def ns():
    err, s = rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking)
    assert err == 0
    return s


def nstream(s):
    return cuda.external_stream(int(s))


def nodes_of(g):
    n = rt.cudaGraphGetNodes(g)[2]
    return rt.cudaGraphGetNodes(g, n)[1]


def capstat(s):
    return rt.cudaStreamIsCapturing(s)


a = cuda.to_device(np.zeros(1024, np.float32))
import os
ONLY_TAIL = os.environ.get("PROBE_TAIL") == "1"
s = ns()
add_one[4, 256, nstream(s)](a)
rt.cudaDeviceSynchronize()
M = rt.cudaStreamCaptureMode

# 1 legacy stream
show("legacy_begin", rt.cudaStreamBeginCapture(0, M.cudaStreamCaptureModeGlobal), capstat(0), rt.cudaGetLastError())
# per-thread stream handle 2
show("ptds_begin", rt.cudaStreamBeginCapture(2, M.cudaStreamCaptureModeGlobal), capstat(2))
r = rt.cudaStreamEndCapture(2); show("ptds_end", r)
# 2 sync inside capture
s = ns()
show("sync_begin", rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal))
add_one[4, 256, nstream(s)](a)
show("sync_sync", rt.cudaStreamSynchronize(s), capstat(s))
show("sync_lasterr", rt.cudaGetLastError(), rt.cudaGetLastError())
show("sync_end", rt.cudaStreamEndCapture(s), capstat(s))
show("sync_after", rt.cudaStreamSynchronize(s), rt.cudaGetLastError())
# query inside capture
s = ns()
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
show("query_in", rt.cudaStreamQuery(s), capstat(s))
show("query_end", rt.cudaStreamEndCapture(s))
# double begin
s = ns()
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
show("double_begin", rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal), capstat(s))
show("double_end", rt.cudaStreamEndCapture(s))
show("end_not_capturing", rt.cudaStreamEndCapture(s))
# empty capture
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
e, g = rt.cudaStreamEndCapture(s)
show("empty_end", e, rt.cudaGraphGetNodes(g)[2] if e == 0 else None)
if e == 0:
    show("empty_inst", rt.cudaGraphInstantiate(g, 0)[0])
# device sync inside capture
for mode in ("Global", "ThreadLocal", "Relaxed"):
    md = getattr(M, "cudaStreamCaptureMode" + mode)
    s = ns()
    rt.cudaStreamBeginCapture(s, md)
    add_one[4, 256, nstream(s)](a)
    show(f"devsync_{mode}", rt.cudaDeviceSynchronize(), capstat(s))
    show(f"devsync_{mode}_end", rt.cudaStreamEndCapture(s)[0])
    rt.cudaGetLastError()
    # malloc
    s = ns()
    rt.cudaStreamBeginCapture(s, md)
    add_one[4, 256, nstream(s)](a)
    r = rt.cudaMalloc(4096)
    show(f"malloc_{mode}", r[0], capstat(s))
    e, g = rt.cudaStreamEndCapture(s)
    show(f"malloc_{mode}_end", e, rt.cudaGetLastError())
    if r[0] == 0:
        rt.cudaFree(r[1])
    # sync memcpy (legacy stream)
    s = ns()
    h = np.zeros(16, np.float32)
    rt.cudaStreamBeginCapture(s, md)
    r = rt.cudaMemcpy(h.ctypes.data, a.device_ctypes_pointer.value, 64, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost)
    show(f"memcpy_sync_{mode}", r, capstat(s))
    show(f"memcpy_sync_{mode}_end", rt.cudaStreamEndCapture(s)[0], rt.cudaGetLastError())
    # event query of uncaptured event
    s = ns()
    _, ev = rt.cudaEventCreate()
    rt.cudaEventRecord(ev, s)
    rt.cudaStreamSynchronize(s)
    rt.cudaStreamBeginCapture(s, md)
    show(f"evquery_outside_{mode}", rt.cudaEventQuery(ev), rt.cudaEventSynchronize(ev), capstat(s))
    show(f"evquery_outside_{mode}_end", rt.cudaStreamEndCapture(s)[0], rt.cudaGetLastError())
    # malloc host
    s = ns()
    rt.cudaStreamBeginCapture(s, md)
    r = rt.cudaMallocHost(64)
    show(f"mallochost_{mode}", r[0], capstat(s))
    show(f"mallochost_{mode}_end", rt.cudaStreamEndCapture(s)[0], rt.cudaGetLastError())
    # launch on legacy stream while capturing non-blocking stream
    s = ns()
    rt.cudaStreamBeginCapture(s, md)
    add_one[4, 256, cuda.legacy_default_stream()](a)
    show(f"legacy_launch_nonblocking_{mode}", rt.cudaGetLastError(), capstat(s))
    show(f"legacy_launch_nonblocking_{mode}_end", rt.cudaStreamEndCapture(s)[0])
    rt.cudaDeviceSynchronize()
    # blocking stream capture + legacy launch
    _, sb = rt.cudaStreamCreate()
    rt.cudaStreamBeginCapture(sb, md)
    add_one[4, 256, nstream(sb)](a)
    try:
        add_one[4, 256, cuda.legacy_default_stream()](a)
        show(f"legacy_launch_blocking_{mode}", "ok", rt.cudaGetLastError(), capstat(sb))
    except Exception as ex:
        show(f"legacy_launch_blocking_{mode}", "raised", repr(ex)[:200], capstat(sb))
    show(f"legacy_launch_blocking_{mode}_end", rt.cudaStreamEndCapture(sb)[0], rt.cudaGetLastError())
    rt.cudaDeviceSynchronize(); rt.cudaGetLastError()
# captured event queries
s = ns()
_, ev = rt.cudaEventCreate()
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
add_one[4, 256, nstream(s)](a)
show("capev_record", rt.cudaEventRecord(ev, s))
show("capev_query", rt.cudaEventQuery(ev), rt.cudaEventSynchronize(ev), capstat(s))
_, ev0 = rt.cudaEventCreate()
show("capev_elapsed", rt.cudaEventElapsedTime(ev0, ev))
show("capev_end", rt.cudaStreamEndCapture(s)[0], rt.cudaGetLastError())
show("capev_query_after", rt.cudaEventQuery(ev))
# captured event in relaxed
s = ns()
_, ev = rt.cudaEventCreate()
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeRelaxed)
rt.cudaEventRecord(ev, s)
show("capev_query_relaxed", rt.cudaEventQuery(ev), capstat(s))
show("capev_relaxed_end", rt.cudaStreamEndCapture(s)[0])
# fork/join
s, s2 = ns(), ns()
_, e1 = rt.cudaEventCreateWithFlags(rt.cudaEventDisableTiming)
_, e2 = rt.cudaEventCreateWithFlags(rt.cudaEventDisableTiming)
b = cuda.to_device(np.zeros(1024, np.float32))
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
add_one[4, 256, nstream(s)](a)
rt.cudaEventRecord(e1, s)
show("fork_wait", rt.cudaStreamWaitEvent(s2, e1, 0), capstat(s2))
show("fork_info_side", rt.cudaStreamGetCaptureInfo(s2))
add_one[4, 256, nstream(s2)](b)
add_one[4, 256, nstream(s)](a)
rt.cudaEventRecord(e2, s2)
rt.cudaStreamWaitEvent(s, e2, 0)
add_one[4, 256, nstream(s)](a)
show("fork_info_origin", rt.cudaStreamGetCaptureInfo(s))
e, g = rt.cudaStreamEndCapture(s)
show("fork_end", e, capstat(s2))
show("fork_nodes", rt.cudaGraphGetNodes(g)[2], rt.cudaGraphGetEdges(g)[-1])
show("fork_edges_full", rt.cudaGraphGetEdges(g, 4))
for n in nodes_of(g):
    show("fork_nodetype", rt.cudaGraphNodeGetType(n))
# unjoined
s, s2 = ns(), ns()
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
add_one[4, 256, nstream(s)](a)
rt.cudaEventRecord(e1, s)
rt.cudaStreamWaitEvent(s2, e1, 0)
add_one[4, 256, nstream(s2)](b)
show("unjoined_end", rt.cudaStreamEndCapture(s), capstat(s), capstat(s2))
show("unjoined_lasterr", rt.cudaGetLastError())
show("unjoined_side_after", rt.cudaStreamSynchronize(s2), capstat(s2), rt.cudaStreamEndCapture(s2))
# fork with no work on side stream, unjoined
s, s2 = ns(), ns()
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
add_one[4, 256, nstream(s)](a)
rt.cudaEventRecord(e1, s)
rt.cudaStreamWaitEvent(s2, e1, 0)
show("unjoined_empty_end", rt.cudaStreamEndCapture(s)[0], capstat(s2))
rt.cudaGetLastError()
# end on wrong stream
s, s2 = ns(), ns()
rt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)
add_one[4, 256, nstream(s)](a)
rt.cudaEventRecord(e1, s)
rt.cudaStreamWaitEvent(s2, e1, 0)
add_one[4, 256, nstream(s2)](b)
rt.cudaEventRecord(e2, s2)
rt.cudaStreamWaitEvent(s, e2, 0)
show("wrongend_end", rt.cudaStreamEndCapture(s2), capstat(s), capstat(s2))
show("wrongend_lasterr", rt.cudaGetLastError())
show("wrongend_origin_end", rt.cudaStreamEndCapture(s), capstat(s), capstat(s2))
rt.cudaGetLastError()

_CHUNKS = ['# wait on an event recorded outside capture\ns, s2 = ns(), ns()\nrt.cudaEventRecord(e1, s2)\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nadd_one[4, 256, nstream(s)](a)\nshow("extwait", rt.cudaStreamWaitEvent(s, e1, 0), capstat(s))\ntry:\n    add_one[4, 256, nstream(s)](a)\nexcept Exception as ex:\n    show("extwait_launch", repr(ex)[:120])\ne, g = rt.cudaStreamEndCapture(s)\nshow("extwait_end", e, rt.cudaGraphGetNodes(g)[2] if e == 0 else None, rt.cudaGetLastError())\n', '# wait on event recorded in another capture\ns, s2, s3 = ns(), ns(), ns()\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nrt.cudaStreamBeginCapture(s3, M.cudaStreamCaptureModeGlobal)\nadd_one[4, 256, nstream(s3)](b)\nrt.cudaEventRecord(e1, s3)\nshow("merge_wait", rt.cudaStreamWaitEvent(s, e1, 0), capstat(s), capstat(s3))\nshow("merge_end", rt.cudaStreamEndCapture(s)[0], rt.cudaStreamEndCapture(s3)[0], rt.cudaGetLastError())\n', '# host array in capture\ns = ns()\nh = np.zeros(1024, np.float32)\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\ntry:\n    add_one[4, 256, nstream(s)](h)\n    show("hostarr", "ok", capstat(s))\nexcept Exception as ex:\n    show("hostarr", "raised", type(ex).__name__, str(ex)[:200], capstat(s))\nshow("hostarr_end", rt.cudaStreamEndCapture(s)[0], rt.cudaGetLastError())\nshow("hostarr_after", rt.cudaStreamSynchronize(s))\n', '# pageable memcpy async in capture\ns = ns()\nh = np.zeros(1024, np.float32)\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nadd_one[4, 256, nstream(s)](a)\nshow("pageable_d2h", rt.cudaMemcpyAsync(h.ctypes.data, a.device_ctypes_pointer.value, 4096, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, s), capstat(s))\ne, g = rt.cudaStreamEndCapture(s)\nshow("pageable_d2h_end", e, rt.cudaGetLastError())\nif e == 0:\n    ok, ge = rt.cudaGraphInstantiate(g, 0)\n    show("pageable_inst", ok)\n    if ok == 0:\n        show("pageable_launch", rt.cudaGraphLaunch(ge, s), rt.cudaStreamSynchronize(s), h[:3])\n', '# pinned memcpy\n_, hp = rt.cudaMallocHost(4096)\ns = ns()\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nshow("pinned_d2h", rt.cudaMemcpyAsync(hp, a.device_ctypes_pointer.value, 4096, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, s))\nshow("memset", rt.cudaMemsetAsync(a.device_ctypes_pointer.value, 0, 16, s))\ne, g = rt.cudaStreamEndCapture(s)\nshow("pinned_end", e, [rt.cudaGraphNodeGetType(n)[1] for n in nodes_of(g)])\n', '# instantiate / update\ndef chain(bufs, k, stream):\n    rt.cudaStreamBeginCapture(stream, M.cudaStreamCaptureModeGlobal)\n    for i in range(k):\n        add_one[4, 256, nstream(stream)](bufs[i % len(bufs)])\n    e, g = rt.cudaStreamEndCapture(stream)\n    assert e == 0, e\n    return g\n\n\n@cuda.jit\ndef scale(x):\n    i = cuda.grid(1)\n    if i < x.size:\n        x[i] *= 2.0\n\n\ns = ns()\nx = cuda.to_device(np.zeros(1024, np.float32))\ny = cuda.to_device(np.zeros(1024, np.float32))\ng1 = chain([x], 3, s)\ne, ge = rt.cudaGraphInstantiate(g1, 0)\ng2 = chain([y], 3, s)\nshow("update_same", rt.cudaGraphExecUpdate(ge, g2))\nr = rt.cudaGraphExecUpdate(ge, g2)\nshow("update_result", r[1].result, r[1].errorNode, r[1].errorFromNode)\nrt.cudaGraphLaunch(ge, s); rt.cudaStreamSynchronize(s)\nshow("update_effect", x.copy_to_host()[:2], y.copy_to_host()[:2])\ng3 = chain([y], 4, s)\nr = rt.cudaGraphExecUpdate(ge, g3)\nshow("update_topology", r[0], r[1].result, r[1].errorNode, r[1].errorFromNode, rt.cudaGetLastError())\nrt.cudaGraphLaunch(ge, s); rt.cudaStreamSynchronize(s)\nshow("update_topology_after", x.copy_to_host()[:2], y.copy_to_host()[:2])\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nfor i in range(3):\n    scale[4, 256, nstream(s)](y)\ne, g4 = rt.cudaStreamEndCapture(s)\nr = rt.cudaGraphExecUpdate(ge, g4)\nshow("update_function", r[0], r[1].result)\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nadd_one[4, 256, nstream(s)](y)\nadd_one[4, 256, nstream(s)](y)\nrt.cudaMemsetAsync(y.device_ctypes_pointer.value, 0, 16, s)\ne, g5 = rt.cudaStreamEndCapture(s)\nr = rt.cudaGraphExecUpdate(ge, g5)\nshow("update_nodetype", r[0], r[1].result)\nr = rt.cudaGraphExecUpdate(ge, g2)\nshow("update_after_fail", r[0], r[1].result)\n', '# grid change in update\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nfor i in range(3):\n    add_one[8, 128, nstream(s)](y)\ne, g6 = rt.cudaStreamEndCapture(s)\nr = rt.cudaGraphExecUpdate(ge, g6)\nshow("update_griddims", r[0], r[1].result)\n', '# kernel node params\nnodes = nodes_of(g1)\ne, p = rt.cudaGraphKernelNodeGetParams(nodes[0])\nshow("kparams", e, p.gridDim.x, p.blockDim.x, p.sharedMemBytes)\nshow("exec_destroy", rt.cudaGraphExecDestroy(ge), rt.cudaGraphDestroy(g1))\nshow("launch_destroyed", rt.cudaGraphLaunch(ge, s))\nshow("after_destroyed", rt.cudaGetLastError())\n', '# edges api shape\ng = chain([x], 2, s)\nshow("edges", rt.cudaGraphGetEdges(g), rt.cudaGraphGetEdges(g, 1), rt.cudaGraphGetEdges(g, 5))\nshow("nodes0", rt.cudaGraphGetNodes(g, 0))\nshow("nodes_n", rt.cudaGraphGetNodes(g, 2))\nshow("root", rt.cudaGraphGetRootNodes(g))\nshow("capinfo_none", rt.cudaStreamGetCaptureInfo(s))\nshow("devcount", rt.cudaGetDeviceCount())\ne, p = rt.cudaGetDeviceProperties(0)\nshow("props", p.name, p.multiProcessorCount, p.major, p.minor, p.totalGlobalMem, p.clockRate if hasattr(p, \'clockRate\') else None)\nshow("versions", rt.cudaDriverGetVersion(), rt.cudaRuntimeGetVersion())\n\n', '# numba copy_to_host inside capture, and a launch after invalidation\ns = ns()\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\ntry:\n    a.copy_to_host()\n    show("copy_to_host_in_capture", "ok", capstat(s))\nexcept Exception as ex:\n    show("copy_to_host_in_capture", "raised", type(ex).__module__, type(ex).__name__, getattr(ex, "code", None), str(ex)[:150], capstat(s))\ntry:\n    add_one[4, 256, nstream(s)](a)\n    show("launch_after_invalid", "ok", rt.cudaGetLastError(), capstat(s))\nexcept Exception as ex:\n    show("launch_after_invalid", "raised", type(ex).__name__, getattr(ex, "code", None), str(ex)[:150])\nshow("launch_after_invalid_end", rt.cudaStreamEndCapture(s), rt.cudaGetLastError())\ns = ns()\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nrt.cudaStreamSynchronize(s)\ntry:\n    add_one[4, 256, nstream(s)](a)\n    show("launch_after_sync", "ok", rt.cudaGetLastError(), capstat(s))\nexcept Exception as ex:\n    show("launch_after_sync", "raised", type(ex).__name__, getattr(ex, "code", None), str(ex)[:150])\nshow("memcpyasync_after_invalid", rt.cudaMemcpyAsync(a.device_ctypes_pointer.value, a.device_ctypes_pointer.value, 4, rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, s))\nshow("eventrecord_after_invalid", rt.cudaEventRecord(ev, s))\nshow("launch_after_sync_end", rt.cudaStreamEndCapture(s), rt.cudaGetLastError())\n', '# graph launch into capturing stream; upload\ns = ns()\ng = chain([x], 2, s)\n_, ge = rt.cudaGraphInstantiate(g, 0)\nshow("upload", rt.cudaGraphUpload(ge, s))\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nshow("graphlaunch_in_capture", rt.cudaGraphLaunch(ge, s))\ne, gg = rt.cudaStreamEndCapture(s)\nshow("graphlaunch_in_capture_end", e, [rt.cudaGraphNodeGetType(n)[1] for n in nodes_of(gg)] if e == 0 else None)\n', '# exec kernel node set params from another graph\'s node\ng7 = chain([y], 2, s)\n_, p7 = rt.cudaGraphKernelNodeGetParams(nodes_of(g7)[0])\nn0 = nodes_of(g)[0]\nshow("exec_setparams", rt.cudaGraphExecKernelNodeSetParams(ge, n0, p7))\nxx = x.copy_to_host(); yy = y.copy_to_host()\nrt.cudaGraphLaunch(ge, s); rt.cudaStreamSynchronize(s)\nshow("exec_setparams_effect", x.copy_to_host()[0] - xx[0], y.copy_to_host()[0] - yy[0])\n_, p_scale_g = None, None\nrt.cudaStreamBeginCapture(s, M.cudaStreamCaptureModeGlobal)\nscale[4, 256, nstream(s)](y)\ne, g8 = rt.cudaStreamEndCapture(s)\n_, p8 = rt.cudaGraphKernelNodeGetParams(nodes_of(g8)[0])\nshow("exec_setparams_otherfunc", rt.cudaGraphExecKernelNodeSetParams(ge, n0, p8), rt.cudaGetLastError())\nshow("exec_setparams_wrongnode", rt.cudaGraphExecKernelNodeSetParams(ge, nodes_of(g7)[0], p7), rt.cudaGetLastError())\nshow("numba_error_class", __import__("numba.cuda.cudadrv.driver", fromlist=["x"]).CudaAPIError.__mro__)\n', '# legacy stream capture then its stream usable\nshow("stream_query_idle", rt.cudaStreamQuery(s))\n_, ev = rt.cudaEventCreate()\nshow("event_query_unrecorded", rt.cudaEventQuery(ev))\n_, ev2 = rt.cudaEventCreate()\nshow("elapsed_unrecorded", rt.cudaEventElapsedTime(ev, ev2))\n_, evn = rt.cudaEventCreateWithFlags(rt.cudaEventDisableTiming)\nrt.cudaEventRecord(evn, s); rt.cudaEventRecord(ev, s); rt.cudaStreamSynchronize(s)\nshow("elapsed_notiming", rt.cudaEventElapsedTime(ev, evn))\nshow("free_bad", rt.cudaFree(12345), rt.cudaGetLastError())\nshow("destroy_stream_twice", rt.cudaStreamDestroy(s), rt.cudaStreamDestroy(s))\nshow("destroyed_stream_use", rt.cudaStreamSynchronize(s))\n']
import traceback
for _c in _CHUNKS:
    try:
        exec(_c, globals())
    except Exception as _ex:
        print("SECTION FAILED:", _c.splitlines()[0], type(_ex).__name__, str(_ex)[:200], flush=True)
    rt.cudaGetLastError()
