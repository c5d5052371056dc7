"""labkit's own behaviour on the active backend: backend choice, errors, kernels, bench schema."""
import gc
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import labkit
from labkit import _errors
from labkit.course import workloads as w

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)


def test_backend_is_reported_with_its_reason():
    assert labkit.backend in ("cuda", "sim")
    assert labkit.backend_reason
    assert ("measured on" if labkit.backend == "cuda" else "simulated, calibrated on") in labkit.provenance()


def test_unknown_backend_value_is_a_clear_error():
    r = _run("import labkit", LABKIT_BACKEND="gpu")
    assert r.returncode != 0 and "is not one of auto, cuda, sim" in r.stderr


@pytest.mark.skipif(labkit.backend == "cuda", reason="this machine has a GPU")
def test_asking_for_cuda_without_a_gpu_is_an_error_not_a_fallback():
    r = _run("import labkit", LABKIT_BACKEND="cuda")
    assert r.returncode != 0 and "no usable GPU" in r.stderr and "LABKIT_BACKEND=sim" in r.stderr


def test_numba_cuda_imported_first_in_the_other_mode_is_refused():
    r = _run("import os; os.environ['NUMBA_ENABLE_CUDASIM']='0'\nimport numba.cuda\nimport labkit",
             LABKIT_BACKEND="sim")
    assert r.returncode != 0 and "imported before labkit" in r.stderr


def test_check_returns_values_and_raises_with_name_and_hint():
    assert labkit.check((labkit.rt.cudaError_t.cudaSuccess, 7)) == 7
    with pytest.raises(labkit.CudaError, match=r"^doing it: cudaErrorStreamCaptureInvalidated \(901\)") as ei:
        labkit.check((labkit.rt.cudaError_t.cudaErrorStreamCaptureInvalidated,), "doing it")
    assert ei.value.code == 901 and "capture again" in str(ei.value)
    assert isinstance(ei.value, RuntimeError)


@pytest.mark.parametrize("code", [900, 901, 902, 903, 904, 905, 906, 907, 910])
def test_every_capture_error_has_a_hint(code):
    assert len(_errors.hint_for(code)) > 40


def test_capturing_stream_0_gives_the_same_hint_through_labkit_capture_and_the_raw_call():
    mode = labkit.rt.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
    with pytest.raises(labkit.CudaError, match=r"^cudaStreamBeginCapture on the legacy NULL "
                                               r"stream: cudaErrorStreamCaptureUnsupported") as wrapped:
        with labkit.capture(0):
            pass
    with pytest.raises(labkit.CudaError, match=r"^cudaStreamBeginCapture: "
                                               r"cudaErrorStreamCaptureUnsupported \(900\)") as raw:
        labkit.check(labkit.rt.cudaStreamBeginCapture(0, mode), "cudaStreamBeginCapture")
    labkit.rt.cudaGetLastError()
    assert wrapped.value.hint == raw.value.hint == _errors.hint_for(900, "cudaStreamBeginCapture")
    assert "capture a stream you created" in raw.value.hint
    # no capture exists to be invalidated: the hint must not say one was
    assert "no capture began" in raw.value.hint and "invalidat" not in raw.value.hint


@pytest.mark.parametrize("context,says,not_says", [
    ("cudaStreamSynchronize inside the capture", "after cudaStreamEndCapture", "numpy"),
    ("synchronizing a stream", "after cudaStreamEndCapture", "numpy"),     # labkit.Stream's
    ("cudaStreamQuery", "after cudaStreamEndCapture", "stream 0"),
    ("cudaMalloc", "cudaMallocAsync on the capturing stream", "synchronize"),
    ("cudaFree", "cudaFreeAsync on the capturing stream", "numpy"),
    ("launching k on a host array (numba would allocate a temporary device buffer for it)",
     "pass device arrays", "stream 0"),
])
def test_a_900_whose_call_is_known_gets_that_calls_hint_alone(context, says, not_says):
    e = labkit.CudaError(900, context)
    assert says in e.hint and not_says not in e.hint and e.hint != _errors.hint_for(900)
    assert str(e).count("hint:") == 1


def test_a_900_whose_call_is_unknown_gets_every_cause():
    hint = labkit.CudaError(900).hint
    assert hint == _errors.hint_for(900)
    for cause in ("stream 0", "synchronize or query", "allocation or free", "numpy array"):
        assert cause in hint


@pytest.mark.skipif(labkit.backend != "sim", reason="compares references with numba's CUDA simulator")
@pytest.mark.parametrize("name", ["add_one", "scale", "saxpy", "busy"])
def test_reference_equals_the_kernel_under_numbas_simulator(name):
    rng = np.random.default_rng(0)
    k = getattr(w, name)
    n = 70                       # not a multiple of the block: the bounds check matters
    grid, block = (2, 1, 1), (32, 1, 1)
    x = rng.standard_normal(n).astype(np.float32)
    extra = {"add_one": [], "scale": [np.float32(1.5)], "busy": [5],
             "saxpy": [np.float32(2.0), rng.standard_normal(n).astype(np.float32),
                       rng.standard_normal(n).astype(np.float32)]}[name]
    a, b = x.copy(), x.copy()
    k.simulate(grid, block, a, *extra)
    k.reference(grid, block, b, *extra)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert not np.array_equal(a, x)


