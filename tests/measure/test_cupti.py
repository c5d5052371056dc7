"""labkit.measure._cupti: import is safe without CUPTI, names and records convert to spans correctly,
and on a GPU a trace of 20 kernel launches shows 20 kernels in launch order."""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

from labkit.measure import _cupti
from labkit.measure._cupti import KernelTrace, Record, record_from_activity, records_to_spans


def _n(name: str) -> str:
    """An Itanium <source-name>: length then text."""
    return f"{len(name)}{name}"


def _tag(text: str) -> str:
    """An Itanium ABI tag, as numba appends to every kernel symbol."""
    return f"B{len(text)}{text}"


NUMBA_ADD_ONE = ("_ZN" + _n("__main__") + _n("add_one") + _tag("v1")
                 + _tag("cw51cXTLSUwv1sCUt9Uw1VEw0NRRQPKzLTg4gaGKFsG2oMQGEYakJSQB1PQBk0Bynm21O")
                 + "E" + _n("Array") + "IfLi1E1C" + _n("mutable") + _n("aligned") + "E")


# --------------------------------------------------------------------------- availability

@pytest.fixture
def cupti_missing(monkeypatch):
    """Make ``from cupti import cupti`` fail and forget what was loaded before."""
    monkeypatch.setitem(sys.modules, "cupti", None)
    monkeypatch.setattr(_cupti, "_module", None)
    monkeypatch.setattr(_cupti, "_why_not", None)


def test_available_says_why_not_and_how_to_fix_when_cupti_is_missing(cupti_missing):
    ok, reason = _cupti.available()
    assert ok is False
    assert reason.startswith("cupti-python is not installed")
    assert "pip install 'cuda-graphs-lab[cu13]'" in reason


def test_kernel_trace_refuses_to_start_without_cupti_and_names_the_fallback(cupti_missing):
    with pytest.raises(RuntimeError, match=r"^CUPTI tracing is not available: cupti-python is "
                                           r"not installed.*falls back to CUDA event pairs$"):
        with KernelTrace():
            pass


def test_kernel_trace_refuses_unknown_kinds():
    with pytest.raises(ValueError, match=r"^unknown trace kinds \['kernels'\]"):
        KernelTrace(kinds=["kernels"])


# --------------------------------------------------------------------------- names

def test_a_labkit_kernels_symbol_reads_as_its_python_name_and_others_as_given(monkeypatch):
    from labkit import _kernel
    k = _kernel.Kernel(lambda x: None)
    k.name = "add_one"
    compiled = SimpleNamespace(entry_name=NUMBA_ADD_ONE)
    monkeypatch.setattr(k, "dispatcher", SimpleNamespace(overloads={("f4[::1]",): compiled}))
    monkeypatch.setattr(_kernel, "_names", {})
    assert _kernel.python_name(NUMBA_ADD_ONE) == "add_one"
    assert _kernel.python_name("_Z5scaleIfEvPT_i") == "_Z5scaleIfEvPT_i"   # not labkit's: as given


def test_kernel_records_are_named_by_the_callers_kernel_name():
    spans = records_to_spans([Record("kernel", 1000, 2000, name=NUMBA_ADD_ONE, stream_id=7)],
                             kernel_name={NUMBA_ADD_ONE: "add_one"}.get)
    assert [s.name for s in spans] == ["add_one"]
    raw = records_to_spans([Record("kernel", 1000, 2000, name=NUMBA_ADD_ONE, stream_id=7)])
    assert [s.name for s in raw] == [NUMBA_ADD_ONE]


@pytest.mark.parametrize("api, kind", [
    ("cuLaunchKernel", "launch"), ("cuLaunchKernelEx", "launch"), ("cudaLaunchKernel", "launch"),
    ("cuGraphLaunch", "graph"), ("cudaGraphLaunch", "graph"),
    ("cuStreamSynchronize", "sync"), ("cudaDeviceSynchronize", "sync"),
    ("cudaGraphInstantiate", "api"), ("cuMemAlloc", "api"), ("cuLaunchHostFunc", "api"),
])
def test_api_calls_are_classified_by_what_they_do(api, kind):
    assert _cupti.api_span_kind(api) == kind


# --------------------------------------------------------------------------- records

def _kernel(start, end, stream=7, corr=1, graph_id=0, name=NUMBA_ADD_ONE):
    return SimpleNamespace(kind=10, start=start, end=end, name=name, stream_id=stream,
                           correlation_id=corr, graph_id=graph_id, grid_x=4)


def _api(kind_code, start, end, cbid, corr):
    return SimpleNamespace(kind=kind_code, start=start, end=end, cbid=cbid, correlation_id=corr,
                           process_id=1, thread_id=2)


_FAKE_CALLBACK_NAMES = {("runtime", 211): "cudaLaunchKernel_v7000",
                        ("driver", 307): "cuLaunchKernel",
                        ("driver", 514): "cuGraphLaunch"}


def _fake_api_name(domain: str, cbid: int) -> str:
    return _FAKE_CALLBACK_NAMES[(domain, cbid)]


