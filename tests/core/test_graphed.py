"""labkit.graphed: static buffers, one replay per call, outputs overwritten, bad inputs refused."""
import labkit
import numpy as np
import pytest

from labkit.course.workloads import saxpy
from tests.kernels import BLOCK, GRID, N, add_one, scale


def _triple_plus_one(stream, x):
    """y = 3x + 1, out of place: y is allocated inside, as a user's function would."""
    y = labkit.device_array(x.shape, x.dtype)
    saxpy[GRID, BLOCK, stream](y, 2.0, x, x)
    add_one[GRID, BLOCK, stream](y)
    return y


def _in_place(stream, x):
    add_one[GRID, BLOCK, stream](x)
    scale[GRID, BLOCK, stream](x)
    return x


def _ramp(k):
    return np.arange(N, dtype=np.float32) + np.float32(k)


def test_a_call_copies_its_input_into_the_static_buffer_and_replays_the_captured_kernels():
    g = labkit.graphed(_in_place, _ramp(0))
    assert len(g.graph.kernel_nodes()) == 2
    out = g(_ramp(5))
    np.testing.assert_array_equal(out.copy_to_host(), 2 * (_ramp(5) + 1))
    np.testing.assert_array_equal(g.static_inputs[0].copy_to_host(), 2 * (_ramp(5) + 1))
    assert g.calls == 1


def test_every_call_returns_the_same_static_output_which_the_next_call_overwrites():
    g = labkit.graphed(_in_place, _ramp(0))
    first = g(_ramp(1))
    kept = first.copy_to_host()
    second = g(_ramp(2))
    assert second is first is g.static_outputs
    np.testing.assert_array_equal(first.copy_to_host(), 2 * (_ramp(2) + 1))   # the bug
    np.testing.assert_array_equal(kept, 2 * (_ramp(1) + 1))                   # the fix


def test_device_array_inputs_are_copied_too_and_the_callers_array_is_left_alone():
    g = labkit.graphed(_in_place, _ramp(0))
    x = labkit.to_device(_ramp(3))
    out = g(x)
    np.testing.assert_array_equal(out.copy_to_host(), 2 * (_ramp(3) + 1))
    np.testing.assert_array_equal(x.copy_to_host(), _ramp(3))


def test_the_warm_up_runs_on_the_side_stream_before_the_capture():
    seen = []

    def fn(stream, x):
        seen.append((stream, stream.is_capturing()))
        return _in_place(stream, x)

    side = labkit.Stream()
    g = labkit.graphed(fn, _ramp(0), warmup=2, stream=side)
    assert seen == [(side, False), (side, False), (side, True)]
    assert g.stream is side


@pytest.mark.parametrize("bad, what", [
    (np.zeros(N // 2, np.float32), r"shape \(512,\), dtype float32"),
    (np.zeros(N, np.float64), r"shape \(1024,\), dtype float64"),
])
def test_an_input_of_another_shape_or_dtype_is_refused_and_the_error_names_the_fix(bad, what):
    g = labkit.graphed(_in_place, _ramp(0))
    with pytest.raises(ValueError, match=rf"^argument 0 has {what}, but the graph was captured "
                                         r"for shape \(1024,\), dtype float32: .*Pad or convert "
                                         r"the input .* or make another graphed callable"):
        g(bad)
    assert g.calls == 0


def test_a_wrong_number_of_arguments_or_a_number_for_an_array_is_refused():
    g = labkit.graphed(_in_place, _ramp(0))
    with pytest.raises(TypeError, match=r"^this graphed callable takes 1 argument\(s\), like its "
                                        r"samples; got 2$"):
        g(_ramp(0), _ramp(1))
    with pytest.raises(TypeError, match=r"^argument 0 is a float, not an array"):
        g(1.0)


def test_a_scalar_sample_is_refused_because_the_graph_would_freeze_it():
    with pytest.raises(TypeError, match=r"^sample argument 0 is a int, not an array: .*frozen "
                                        r"into the graph"):
        labkit.graphed(_in_place, 3)


def test_no_sample_and_no_warm_up_are_refused():
    with pytest.raises(ValueError, match=r"^graphed\(fn, \*sample_args\) needs at least one "
                                         r"sample"):
        labkit.graphed(_in_place)
    with pytest.raises(ValueError, match=r"^warmup must be at least 1"):
        labkit.graphed(_in_place, _ramp(0), warmup=0)


def test_buffers_the_function_allocates_are_allocated_once_at_capture_and_kept():
    g = labkit.graphed(_triple_plus_one, _ramp(0))
    a = g(_ramp(1))
    np.testing.assert_array_equal(a.copy_to_host(), 3 * _ramp(1) + 1)
    b = g(_ramp(4))
    assert b is a and a is not g.static_inputs[0]
    np.testing.assert_array_equal(b.copy_to_host(), 3 * _ramp(4) + 1)
    np.testing.assert_array_equal(g.static_inputs[0].copy_to_host(), _ramp(4))


def test_a_function_that_returns_no_array_is_refused():
    with pytest.raises(TypeError, match=r"^fn returned NoneType as output 1: return the device"):
        labkit.graphed(lambda s, x: (_in_place(s, x), None), _ramp(0))
    with pytest.raises(TypeError, match=r"^fn returned NoneType: return the device array"):
        labkit.graphed(lambda s, x: None, _ramp(0))
