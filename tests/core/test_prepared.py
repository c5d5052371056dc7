"""Prepared launches (labkit.prepare): same results as numba's launch, checked rebinds, capture."""
import numpy as np
import pytest

import labkit
from labkit.course.workloads import add_one, saxpy, scale

GRID, BLOCK, N = 4, 256, 1024


@pytest.fixture
def s():
    st = labkit.Stream()
    yield st
    st.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_prepared_saxpy_equals_numbas_launch_on_random_inputs(s, seed):
    rng = np.random.default_rng(seed)
    a = np.float32(rng.normal())
    x, y = (rng.normal(size=N).astype(np.float32) for _ in range(2))
    dx, dy = labkit.to_device(x), labkit.to_device(y)
    out_numba, out_prep = labkit.device_array(N), labkit.device_array(N)
    saxpy[GRID, BLOCK, s](out_numba, a, dx, dy)
    p = labkit.prepare(saxpy, GRID, BLOCK, s, out_prep, a, dx, dy)
    p()
    s.synchronize()
    np.testing.assert_array_equal(out_prep.copy_to_host(), out_numba.copy_to_host())
    np.testing.assert_allclose(out_prep.copy_to_host(), a * x + y, rtol=1e-5, atol=1e-6)  # the GPU fuses a*x+y


def test_repeated_calls_launch_each_time_and_rebind_switches_buffers(s):
    x, y = labkit.to_device(np.zeros(N, np.float32)), labkit.to_device(np.full(N, 10, np.float32))
    p = add_one.prepare(GRID, BLOCK, s, x)
    for _ in range(5):
        p()
    p(y)                       # rebind to y, launch once
    p()                        # y again
    s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), np.full(N, 5, np.float32))
    np.testing.assert_array_equal(y.copy_to_host(), np.full(N, 12, np.float32))


def test_a_scalar_rebind_takes_the_new_value(s):
    x = labkit.to_device(np.ones(N, np.float32))
    p = scale.prepare(GRID, BLOCK, s, x, np.float32(3))
    p(x, np.float32(0.5))
    s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), np.full(N, 0.5, np.float32))


@pytest.mark.parametrize("bad, msg", [
    (lambda: labkit.to_device(np.zeros(N, np.float64)), r"argument 0 was prepared with dtype float32 and got float64"),
    (lambda: labkit.to_device(np.zeros(N // 2, np.float32)), r"argument 0 was prepared with shape \(1024,\) and got \(512,\)"),
    (lambda: 3.0, r"argument 0 was prepared as an array"),
])
def test_rebinding_to_another_kind_of_argument_is_refused_and_nothing_launches(s, bad, msg):
    x = labkit.to_device(np.zeros(N, np.float32))
    p = add_one.prepare(GRID, BLOCK, s, x)
    with pytest.raises(TypeError, match=msg):
        p(bad())
    p()                        # still prepared for x, and only this launch happened
    s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), np.ones(N, np.float32))


def test_a_scalar_of_another_dtype_is_refused_with_what_to_pass(s):
    x = labkit.to_device(np.ones(N, np.float32))
    p = scale.prepare(GRID, BLOCK, s, x, np.float32(2))
    with pytest.raises(TypeError, match=r"prepared as float32 and got float64; pass np.float32"):
        p(x, 2.0)


def test_wrong_argument_count_and_host_arrays_are_clear_errors(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    p = add_one.prepare(GRID, BLOCK, s, x)
    with pytest.raises(TypeError, match="prepared with 1 arguments, got 2"):
        p(x, x)
    with pytest.raises(TypeError, match="host numpy array.*labkit.to_device"):
        add_one.prepare(GRID, BLOCK, s, np.zeros(N, np.float32))
    with pytest.raises(TypeError, match="takes a @labkit.kernel"):
        labkit.prepare(lambda x: None, GRID, BLOCK, s, x)


def test_prepared_launches_are_captured_as_kernel_nodes(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    p = add_one.prepare(GRID, BLOCK, s, x)
    with labkit.capture(s) as cap:
        for _ in range(7):
            p()
    g = cap.graph
    assert g.node_kinds().count("kernel") == 7 and len(g.edges) == 6
    s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), np.zeros(N, np.float32))   # nothing ran yet
    ex = g.instantiate()
    ex.launch(s); ex.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), np.full(N, 14, np.float32))
    ex.close(); g.close()


def test_a_prepared_launch_costs_less_host_time_than_numbas_launch(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    p = add_one.prepare(GRID, BLOCK, s, x)
    add_one[GRID, BLOCK, s](x); p(); s.synchronize()

    def per_launch(fn, k=50):
        best = float("inf")
        for _ in range(5):
            t0 = labkit.host_us()
            for _ in range(k):
                fn()
            best = min(best, (labkit.host_us() - t0) / k)
            s.synchronize()
        return best
    eager = per_launch(lambda: add_one[GRID, BLOCK, s](x))
    prepared = per_launch(p)
    assert prepared < 0.6 * eager, (prepared, eager)
