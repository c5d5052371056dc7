"""GPU probe: CUDA conditional nodes (IF, IF/ELSE, WHILE, SWITCH) from Python, on the cuda backend.

Run on a GPU host, from the checkout::

    PYTHONPATH=$PWD python tests/conformance/conditional_probe.py --out DIR

It answers, case by case (each in its own try/except, so one failure does not stop the rest):

1. building conditional nodes with cuda.core's GraphBuilder and with cuda.bindings' runtime API
   (cudaGraphConditionalHandleCreate + cudaGraphAddNode + cudaStreamBeginCaptureToGraph);
2. setting the condition from a numba kernel (``cuda.declare_device`` + a linked CUDA C file that
   calls ``cudaGraphSetConditional``): WHILE to N, IF that skips, IF/ELSE, SWITCH with 3 cases;
3. CUDA's rules, with the error each gives: node types in a body, nesting depth, default value and
   reset per launch, a WHILE body that sets no condition (bounded), conditional nodes added during
   stream capture, cudaGraphExecUpdate, instantiate flags;
4. costs: per WHILE iteration against plain kernel nodes, a false IF node, the host time of one
   cudaGraphLaunch;
5. a decode-style WHILE loop of 5 numba kernels, checked against numpy.

Every result goes to DIR/conditional_probe.json; a table goes to stdout. No loop is unbounded:
every WHILE has a device-side stop, every wait polls with a deadline, and a watchdog ends the run
(writing what it has) after ``--budget`` seconds. Without a GPU it exits with status 2 and says so.
This is not a pytest test (its name does not start with ``test_``): it is the probe whose answers
become the conformance tests.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import threading
import time
import traceback

import numpy as np
from numba import cuda  # a module global: kernels name it as numba expects (and its simulator)

RESULTS: dict = {"meta": {}, "cases": {}}
OUT_DIR = "."
ONLY: list = []  # --only: case-name prefixes to run (the set-condition check always runs)
WAIT_S = 10.0  # the longest any one GPU wait may take before the probe gives up on the device


# ----------------------------------------------------------------------------- plumbing


class CudaCallError(RuntimeError):
    """A CUDA call returned an error; carries the call's name and the error's name."""

    def __init__(self, call, err):
        self.call, self.err = call, err
        super().__init__(f"{call} -> {_ename(err)}")


def _ename(err):
    return getattr(err, "name", str(err))


def ck(call, ret):
    """Unpack a cuda.bindings ``(err, *values)`` tuple; raise CudaCallError unless it succeeded."""
    err = ret[0] if isinstance(ret, tuple) else ret
    if int(err) != 0:
        raise CudaCallError(call, err)
    vals = ret[1:] if isinstance(ret, tuple) else ()
    return vals[0] if len(vals) == 1 else vals


def code(ret):
    """The error name of a cuda.bindings return value, for logging without raising."""
    err = ret[0] if isinstance(ret, tuple) else ret
    return _ename(err)


def write_json():
    path = os.path.join(OUT_DIR, "conditional_probe.json")
    with open(path + ".tmp", "w") as f:
        json.dump(RESULTS, f, indent=1, default=str)
    os.replace(path + ".tmp", path)


def hard_stop(why):
    """Record why the probe stops, write what it has and leave the process (a stuck GPU cannot be
    interrupted from Python)."""
    RESULTS["meta"]["aborted"] = why
    try:
        write_json()
    finally:
        print(f"\nABORTED: {why}", flush=True)
        os._exit(3)


def wait(stream):
    """Wait for ``stream`` (a runtime stream handle or an int) by polling, with a deadline."""
    from cuda.bindings import runtime as rt

    t_end = time.monotonic() + WAIT_S
    while True:
        err = rt.cudaStreamQuery(stream)[0]
        if err == rt.cudaError_t.cudaSuccess:
            return
        if err != rt.cudaError_t.cudaErrorNotReady:
            raise CudaCallError("cudaStreamQuery", err)
        if time.monotonic() > t_end:
            hard_stop(f"a GPU wait passed {WAIT_S} s (a loop that did not stop?) in case "
                      f"{RESULTS['meta'].get('current')}")
        time.sleep(5e-5)


def case(name, fn):
    """Run one probe case; store its dict (or its exception) under ``name``."""
    if ONLY and not name.startswith("2a_") and not any(name.startswith(p) for p in ONLY):
        return None
    RESULTS["meta"]["current"] = name
    t0 = time.perf_counter()
    try:
        res = fn()
        res = res if isinstance(res, dict) else {"value": res}
        res.setdefault("ok", True)
    except CudaCallError as e:
        res = {"ok": False, "error": str(e), "call": e.call, "err": _ename(e.err),
               "trace": traceback.format_exc(limit=4)[-1500:]}
    except Exception as e:  # noqa: BLE001 — a probe logs every failure and goes on
        res = {"ok": False, "error": f"{type(e).__name__}: {e}"[:1500],
               "trace": traceback.format_exc(limit=6)[-2500:]}
    res["seconds"] = round(time.perf_counter() - t0, 3)
    RESULTS["cases"][name] = res
    write_json()
    brief = {k: v for k, v in res.items() if k not in ("trace", "seconds", "ok")}
    text = json.dumps(brief, default=str)
    print(f"{name:<44} {'ok ' if res['ok'] else 'FAIL'} {res['seconds']:6.2f}s  "
          f"{text[:200]}", flush=True)
    return res


# ----------------------------------------------------------------------------- the device side

# Two ways to reach the device-side API; the probe keeps the first that compiles and links.
# (a) the CUDA header; (b) the declaration alone (cudaGraphSetConditional is a compiler builtin).
SET_COND_CU = {
    "header": r"""
#include <cuda_device_runtime_api.h>
extern "C" __device__ int probe_set_cond_header(int *ret, unsigned long long handle,
                                                unsigned int value)
{
    cudaGraphSetConditional((cudaGraphConditionalHandle)handle, value);
    *ret = 0;
    return 0;
}
""",
    "declared": r"""
typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle handle,
                                                   unsigned int value);
extern "C" __device__ int probe_set_cond_declared(int *ret, unsigned long long handle,
                                                  unsigned int value)
{
    cudaGraphSetConditional(handle, value);
    *ret = 0;
    return 0;
}
""",
}


class Dev:
    """Kernels and helpers, built once the GPU is known to be there."""

    def __init__(self, variant):
        self.cuda = cuda
        self.variant = variant
        path = os.path.join(OUT_DIR, f"set_cond_{variant}.cu")
        with open(path, "w") as f:
            f.write(SET_COND_CU[variant])
        # linked once, by the kernels that call it (@cuda.jit(link=...)), as the previous probe did
        set_cond = cuda.declare_device(f"probe_set_cond_{variant}", "int32(uint64, uint32)")
        self.set_cond_path = path

        @cuda.jit
        def inc(a):
            a[0] += 1

        @cuda.jit
        def inc_at(a, i):
            a[i] += 1

        @cuda.jit(link=[path])
        def count_to(a, n, h):
            # one WHILE iteration: count, and stop the loop once the count reaches n
            a[0] += 1
            if a[0] >= n:
                set_cond(h, 0)

        @cuda.jit(link=[path])
        def set_value(h, v):
            set_cond(h, v)

        @cuda.jit
        def tiny(a):
            # same work as count_to without the conditional: the plain-node baseline
            a[0] += 1

        self.inc, self.inc_at, self.count_to = inc, inc_at, count_to
        self.set_value, self.tiny = set_value, tiny

        # the mini decoder: 5 kernels per token; integers so numpy reproduces it exactly
        H, V = 32, 64
        self.H, self.V = H, V

        @cuda.jit
        def d_embed(tokens, pos, state):
            i = cuda.threadIdx.x
            p = pos[0]
            if i < state.size:
                state[i] = (tokens[p] * 31 + i * 7 + p * 13) % 97

        @cuda.jit
        def d_mix(state, w, hidden):
            i = cuda.threadIdx.x
            if i < hidden.size:
                acc = 0
                for j in range(state.size):
                    acc += state[j] * w[j, i]
                hidden[i] = acc % 1009

        @cuda.jit
        def d_pick(hidden, nvocab, tok):
            best = -1
            arg = 0
            for v in range(nvocab):
                s = (hidden[v % hidden.size] * (v + 3) + v * v) % 1013
                if s > best:
                    best = s
                    arg = v
            tok[0] = arg

        @cuda.jit
        def d_write(tokens, pos, tok):
            tokens[pos[0] + 1] = tok[0]

        @cuda.jit(link=[path])
        def d_advance(pos, tok, eos, limit, h):
            p = pos[0] + 1
            pos[0] = p
            if tok[0] == eos or p >= limit:
                set_cond(h, 0)

        self.decoder = (d_embed, d_mix, d_pick, d_write, d_advance)


def decode_reference(w, first, eos, limit, H, V):
    """numpy's tokens for the mini decoder: stop after EOS or when the position reaches limit."""
    tokens = [first]
    p = 0
    while True:
        state = (tokens[p] * 31 + np.arange(H) * 7 + p * 13) % 97
        hidden = (state @ w) % 1009
        scores = [(int(hidden[v % H]) * (v + 3) + v * v) % 1013 for v in range(V)]
        tok = int(np.argmax(scores))  # first maximum, as the kernel's strict '>'
        tokens.append(tok)
        p += 1
        if tok == eos or p >= limit:
            return tokens


# ----------------------------------------------------------------------------- runtime-API helpers


class RT:
    """Thin helpers over cuda.bindings.runtime for building conditional graphs explicitly."""

    def __init__(self, dev):
        from cuda.bindings import runtime as rt

        self.rt, self.dev = rt, dev
        self.stream = ck("cudaStreamCreateWithFlags",
                         rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))
        self.nstream = dev.cuda.external_stream(int(self.stream))
        self.T = rt.cudaGraphConditionalNodeType
        self.ASSIGN = int(rt.cudaGraphConditionalHandleFlags.cudaGraphCondAssignDefault)

    def graph(self):
        return ck("cudaGraphCreate", self.rt.cudaGraphCreate(0))

    def handle(self, graph, default=0, assign=True):
        return ck("cudaGraphConditionalHandleCreate", self.rt.cudaGraphConditionalHandleCreate(
            graph, default, self.ASSIGN if assign else 0))

    def cond_node(self, graph, handle, ctype, size=1, deps=()):
        """Add a conditional node; return (node, [body graphs])."""
        rt = self.rt
        p = rt.cudaGraphNodeParams()
        p.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        p.conditional.handle = handle
        p.conditional.type = ctype
        p.conditional.size = size
        deps = list(deps)
        node = ck("cudaGraphAddNode", rt.cudaGraphAddNode(graph, deps or None, None,
                                                          len(deps), p))
        bodies = list(p.conditional.phGraph_out)[:size]
        return node, bodies

    def capture_into(self, graph, fn):
        """Capture what ``fn(numba_stream, raw_stream)`` launches into the existing ``graph``."""
        rt = self.rt
        ck("cudaStreamBeginCaptureToGraph", rt.cudaStreamBeginCaptureToGraph(
            self.stream, graph, None, None, 0,
            rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed))
        try:
            fn(self.nstream, self.stream)
        finally:
            ret = rt.cudaStreamEndCapture(self.stream)
        ck("cudaStreamEndCapture", ret)

    def instantiate(self, graph, flags=0):
        return ck("cudaGraphInstantiate", self.rt.cudaGraphInstantiate(graph, flags))

    def launch(self, gexec, sync=True):
        ck("cudaGraphLaunch", self.rt.cudaGraphLaunch(gexec, self.stream))
        if sync:
            wait(self.stream)

    def nodes(self, graph):
        n = ck("cudaGraphGetNodes", self.rt.cudaGraphGetNodes(graph))[1]
        return int(n)

    def event_ms(self, fn, warm=3, reps=15):
        """Median GPU time (ms) of what ``fn()`` enqueues on the stream, between CUDA events."""
        rt = self.rt
        e0 = ck("cudaEventCreate", rt.cudaEventCreate())
        e1 = ck("cudaEventCreate", rt.cudaEventCreate())
        for _ in range(warm):
            fn()
        wait(self.stream)
        times = []
        for _ in range(reps):
            ck("cudaEventRecord", rt.cudaEventRecord(e0, self.stream))
            fn()
            ck("cudaEventRecord", rt.cudaEventRecord(e1, self.stream))
            wait(self.stream)
            times.append(ck("cudaEventElapsedTime", rt.cudaEventElapsedTime(e0, e1)))
        rt.cudaEventDestroy(e0)
        rt.cudaEventDestroy(e1)
        return statistics.median(times), times


