"""Probe how to read and change a numba kernel node's parameters in a graph."""
import numpy as np
from cuda.bindings import runtime as rt, driver as drv
from numba import cuda


@cuda.jit
def add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1.0


def nodes_of(g):
    n = rt.cudaGraphGetNodes(g)[2]
    return rt.cudaGraphGetNodes(g, n)[1]


_, s = rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking)
ns = cuda.external_stream(int(s))
x = cuda.to_device(np.zeros(1024, np.float32)); y = cuda.to_device(np.zeros(1024, np.float32))
add_one[4, 256, ns](x); rt.cudaDeviceSynchronize()


def cap(buf):
    rt.cudaStreamBeginCapture(s, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
    add_one[4, 256, ns](buf)
    add_one[4, 256, ns](buf)
    return rt.cudaStreamEndCapture(s)[1]


g = cap(x)
n = nodes_of(g)
print("rt get params", rt.cudaGraphKernelNodeGetParams(n[0])[0], flush=True)
r = drv.cuGraphKernelNodeGetParams(n[0])
print("drv get params", r[0], flush=True)
if r[0] == 0:
    p = r[1]
    print("fields", [f for f in dir(p) if not f.startswith("_")], flush=True)
    print("func kern ctx", p.func, getattr(p, "kern", None), getattr(p, "ctx", None), p.gridDimX, p.blockDimX, flush=True)
_, ge = rt.cudaGraphInstantiate(g, 0)
g2 = cap(y)
n2 = nodes_of(g2)
r2 = drv.cuGraphKernelNodeGetParams(n2[0])
print("drv set exec", drv.cuGraphExecKernelNodeSetParams(ge, n[0], r2[1]), flush=True)
rt.cudaGraphLaunch(ge, s); rt.cudaStreamSynchronize(s)
print("effect x y", x.copy_to_host()[0], y.copy_to_host()[0], "(expect 2 1: first node now writes y)", flush=True)
g3 = cap(y)
print("rt update fail info", rt.cudaGraphExecUpdate(ge, g3))
rt.cudaStreamBeginCapture(s, rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal)
for _ in range(3):
    add_one[4, 256, ns](y)
g4 = rt.cudaStreamEndCapture(s)[1]
print("rt update topology", rt.cudaGraphExecUpdate(ge, g4))
print("drv update topology", drv.cuGraphExecUpdate(ge, g4))
print("lasterr", rt.cudaGetLastError())
# cuda.core view
try:
    import cuda.core as cc
    print("cuda.core names", [k for k in dir(cc) if "raph" in k or "aunch" in k])
except Exception as ex:
    print("cuda.core", ex)
print("exec destroy", rt.cudaGraphExecDestroy(ge), "launch destroyed", rt.cudaGraphLaunch(ge, s))
print("graph destroy", rt.cudaGraphDestroy(g), rt.cudaGraphDestroy(g))
