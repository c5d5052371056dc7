"""cuda-bindings' own node-parameter structs, read into the simulator's node payloads and
written back from them.

Every struct is cuda-bindings' own (they build without a GPU). A kernel's ``kernelParams`` is a
``void**`` the simulator cannot read back into Python values, so a kernel node's parameters
must be a *parameter block the simulator built*: `block` registers the values of one (labkit's
``LaunchParams`` build theirs through it, as ``cudaGraphKernelNodeGetParams`` does) and hands
out its address; a ``kernelParams`` address it did not build raises ``NotImplementedError``.
"""
from __future__ import annotations

import ctypes
import weakref

from cuda.bindings import runtime as _cr

from . import _heap
from . import _state as S

NT = S.NT
FT = _cr.cudaKernelFunctionType
_blocks: dict[int, tuple] = {}     # address of a parameter block -> (its storage, the values)


class _KernelNodeParams(_cr.cudaKernelNodeParams):
    """cuda-bindings' cudaKernelNodeParams; the subclass only lets the block it points at be
    let go when it is collected."""


def block(values) -> int:
    """Register a parameter block holding ``values``; returns its address (a ``void**``)."""
    store = (ctypes.c_void_p * max(len(values), 1))()
    addr = ctypes.addressof(store)
    _blocks[addr] = (store, tuple(values))
    return addr


def kernel_params(func, grid, block_dim, values):
    """cuda-bindings' ``cudaKernelNodeParams`` for registered function ``func``, its
    ``kernelParams`` a parameter block of ``values``, let go with the struct."""
    p = _KernelNodeParams()
    p.func, p.gridDim, p.blockDim = int(func), dim3(*grid), dim3(*block_dim)
    addr = block(values)
    p.kernelParams = addr
    weakref.finalize(p, _blocks.pop, addr, None)
    return p


def values_of(addr: int):
    """The values of the parameter block at ``addr``, or None where the simulator built none."""
    hit = _blocks.get(int(addr))
    return None if hit is None else hit[1]


def dim3(x, y=1, z=1):
    d = _cr.dim3()
    d.x, d.y, d.z = int(x), int(y), int(z)
    return d


def xyz(d) -> tuple:
    return (int(d.x), int(d.y), int(d.z))


def kernel_payload(p):
    """A kernel node's payload from a ``cudaKernelNodeParams`` (or its V2), or None where its
    function is none the simulator knows (cudaErrorInvalidDeviceFunction)."""
    if not hasattr(p, "kernelParams") or not hasattr(p, "gridDim"):
        raise TypeError(f"expected cuda.bindings.runtime.cudaKernelNodeParams, got "
                        f"{type(p).__name__}")
    if int(getattr(p, "extra", 0) or 0):
        raise NotImplementedError("cudaKernelNodeParams.extra is not simulated (backend 'sim'): "
                                  "pass the parameters in kernelParams")
    ftype = FT(int(getattr(p, "functionType", 0)))
    func = {FT.cudaKernelFunctionTypeKernel: getattr(p, "kern", 0),
            FT.cudaKernelFunctionTypeFunction: getattr(p, "cuFunc", 0)}.get(ftype, p.func)
    fn = S.functions.get(S.h(func))
    if fn is None:
        return None
    addr = S.h(p.kernelParams)
    values = () if addr == 0 else values_of(addr)      # NULL: a kernel with no parameters
    if values is None:
        raise NotImplementedError(
            "the simulator cannot read a kernelParams it did not build (backend 'sim'): a void** "
            "holds no types. Build the block with labkit (kernel.params(grid, block, *args); its "
            "native.node_params) or copy kernelParams from cudaGraphKernelNodeGetParams")
    return {"func": S.h(func), "grid": xyz(p.gridDim), "block": xyz(p.blockDim),
            "params": values, "name": fn.name}


# ---------------------------------------------------------------- copies and memsets

def memcpy3d_payload(p):
    """A memcpy node's payload from ``cudaMemcpy3DParms`` (linear memory only)."""
    if S.h(p.srcArray) or S.h(p.dstArray):
        raise NotImplementedError("memcpy nodes with CUDA arrays are not simulated (backend "
                                  "'sim'): copy between pointers (srcPtr, dstPtr)")
    w, hgt, dep = int(p.extent.width), int(p.extent.height), int(p.extent.depth)
    src, dst = p.srcPtr, p.dstPtr

    def addr(pp, pos, y, z):
        pitch = int(pp.pitch) or w
        rows = int(pp.ysize) or hgt
        return _heap.ptr(pp.ptr) + ((int(pos.z) + z) * rows + int(pos.y) + y) * pitch + int(pos.x)
    rows = [(addr(dst, p.dstPos, y, z), addr(src, p.srcPos, y, z))
            for z in range(max(dep, 1)) for y in range(max(hgt, 1))]
    payload = {"dst": rows[0][0], "src": rows[0][1], "count": w * len(rows),
               "kind": _cr.cudaMemcpyKind(int(p.kind)), "name": "memcpy", "params": p}
    contiguous = all(d - rows[0][0] == s - rows[0][1] == i * w
                     for i, (d, s) in enumerate(rows))
    if not contiguous:
        payload["rows"], payload["width"] = rows, w
    return payload


def memcpy3d_params(payload):
    return payload["params"]


def memset_payload(p):
    """A memset node's payload from ``cudaMemsetParams``: ``height`` rows of ``width`` elements
    of ``elementSize`` bytes (1, 2 or 4), rows ``pitch`` bytes apart; None if invalid."""
    size, width, height = int(p.elementSize), int(p.width), max(int(p.height), 1)
    if size not in (1, 2, 4):
        return None
    pitch = int(p.pitch) or width * size
    return {"dst": _heap.ptr(p.dst), "value": int(p.value), "elementSize": size,
            "width": width, "height": height, "pitch": pitch, "count": width * size * height,
            "name": "memset"}


def memset_params(payload):
    p = _cr.cudaMemsetParams()
    p.dst, p.value = payload["dst"], payload["value"]
    p.elementSize = payload.get("elementSize", 1)
    p.width = payload.get("width", payload["count"])
    p.height, p.pitch = payload.get("height", 1), payload.get("pitch", 0)
    return p


# ---------------------------------------------------------------- conditional bodies

_outs: list = []      # phGraph_out arrays handed out (CUDA owns them as long as the graph)


def set_graph_out(cond_params, body_handles) -> None:
    """Fill ``phGraph_out`` of cuda-bindings' ``cudaConditionalNodeParams``, which Python cannot
    assign: CUDA writes a pointer to its own array of body graphs there, and so does this."""
    arr = (ctypes.c_uint64 * max(len(body_handles), 1))(*body_handles)
    _outs.append(arr)
    ctypes.c_uint64.from_address(cond_params.getPtr() + _PH_GRAPH_OUT).value = \
        ctypes.addressof(arr)


def _offset_of_graph_out() -> int:
    """Where ``phGraph_out`` lies in the C struct: after handle (8), type (4) and size (4), as
    the CUDA header declares it; checked against cuda-bindings' own reader once."""
    probe = _cr.cudaConditionalNodeParams()
    probe.size = 1
    arr = (ctypes.c_uint64 * 1)(0x5EED)
    ctypes.c_uint64.from_address(probe.getPtr() + 16).value = ctypes.addressof(arr)
    assert int(probe.phGraph_out[0]) == 0x5EED, "cudaConditionalNodeParams layout changed"
    ctypes.c_uint64.from_address(probe.getPtr() + 16).value = 0
    return 16


_PH_GRAPH_OUT = _offset_of_graph_out()