# ----------------------------------------------------------------------------- the cases


def run_cases(args):
    from cuda.bindings import runtime as rt

    cuda.select_device(0)
    dev_holder = {}

    # --- 2(a) first, because every other case needs a numba kernel that sets a condition
    def pick_variant():
        out = {}
        for variant in SET_COND_CU:
            try:
                d = Dev(variant)
                r = RT(d)
                g = r.graph()
                h = r.handle(g, default=1)
                _, (body,) = r.cond_node(g, h, r.T.cudaGraphCondTypeWhile)
                a = cuda.to_device(np.zeros(1, np.int64))
                cuda.synchronize()
                r.capture_into(body, lambda ns, s: d.count_to[1, 1, ns](a, 30, np.uint64(int(h))))
                r.launch(r.instantiate(g))
                got = int(a.copy_to_host()[0])
                out[variant] = {"count": got}
                if got == 30 and "variant" not in dev_holder:
                    dev_holder.update(variant=variant, dev=d, rt=r)
            except Exception as e:  # noqa: BLE001
                out[variant] = {"error": f"{type(e).__name__}: {e}"[:800]}
        out["chosen"] = dev_holder.get("variant")
        out["ok"] = "variant" in dev_holder
        return out

    case("2a_numba_set_conditional_link", pick_variant)
    if "dev" not in dev_holder:
        hard_stop("no way to set a condition from a numba kernel worked; see case "
                  "2a_numba_set_conditional_link")
    d, r = dev_holder["dev"], dev_holder["rt"]
    T = r.T
    H = lambda h: np.uint64(int(h))  # noqa: E731 — a handle as a kernel argument

    def zeros(n=1):
        # a pageable upload may return before its DMA lands; the probe's streams are non-blocking,
        # so wait for the whole context before any of them reads the array
        arr = cuda.to_device(np.zeros(n, np.int64))
        cuda.synchronize()
        return arr

    # --- 1(a): cuda.core's GraphBuilder
    from cuda.core import Device

    cdev = Device(0)
    cdev.set_current()
    cstream = cdev.create_stream()

    def core_launch(graph):
        graph.launch(cstream)
        wait(int(cstream.handle))

    def core_while():
        a = zeros()
        gb = cdev.create_graph_builder().begin_building()
        cond = gb.create_condition(default_value=1)
        body = gb.while_loop(cond)
        steps = ["while_loop"]
        if not body.is_building:
            body.begin_building()
            steps.append("body.begin_building() needed")
        d.count_to[1, 1, body](a, 50, H(cond.handle))
        body.end_building()
        gb.end_building()
        g = gb.complete()
        core_launch(g)
        first = int(a.copy_to_host()[0])
        core_launch(g)  # default_value given: cuda.core should assign it each launch
        second = int(a.copy_to_host()[0])
        return {"count_after_1_launch": first, "after_2_launches": second, "steps": steps,
                "ok": first == 50 and second == 51}

    case("1a_core_while_to_50", core_while)

    def core_if(default, set_to):
        a = zeros()
        gb = cdev.create_graph_builder().begin_building()
        cond = gb.create_condition(default_value=default)
        if set_to is not None:
            d.set_value[1, 1, gb](H(cond.handle), np.uint32(set_to))
        then = gb.if_then(cond)
        if not then.is_building:
            then.begin_building()
        d.inc[1, 1, then](a)
        then.end_building()
        gb.end_building()
        core_launch(gb.complete())
        return int(a.copy_to_host()[0])

    case("1a_core_if_skips", lambda: {"ran_default0": core_if(0, None),
                                      "ran_default1": core_if(1, None),
                                      "ran_set0_by_kernel": core_if(1, 0),
                                      "ran_set1_by_kernel": core_if(0, 1)})

    def core_if_else():
        out = {}
        for v in (0, 1):
            a = zeros(2)
            gb = cdev.create_graph_builder().begin_building()
            cond = gb.create_condition(default_value=0)
            d.set_value[1, 1, gb](H(cond.handle), np.uint32(v))
            then, other = gb.if_else(cond)
            for i, b in enumerate((then, other)):
                if not b.is_building:
                    b.begin_building()
                d.inc_at[1, 1, b](a, i)
                b.end_building()
            gb.end_building()
            core_launch(gb.complete())
            out[f"cond{v}_then_else"] = a.copy_to_host().tolist()
        out["ok"] = out["cond0_then_else"] == [0, 1] and out["cond1_then_else"] == [1, 0]
        return out

    case("1a_core_if_else", core_if_else)

    def core_switch():
        out = {}
        for v in (0, 1, 2, 3):
            a = zeros(3)
            gb = cdev.create_graph_builder().begin_building()
            cond = gb.create_condition(default_value=0)
            d.set_value[1, 1, gb](H(cond.handle), np.uint32(v))
            branches = gb.switch(cond, 3)
            for i, b in enumerate(branches):
                if not b.is_building:
                    b.begin_building()
                d.inc_at[1, 1, b](a, i)
                b.end_building()
            gb.end_building()
            core_launch(gb.complete())
            out[f"value{v}"] = a.copy_to_host().tolist()
        out["ok"] = (out["value0"] == [1, 0, 0] and out["value1"] == [0, 1, 0]
                     and out["value2"] == [0, 0, 1] and out["value3"] == [0, 0, 0])
        return out

    case("1a_core_switch_3", core_switch)

    def core_body_via_definition():
        # cuda.core 1.1+: a body can also be filled through its GraphDefinition view, without
        # begin_building; here we only check the view exists and can take an empty node.
        gb = cdev.create_graph_builder().begin_building()
        cond = gb.create_condition(default_value=0)
        body = gb.while_loop(cond)
        gd = body.graph_definition
        gd.empty()
        if body.is_building:
            body.end_building()
        gb.end_building()
        core_launch(gb.complete())
        return {"definition_type": type(gd).__name__}

    case("1a_core_body_graph_definition", core_body_via_definition)

    # --- 2(b): what cuda.core itself offers for setting a condition
    def core_offers():
        import cuda.core as cc
        import cuda.core.graph as cg

        names = sorted({n for m in (cc, cg) for n in dir(m) if "ond" in n.lower()})
        gc_attrs = [n for n in dir(cg.GraphCondition) if not n.startswith("_")]
        return {"names_with_cond": names, "GraphCondition_attrs": gc_attrs,
                "note": "no host- or device-side setter beyond default_value unless listed"}

    case("2b_core_condition_api", core_offers)

    # --- 1(b) + 2: the runtime API, all four kinds
    def rt_while(n=50):
        a = zeros()
        g = r.graph()
        h = r.handle(g, default=1)
        _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeWhile)
        r.capture_into(body, lambda ns, s: d.count_to[1, 1, ns](a, n, H(h)))
        r.launch(r.instantiate(g))
        got = int(a.copy_to_host()[0])
        return {"count": got, "ok": got == n}

    case("1b_rt_while_to_50", rt_while)

    def rt_if():
        out = {}
        for default, set_to in ((0, None), (1, None), (1, 0), (0, 1)):
            a = zeros()
            g = r.graph()
            h = r.handle(g, default=default)
            deps = []
            if set_to is not None:
                r.capture_into(g, lambda ns, s: d.set_value[1, 1, ns](H(h), np.uint32(set_to)))
                deps = [n for n in ck("cudaGraphGetNodes",
                                      rt.cudaGraphGetNodes(g, r.nodes(g)))[0]]
            _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeIf, deps=deps)
            r.capture_into(body, lambda ns, s: d.inc[1, 1, ns](a))
            r.launch(r.instantiate(g))
            out[f"default{default}_set{set_to}"] = int(a.copy_to_host()[0])
        out["ok"] = out == {"default0_setNone": 0, "default1_setNone": 1,
                            "default1_set0": 0, "default0_set1": 1}
        return out

    case("1b_rt_if_skips", rt_if)

    def rt_multi(ctype, size, values, expect):
        out = {}
        for v in values:
            a = zeros(size)
            g = r.graph()
            h = r.handle(g, default=v)  # value by default: the device-set path is case 1b_rt_if
            _, bodies = r.cond_node(g, h, ctype, size=size)
            for i, b in enumerate(bodies):
                r.capture_into(b, lambda ns, s, i=i: d.inc_at[1, 1, ns](a, i))
            r.launch(r.instantiate(g))
            out[f"value{v}"] = a.copy_to_host().tolist()
        out["ok"] = all(out[f"value{v}"] == e for v, e in zip(values, expect))
        return out

    case("1b_rt_if_else", lambda: rt_multi(T.cudaGraphCondTypeIf, 2, (0, 1), ([0, 1], [1, 0])))
    case("1b_rt_switch_3", lambda: rt_multi(T.cudaGraphCondTypeSwitch, 3, (0, 1, 2, 3, 7),
                                            ([1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0],
                                             [0, 0, 0])))

    # --- 3: CUDA's rules
    def body_with(kind):
        """An IF (default 1) whose body holds one node of ``kind``; report each step's result."""
        a = zeros(4)
        g = r.graph()
        h = r.handle(g, default=1)
        _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeIf)
        keep = []  # what the graph points at stays alive until it ran
        if kind == "kernel":
            r.capture_into(body, lambda ns, s: d.inc[1, 1, ns](a))
        elif kind == "memset":
            r.capture_into(body, lambda ns, s: ck("cudaMemsetAsync", rt.cudaMemsetAsync(
                a.device_ctypes_pointer.value, 1, 8, s)))
        elif kind == "memcpy_d2d":
            b = cuda.to_device(np.full(4, 7, np.int64))
            cuda.synchronize()
            keep.append(b)
            r.capture_into(body, lambda ns, s: ck("cudaMemcpyAsync", rt.cudaMemcpyAsync(
                a.device_ctypes_pointer.value, b.device_ctypes_pointer.value, 8,
                rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, s)))
        elif kind == "event_record":
            ev = ck("cudaEventCreate", rt.cudaEventCreate())
            r.capture_into(body, lambda ns, s: ck("cudaEventRecord", rt.cudaEventRecord(ev, s)))
        elif kind == "host_fn":
            cb_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
            cb = cb_t(lambda _p: None)
            keep.append(cb)
            fn = rt.cudaHostFn_t(ctypes.cast(cb, ctypes.c_void_p).value)
            r.capture_into(body, lambda ns, s: ck("cudaLaunchHostFunc",
                                                  rt.cudaLaunchHostFunc(s, fn, 0)))
        elif kind == "child_graph":
            child = r.graph()
            r.capture_into(child, lambda ns, s: d.inc[1, 1, ns](a))
            ck("cudaGraphAddChildGraphNode", rt.cudaGraphAddChildGraphNode(body, None, 0, child))
        elif kind == "empty":
            ck("cudaGraphAddEmptyNode", rt.cudaGraphAddEmptyNode(body, None, 0))
        elif kind == "mem_alloc":
            def alloc(ns, s):
                p = ck("cudaMallocAsync", rt.cudaMallocAsync(64, s))
                ck("cudaFreeAsync", rt.cudaFreeAsync(p, s))
            r.capture_into(body, alloc)
        elif kind == "nested_if":
            h2 = r.handle(g, default=1)
            _, (inner,) = r.cond_node(body, h2, T.cudaGraphCondTypeIf)
            r.capture_into(inner, lambda ns, s: d.inc[1, 1, ns](a))
        ge = r.instantiate(g)
        r.launch(ge)
        return {"body_nodes": r.nodes(body), "a": a.copy_to_host().tolist()}

    for kind in ("kernel", "empty", "memset", "memcpy_d2d", "child_graph", "nested_if",
                 "event_record", "host_fn", "mem_alloc"):
        case(f"3_body_may_hold_{kind}", lambda kind=kind: body_with(kind))

    def core_body_callback():
        # the same question for a host node, through cuda.core (the Python-callable path)
        gb = cdev.create_graph_builder().begin_building()
        cond = gb.create_condition(default_value=1)
        then = gb.if_then(cond)
        if not then.is_building:
            then.begin_building()
        hits = []
        then.callback(lambda: hits.append(1))
        then.end_building()
        gb.end_building()
        core_launch(gb.complete())
        return {"callback_ran": len(hits)}

    case("3_body_may_hold_host_callback_core", core_body_callback)

    def nesting():
        out = {"depths": {}}
        for depth in (1, 2, 3, 4, 6, 8, 12, 16):
            try:
                a = zeros()
                g = r.graph()
                parent = g
                for level in range(depth):
                    kind = T.cudaGraphCondTypeWhile if level % 2 else T.cudaGraphCondTypeIf
                    h = r.handle(g, default=1)
                    _, (parent,) = r.cond_node(parent, h, kind)
                    if kind == T.cudaGraphCondTypeWhile:
                        # a WHILE level stops after one pass: its body sets its handle to 0
                        r.capture_into(parent, lambda ns, s, h=h: d.set_value[1, 1, ns](H(h), np.uint32(0)))
                # the innermost body: one kernel (after the WHILE's stop kernel, if any)
                inner_nodes = ck("cudaGraphGetNodes", rt.cudaGraphGetNodes(
                    parent, r.nodes(parent)))[0]
                ck("cudaStreamBeginCaptureToGraph", rt.cudaStreamBeginCaptureToGraph(
                    r.stream, parent, list(inner_nodes) or None, None, len(inner_nodes),
                    rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed))
                d.inc[1, 1, r.nstream](a)
                ck("cudaStreamEndCapture", rt.cudaStreamEndCapture(r.stream))
                r.launch(r.instantiate(g))
                out["depths"][depth] = int(a.copy_to_host()[0])
            except Exception as e:  # noqa: BLE001
                out["depths"][depth] = f"{type(e).__name__}: {e}"[:300]
                break
        return out

    case("3_nesting_depth", nesting)

    def default_and_reset():
        out = {}
        for assign in (True, False):
            for default in (0, 1):
                # graph: IF(h){inc} -> set_value(h, 1): does launch 2 see the value set by launch 1?
                a = zeros()
                g = r.graph()
                h = r.handle(g, default=default, assign=assign)
                node, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeIf)
                r.capture_into(body, lambda ns, s: d.inc[1, 1, ns](a))
                ck("cudaStreamBeginCaptureToGraph", rt.cudaStreamBeginCaptureToGraph(
                    r.stream, g, [node], None, 1,
                    rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed))
                d.set_value[1, 1, r.nstream](H(h), np.uint32(1))
                ck("cudaStreamEndCapture", rt.cudaStreamEndCapture(r.stream))
                ge = r.instantiate(g)
                runs = []
                for _ in range(3):
                    r.launch(ge)
                    runs.append(int(a.copy_to_host()[0]))
                out[f"assign{int(assign)}_default{default}_counts_after_launches"] = runs
        out["reading"] = ("with AssignDefault the IF sees the default every launch; without it, "
                          "launch 1 shows the initial value and launches 2+ whether a device-set "
                          "value persists")
        return out

    case("3_default_value_and_reset_per_launch", default_and_reset)

    def while_without_set():
        out = {}
        # default 0: a WHILE whose body never sets the condition runs zero times (checked first)
        a = zeros()
        g = r.graph()
        h = r.handle(g, default=0)
        _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeWhile)
        r.capture_into(body, lambda ns, s: d.inc[1, 1, ns](a))
        r.launch(r.instantiate(g))
        out["default0_no_set_iterations"] = int(a.copy_to_host()[0])
        # default 1 with a body that never sets it would never stop: NOT run. The bounded version:
        # a stop that fires only at iteration 7 proves the value persists across iterations.
        a = zeros()
        g = r.graph()
        h = r.handle(g, default=1)
        _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeWhile)
        r.capture_into(body, lambda ns, s: d.count_to[1, 1, ns](a, 7, H(h)))
        r.launch(r.instantiate(g))
        out["stop_at_7_iterations"] = int(a.copy_to_host()[0])
        out["not_run"] = "default 1 and no set: would loop forever (documented: runs while != 0)"
        out["ok"] = out["default0_no_set_iterations"] == 0 and out["stop_at_7_iterations"] == 7
        return out

    case("3_while_body_sets_no_condition_bounded", while_without_set)

    def cond_during_capture():
        # PyTorch's way: while a stream is being captured, add a conditional node to the
        # capturing graph, fill its body by capture on a second stream, and continue.
        a = zeros(2)
        s2 = ck("cudaStreamCreateWithFlags", rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking))
        ns2 = cuda.external_stream(int(s2))
        ck("cudaStreamBeginCapture", rt.cudaStreamBeginCapture(
            r.stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed))
        steps = {}
        try:
            d.inc_at[1, 1, r.nstream](a, 0)
            info = rt.cudaStreamGetCaptureInfo(r.stream)
            steps["get_capture_info"] = code(info)
            graph, deps = info[3], list(info[4])
            h = r.handle(graph, default=1)
            node, (body,) = r.cond_node(graph, h, T.cudaGraphCondTypeWhile, deps=deps)
            steps["update_deps"] = code(rt.cudaStreamUpdateCaptureDependencies(
                r.stream, [node], None, 1,
                int(rt.cudaStreamUpdateCaptureDependenciesFlags.cudaStreamSetCaptureDependencies)))
            steps["body_begin"] = code(rt.cudaStreamBeginCaptureToGraph(
                s2, body, None, None, 0, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed))
            d.count_to[1, 1, ns2](a[1:], 5, H(h))
            steps["body_end"] = code(rt.cudaStreamEndCapture(s2))
            d.inc_at[1, 1, r.nstream](a, 0)
        finally:
            end = rt.cudaStreamEndCapture(r.stream)
        g = ck("cudaStreamEndCapture", end)
        r.launch(r.instantiate(g))
        res = a.copy_to_host().tolist()
        return {"steps": steps, "a": res, "ok": res == [2, 5]}

    case("3_conditional_added_during_stream_capture", cond_during_capture)

    def capture_in_body_with_sync():
        # an illegal call while capturing into a body: does it invalidate like ordinary capture?
        a = zeros()
        g = r.graph()
        h = r.handle(g, default=1)
        _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeIf)
        ck("cudaStreamBeginCaptureToGraph", rt.cudaStreamBeginCaptureToGraph(
            r.stream, body, None, None, 0, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed))
        d.inc[1, 1, r.nstream](a)
        sync = code(rt.cudaStreamSynchronize(r.stream))
        end = rt.cudaStreamEndCapture(r.stream)
        rt.cudaGetLastError()
        return {"sync_in_body_capture": sync, "end_capture": code(end),
                "body_nodes_after": r.nodes(body)}

    case("3_capture_into_body_sync_invalidates", capture_in_body_with_sync)

    def exec_update():
        def build(n, extra=False, ctype=None):
            a = zeros()
            g = r.graph()
            h = r.handle(g, default=1)
            _, (body,) = r.cond_node(g, h, ctype or T.cudaGraphCondTypeWhile)

            def fill(ns, s):
                d.count_to[1, 1, ns](a, n, H(h))
                if extra:
                    d.inc[1, 1, ns](a)
            r.capture_into(body, fill)
            return g, a

        out = {}
        g1, a1 = build(10)
        ge = r.instantiate(g1)
        r.launch(ge)
        out["before_update_count"] = int(a1.copy_to_host()[0])
        g2, a2 = build(20)
        ret = rt.cudaGraphExecUpdate(ge, g2)
        out["same_topology_new_args"] = {"err": code(ret), "result": _ename(ret[1].result)}
        if int(ret[0]) == 0:
            r.launch(ge)
            out["same_topology_after_launch_count_new_buffer"] = int(a2.copy_to_host()[0])
        g3, _ = build(10, extra=True)
        ret = rt.cudaGraphExecUpdate(ge, g3)
        out["body_gains_a_node"] = {"err": code(ret), "result": _ename(ret[1].result)}
        rt.cudaGetLastError()
        g4, _ = build(1, ctype=T.cudaGraphCondTypeIf)
        ret = rt.cudaGraphExecUpdate(ge, g4)
        out["while_to_if"] = {"err": code(ret), "result": _ename(ret[1].result)}
        rt.cudaGetLastError()
        return out

    case("3_exec_update_with_conditionals", exec_update)

    def instantiate_flags():
        out = {}
        F = rt.cudaGraphInstantiateFlags
        for name, flag in (("none", 0), ("AutoFreeOnLaunch", F.cudaGraphInstantiateFlagAutoFreeOnLaunch),
                           ("Upload", F.cudaGraphInstantiateFlagUpload),
                           ("DeviceLaunch", F.cudaGraphInstantiateFlagDeviceLaunch),
                           ("UseNodePriority", F.cudaGraphInstantiateFlagUseNodePriority)):
            a = zeros()
            g = r.graph()
            h = r.handle(g, default=1)
            _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeWhile)
            r.capture_into(body, lambda ns, s: d.count_to[1, 1, ns](a, 4, H(h)))
            ret = rt.cudaGraphInstantiate(g, int(flag))
            row = {"instantiate": code(ret)}
            if int(ret[0]) == 0:
                row["launch"] = code(rt.cudaGraphLaunch(ret[1], r.stream))
                wait(r.stream)
                row["count"] = int(a.copy_to_host()[0])
            rt.cudaGetLastError()
            out[name] = row
        return out

    case("3_instantiate_flags", instantiate_flags)

    def handle_rules():
        out = {}
        # one handle on two conditional nodes
        g = r.graph()
        h = r.handle(g, default=0)
        r.cond_node(g, h, T.cudaGraphCondTypeIf)
        p = rt.cudaGraphNodeParams()
        p.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
        p.conditional.handle = h
        p.conditional.type = T.cudaGraphCondTypeIf
        p.conditional.size = 1
        out["second_node_same_handle_add"] = code(rt.cudaGraphAddNode(g, None, None, 0, p))
        out["second_node_same_handle_instantiate"] = code(rt.cudaGraphInstantiate(g, 0))
        rt.cudaGetLastError()
        # a handle with no node
        g = r.graph()
        r.handle(g, default=0)
        ck("cudaGraphAddEmptyNode", rt.cudaGraphAddEmptyNode(g, None, 0))
        out["unused_handle_instantiate"] = code(rt.cudaGraphInstantiate(g, 0))
        rt.cudaGetLastError()
        # bad sizes
        for ctype, size in ((T.cudaGraphCondTypeWhile, 2), (T.cudaGraphCondTypeIf, 3),
                            (T.cudaGraphCondTypeSwitch, 0)):
            g = r.graph()
            h = r.handle(g, default=0)
            p = rt.cudaGraphNodeParams()
            p.type = rt.cudaGraphNodeType.cudaGraphNodeTypeConditional
            p.conditional.handle = h
            p.conditional.type = ctype
            p.conditional.size = size
            out[f"{ctype.name}_size{size}"] = code(rt.cudaGraphAddNode(g, None, None, 0, p))
            rt.cudaGetLastError()
        out["bad_flags_2"] = code(rt.cudaGraphConditionalHandleCreate(r.graph(), 0, 2))
        rt.cudaGetLastError()
        return out

    case("3_handle_and_size_rules", handle_rules)

    # --- 4: costs
    def cost_while_iteration():
        a = zeros()

        def while_graph(n):
            g = r.graph()
            h = r.handle(g, default=1)
            _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeWhile)
            r.capture_into(body, lambda ns, s: d.count_to[1, 1, ns](a, n, H(h)))
            return r.instantiate(g)

        def plain_graph(n):
            g = r.graph()
            r.capture_into(g, lambda ns, s: [d.tiny[1, 1, ns](a) for _ in range(n)])
            return r.instantiate(g)

        out = {}
        for label, make in (("while", while_graph), ("plain", plain_graph)):
            for n in (10, 1000):
                ge = make(n)
                # the WHILE counts a up to n: reset before each launch so every launch runs n times
                def go(ge=ge):
                    ck("cudaMemsetAsync", rt.cudaMemsetAsync(a.device_ctypes_pointer.value, 0, 8,
                                                             r.stream))
                    ck("cudaGraphLaunch", rt.cudaGraphLaunch(ge, r.stream))
                med, _ = r.event_ms(go)
                out[f"{label}_{n}_ms"] = med
            out[f"{label}_us_per_step"] = (out[f"{label}_1000_ms"] - out[f"{label}_10_ms"]) / 990 * 1e3
        ge = while_graph(1000)
        r.launch(ge)
        out["while_1000_count_check"] = int(a.copy_to_host()[0])
        return out

    case("4_cost_per_while_iteration", cost_while_iteration)

    def cost_false_if():
        a = zeros()
        n = 100

        def chain(with_if):
            g = r.graph()
            prev = []
            for _ in range(n):
                ck("cudaStreamBeginCaptureToGraph", rt.cudaStreamBeginCaptureToGraph(
                    r.stream, g, prev or None, None, len(prev),
                    rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed))
                d.tiny[1, 1, r.nstream](a)
                info = rt.cudaStreamGetCaptureInfo(r.stream)
                prev = list(info[4])
                ck("cudaStreamEndCapture", rt.cudaStreamEndCapture(r.stream))
                if with_if:
                    h = r.handle(g, default=0)
                    node, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeIf, deps=prev)
                    r.capture_into(body, lambda ns, s: d.tiny[1, 1, ns](a))
                    prev = [node]
            return r.instantiate(g)

        out = {}
        for label, w in (("kernels", False), ("kernels_plus_false_if", True)):
            ge = chain(w)
            out[f"{label}_{n}_ms"] = r.event_ms(lambda ge=ge: ck(
                "cudaGraphLaunch", rt.cudaGraphLaunch(ge, r.stream)))[0]
        out["false_if_us_each"] = (out[f"kernels_plus_false_if_{n}_ms"] - out[f"kernels_{n}_ms"]) / n * 1e3
        return out

    case("4_cost_false_if_node", cost_false_if)

    def cost_host_launch():
        a = zeros()
        out = {}

        def host_us(ge, reps=200):
            ts = []
            for _ in range(10):
                ck("cudaGraphLaunch", rt.cudaGraphLaunch(ge, r.stream))
            wait(r.stream)
            for _ in range(reps):
                t0 = time.perf_counter_ns()
                rt.cudaGraphLaunch(ge, r.stream)
                ts.append(time.perf_counter_ns() - t0)
            wait(r.stream)
            return statistics.median(ts) / 1e3

        g = r.graph()
        h = r.handle(g, default=1)
        _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeWhile)
        # stop at once on relaunch (a stays >= 3): the host call's time, not the GPU's, is measured
        r.capture_into(body, lambda ns, s: d.count_to[1, 1, ns](a, 3, H(h)))
        out["while_graph_launch_host_us"] = host_us(r.instantiate(g))
        g = r.graph()
        r.capture_into(g, lambda ns, s: d.tiny[1, 1, ns](a))
        out["one_kernel_graph_launch_host_us"] = host_us(r.instantiate(g))
        g = r.graph()
        r.capture_into(g, lambda ns, s: [d.tiny[1, 1, ns](a) for _ in range(1000)])
        out["plain_1000_kernel_graph_launch_host_us"] = host_us(r.instantiate(g), reps=50)
        return out

    case("4_cost_host_graph_launch", cost_host_launch)

    # --- 5: the mini decoder
    def decode(eos_step):
        embed, mix, pick, write, advance = d.decoder
        Hd, V, limit = d.H, d.V, 64
        rng = np.random.default_rng(7)
        w = rng.integers(0, 50, size=(Hd, Hd)).astype(np.int64)
        first = 5
        free_run = decode_reference(w, first, -1, limit, Hd, V)
        eos = free_run[eos_step] if eos_step is not None else -1
        ref = decode_reference(w, first, eos, limit, Hd, V)
        tokens = cuda.to_device(np.full(limit + 2, -1, np.int64))
        pos = zeros()
        tok = zeros()
        state = zeros(Hd)
        hidden = zeros(Hd)
        dw = cuda.to_device(w)
        init = np.full(limit + 2, -1, np.int64)
        init[0] = first
        tokens0 = cuda.to_device(init)
        cuda.synchronize()
        g = r.graph()
        h = r.handle(g, default=1)
        _, (body,) = r.cond_node(g, h, T.cudaGraphCondTypeWhile)

        def step(ns, s):
            embed[1, Hd, ns](tokens, pos, state)
            mix[1, Hd, ns](state, dw, hidden)
            pick[1, 1, ns](hidden, V, tok)
            write[1, 1, ns](tokens, pos, tok)
            advance[1, 1, ns](pos, tok, eos, limit, H(h))
        r.capture_into(body, step)
        ge = r.instantiate(g)

        def reset():
            # on the probe's stream, so the graph launch behind it sees the fresh buffers
            ck("cudaMemcpyAsync", rt.cudaMemcpyAsync(
                tokens.device_ctypes_pointer.value, tokens0.device_ctypes_pointer.value,
                init.nbytes, rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, r.stream))
            ck("cudaMemsetAsync", rt.cudaMemsetAsync(pos.device_ctypes_pointer.value, 0, 8,
                                                     r.stream))

        reset()
        r.launch(ge)
        got = tokens.copy_to_host()
        n = int(pos.copy_to_host()[0])
        got_list = [int(x) for x in got[: n + 1]]
        # GPU time of a whole generation (reset + one launch), between CUDA events
        gpu_ms, _ = r.event_ms(lambda: (reset(), ck("cudaGraphLaunch",
                                                     rt.cudaGraphLaunch(ge, r.stream))))
        # the host's side: one launch call, then the wait for the end of the generation
        host = []
        for _ in range(5):
            reset()
            t0 = time.perf_counter_ns()
            ck("cudaGraphLaunch", rt.cudaGraphLaunch(ge, r.stream))
            host.append(time.perf_counter_ns() - t0)
            wait(r.stream)
        return {"eos": eos, "tokens_generated": n, "ref_len": len(ref) - 1,
                "match": got_list == ref, "first_tokens": got_list[:12],
                "gpu_ms_per_generation": gpu_ms,
                "gpu_us_per_token": gpu_ms * 1e3 / max(n, 1),
                "host_launch_us_per_generation": statistics.median(host) / 1e3,
                "untouched_after_stop": bool((got[n + 1:] == -1).all()),
                "ok": got_list == ref}

    case("5_decode_while_stops_at_eos", lambda: decode(eos_step=23))
    case("5_decode_while_stops_at_limit", lambda: decode(eos_step=None))