def test_kernel_launch_config_is_validated():
    x = labkit.to_device(np.zeros(8, np.float32))
    with pytest.raises(ValueError, match="positive ints"):
        w.add_one[0, 32](x)
    with pytest.raises(TypeError, match="kernel\\[grid, block\\]"):
        w.add_one[4](x)


def test_graph_replay_equals_eager_and_keeps_its_buffers_alive():
    """Only the executable is left holding the buffer: without labkit's keepalive the array is
    freed when collected, and the replay writes into freed memory (on "sim":
    cudaErrorIllegalAddress; on a GPU: wrong results or 700)."""
    s = labkit.Stream()
    x = labkit.to_device(np.arange(1024, dtype=np.float32))
    ptr = x.device_ctypes_pointer.value
    w.chain(1, x, s)
    with labkit.capture(s) as cap:
        w.scale[4, 256, s](x, np.float32(2.0))
        w.add_one[4, 256, s](x)
    g = cap.graph
    ex = g.instantiate()
    del x, cap                                  # the graph and its executable keep the buffer alive
    gc.collect()
    ex.launch(s)
    s.synchronize()
    out = np.empty(1024, np.float32)
    labkit.check(labkit.rt.cudaMemcpy(out.ctypes.data, ptr, out.nbytes,
                                      labkit.rt.cudaMemcpyKind.cudaMemcpyDeviceToHost))
    np.testing.assert_array_equal(out, ((np.arange(1024) + 1) * 2 + 1).astype(np.float32))
    ex.close(); g.close(); s.close()


def test_a_failed_update_leaves_the_old_executable_working():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    w.chain(1, x, s)
    with labkit.capture(s) as c1:
        w.chain(3, x, s)
    with labkit.capture(s) as c2:
        w.chain(4, x, s)
    ex = c1.graph.instantiate()
    r = ex.update(c2.graph)
    assert not r.ok and r.code == 910 and "topology" in r.reason
    before = x.copy_to_host()
    ex.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), before + 3)


def test_node_update_after_a_whole_graph_update_still_finds_its_node():
    s = labkit.Stream()
    x, y, z = (labkit.to_device(np.zeros(1024, np.float32)) for _ in range(3))
    w.chain(1, x, s)
    graphs = []
    for buf in (x, y):
        with labkit.capture(s) as c:
            w.chain(2, buf, s)
        graphs.append(c.graph)
    ex = graphs[0].instantiate()
    assert ex.update(graphs[1]).ok
    ex.set_kernel_args(0, w.add_one, 4, 256, z)
    ex.launch(s)
    s.synchronize()
    assert x.copy_to_host()[0] == 1 and y.copy_to_host()[0] == 1 and z.copy_to_host()[0] == 1


@pytest.mark.skipif(labkit.backend != "sim", reason="the simulator's cost model")
@pytest.mark.usefixtures("steady_host")          # the model's exact figure
def test_a_simulated_node_update_costs_the_calibrated_driver_call_and_nothing_more():
    from labkit.sim.clock import P
    s = labkit.Stream()
    x, y = (labkit.to_device(np.zeros(1024, np.float32)) for _ in range(2))
    with labkit.capture(s) as cap:
        w.chain(2, x, s)
    ex = cap.graph.instantiate()
    t0 = labkit.host_us()
    ex.set_kernel_args(1, w.add_one, 4, 256, y)
    assert labkit.host_us() - t0 == pytest.approx(P("node_update_us"), rel=1e-9)
    ex.close(); cap.graph.close(); s.close()


def test_bench_json_has_exactly_the_documented_keys():
    r = subprocess.run([sys.executable, "-m", "labkit", "bench", "--json", "--kernels", "50",
                        "--repeat", "5"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(data) == {"backend", "device", "kernels", "eager_us_per_kernel", "graph_us_per_kernel",
                         "graph_launch_us", "capture_us", "instantiate_us", "first_launch_us",
                         "exec_update_us", "node_update_us", "breakeven_replays",
                         "prepared_us_per_kernel",   # an extra key
                         "raw_node_update_us", "explicit_build_us"}
    assert data["kernels"] == 50 and data["eager_us_per_kernel"] > data["graph_us_per_kernel"] > 0
    assert data["eager_us_per_kernel"] > data["prepared_us_per_kernel"] > data["graph_us_per_kernel"]


def test_a_launch_on_a_closed_stream_is_refused_even_after_earlier_launches_on_it():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(8, np.float32))
    w.add_one[1, 8, s](x)                      # the launch for (grid, block, s) is made and kept
    s.synchronize()
    s.close()
    with pytest.raises(ValueError, match="the stream was closed"):
        w.add_one[1, 8, s](x)