def test_record_from_activity_copies_fields_by_kind_and_skips_other_kinds():
    kernel = record_from_activity(_kernel(1000, 3000, stream=7, corr=5, graph_id=42))
    assert kernel == Record("kernel", 1000, 3000, name=NUMBA_ADD_ONE, stream_id=7,
                            correlation_id=5, graph_id=42)
    runtime = record_from_activity(_api(5, 100, 900, cbid=211, corr=5))
    assert (runtime.kind, runtime.cbid, runtime.stream_id, runtime.name) == ("runtime", 211, None, "")
    copy = record_from_activity(SimpleNamespace(kind=1, start=1, end=2, copy_kind=1, bytes=4096,
                                                stream_id=3, correlation_id=9, graph_id=0))
    assert (copy.kind, copy.bytes, copy.copy_kind, copy.graph_id) == ("memcpy", 4096, 1, None)
    assert record_from_activity(SimpleNamespace(kind=9, start=0, end=0)) is None  # CONTEXT


def test_records_become_spans_in_us_from_the_first_record_on_cpu_and_stream_rows():
    activities = [
        _api(5, 1_000, 6_000, cbid=211, corr=1),      # cudaLaunchKernel around ...
        _api(4, 2_000, 5_000, cbid=307, corr=2),      # ... the driver's cuLaunchKernel
        _kernel(8_000, 10_500, stream=7, corr=2),
        _api(4, 11_000, 13_000, cbid=514, corr=3),
        _kernel(14_000, 15_000, stream=9, corr=3, graph_id=4),
        SimpleNamespace(kind=1, start=16_000, end=17_000, copy_kind=2, bytes=64, stream_id=9,
                        correlation_id=4, graph_id=0),
        SimpleNamespace(kind=2, start=17_000, end=17_500, bytes=64, stream_id=9,
                        correlation_id=5, graph_id=0),
        _kernel(0, 0, corr=6),                         # no timestamps: left out
    ]
    records = [record_from_activity(a) for a in activities]
    spans = records_to_spans(records, api_name=_fake_api_name,
                             kernel_name={NUMBA_ADD_ONE: "add_one"}.get)
    got = [(s.row, s.name, s.kind, s.start_us, s.end_us) for s in spans]
    assert got == [
        ("CPU", "cudaLaunchKernel", "launch", 0.0, 5.0),   # "_v7000" stripped
        ("CPU", "cuLaunchKernel", "launch", 1.0, 4.0),
        ("stream 7", "add_one", "kernel", 7.0, 9.5),
        ("CPU", "cuGraphLaunch", "graph", 10.0, 12.0),
        ("stream 9", "add_one", "kernel", 13.0, 14.0),
        ("stream 9", "memcpy DtoH", "memcpy", 15.0, 16.0),
        ("stream 9", "memset", "memset", 16.0, 16.5),
    ]
    assert spans[2].correlation_id == spans[1].correlation_id == 2  # launch -> its kernel
    assert (spans[2].graph_id, spans[4].graph_id) == (None, 4)


def test_records_to_spans_measures_from_t0_when_given():
    spans = records_to_spans([record_from_activity(_kernel(5_000, 6_000))], t0_ns=4_000)
    assert (spans[0].start_us, spans[0].end_us) == (1.0, 2.0)
    assert records_to_spans([]) == []


def test_completed_buffers_go_to_the_active_trace_only(monkeypatch):
    trace = KernelTrace()
    _cupti._buffer_completed([_kernel(1, 2)])        # no trace active: dropped
    monkeypatch.setattr(_cupti, "_active", trace)
    _cupti._buffer_completed([_kernel(10, 20), SimpleNamespace(kind=9, start=0, end=0)])
    assert [r.start_ns for r in trace.records] == [10]
    assert trace.timeline().source == "cupti"


def test_a_record_that_cannot_be_read_is_reported_by_spans_not_swallowed(monkeypatch):
    trace = KernelTrace()
    monkeypatch.setattr(_cupti, "_active", trace)
    _cupti._buffer_completed([SimpleNamespace(kind=10)])  # no start/end
    with pytest.raises(RuntimeError, match=r"^reading CUPTI's records failed: AttributeError"):
        trace.spans()


# --------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.skipif(os.environ.get("LABKIT_BACKEND") != "cuda",
                    reason="needs a GPU: run with LABKIT_BACKEND=cuda")
def test_trace_of_20_eager_launches_has_20_kernel_spans_in_launch_order():
    import labkit  # noqa: F401  (chooses the backend before numba.cuda is imported)
    import numpy as np
    from numba import cuda

    ok, reason = _cupti.available()
    assert ok, reason

    # Kept here, not in a shared kernels module: numba.cuda may only be imported after labkit.
    @cuda.jit
    def add_one(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1.0

    stream = cuda.stream()
    x = cuda.to_device(np.zeros(1024, np.float32), stream=stream)
    add_one[4, 256, stream](x)  # compile and load the module outside the trace
    stream.synchronize()

    with KernelTrace() as trace:
        for _ in range(20):
            add_one[4, 256, stream](x)
        stream.synchronize()

    spans = trace.spans(t0_ns=trace.t_enter_ns)
    kernels = [s for s in spans if s.kind == "kernel"]
    assert len(kernels) == 20
    assert {s.name for s in kernels} == {"add_one"}
    assert len({s.row for s in kernels}) == 1
    assert all(s.start_us >= 0 for s in kernels)
    # Launch order (correlation ids) is execution order on one stream, without overlap.
    by_launch = sorted(kernels, key=lambda s: s.correlation_id)
    assert all(b.start_us > a.start_us and b.start_us >= a.end_us
               for a, b in zip(by_launch, by_launch[1:]))
    launches = [s for s in spans if s.row == "CPU" and s.kind == "launch"]
    assert len(launches) >= 20
    np.testing.assert_array_equal(x.copy_to_host(), np.full(1024, 21.0, np.float32))