def versions():
    meta = {"python": platform.python_version(), "argv": sys.argv}
    for mod in ("numba", "numba_cuda", "cuda.core", "cuda.bindings", "numpy"):
        try:
            m = __import__(mod, fromlist=["_"])
            meta[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001
            meta[mod] = f"missing: {e}"
    return meta


def gpu_present():
    """(True, description) when a CUDA device answers, else (False, why)."""
    try:
        from cuda.bindings import runtime as rt
    except Exception as e:  # noqa: BLE001
        return False, f"cuda.bindings is not importable ({e})"
    err, n = rt.cudaGetDeviceCount()
    if int(err) != 0 or n == 0:
        return False, f"cudaGetDeviceCount -> {_ename(err)}, {n} devices"
    err, prop = rt.cudaGetDeviceProperties(0)
    drv = rt.cudaDriverGetVersion()
    return True, {"name": prop.name.decode(errors="replace").rstrip("\x00") if int(err) == 0 else "?",
                  "cc": f"{prop.major}.{prop.minor}" if int(err) == 0 else "?",
                  "driver_version": drv[1] if int(drv[0]) == 0 else code(drv),
                  "runtime_version": rt.cudaRuntimeGetVersion()[1]}


def main(argv=None):
    global OUT_DIR
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for conditional_probe.json")
    ap.add_argument("--budget", type=float, default=170.0,
                    help="seconds after which the watchdog writes the results and exits")
    ap.add_argument("--only", nargs="*", default=[],
                    help="run only the cases whose names start with these prefixes, e.g. 3_ 5_")
    args = ap.parse_args(argv)
    OUT_DIR = args.out
    ONLY[:] = args.only
    os.makedirs(OUT_DIR, exist_ok=True)
    RESULTS["meta"].update(versions())
    ok, info = gpu_present()
    if not ok:
        RESULTS["meta"]["no_gpu"] = info
        write_json()
        print(f"conditional_probe: no usable CUDA GPU here ({info}). This probe needs the cuda "
              f"backend: run it on a GPU host with "
              f"`PYTHONPATH=$PWD python tests/conformance/conditional_probe.py --out DIR`.",
              file=sys.stderr)
        return 2
    RESULTS["meta"]["device"] = info
    print(f"device: {info}\n{'case':<44} res  time    details", flush=True)
    timer = threading.Timer(args.budget, hard_stop, (f"run passed its {args.budget:.0f} s budget",))
    timer.daemon = True
    timer.start()
    t0 = time.perf_counter()
    try:
        run_cases(args)
    finally:
        timer.cancel()
    RESULTS["meta"]["total_seconds"] = round(time.perf_counter() - t0, 2)
    RESULTS["meta"].pop("current", None)
    write_json()
    cases = RESULTS["cases"]
    bad = [k for k, v in cases.items() if not v.get("ok")]
    print(f"\n{len(cases) - len(bad)}/{len(cases)} cases ok; failed: {', '.join(bad) or 'none'}")
    print(f"results: {os.path.join(OUT_DIR, 'conditional_probe.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
