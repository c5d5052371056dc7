"""A learner's missteps with the core API: each is refused at the call with a message that says
what happened and what to do, not CUDA's generic code or an error from labkit's insides."""
import numpy as np
import pytest

import labkit
from labkit.course import workloads as w

N = 1024


@pytest.fixture
def s():
    with labkit.Stream() as stream:
        yield stream


def _captured(s, x):
    w.chain(1, x, s)                 # compile/register outside the capture
    with labkit.capture(s) as cap:
        w.add_one[4, 256, s](x)
    return cap.graph


def test_cap_graph_read_inside_the_capture_block_says_it_exists_after_the_block(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    with pytest.raises(RuntimeError, match=r"^cap.graph does not exist yet: the graph is made "
                                           r"when the `with labkit.capture\(...\) as cap:` block ends"):
        with labkit.capture(s) as cap:
            w.add_one[4, 256, s](x)
            cap.graph
    assert not s.is_capturing()
    assert len(cap.graph) == 1                # after the block it is there
    cap.graph.close()


def test_a_closed_executable_used_again_says_it_was_closed(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    g = _captured(s, x)
    ex = g.instantiate()
    ex.close()
    closed = r"^this executable graph was closed \(by close\(\) or the end of its with block\)"
    for use in (lambda: ex.launch(s), lambda: ex.upload(s), lambda: ex.update(g),
                lambda: ex.set_kernel_args(0, w.add_one, 4, 256, x)):
        with pytest.raises(ValueError, match=closed):
            use()
    g.close()


def test_a_closed_graph_used_again_says_it_was_closed(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    g, other = _captured(s, x), _captured(s, x)
    ex = other.instantiate()
    g.close()
    closed = r"^this graph was closed \(by close\(\) or the end of its with block\)"
    for use in (g.instantiate, lambda: len(g), lambda: g.nodes, lambda: g.edges,
                lambda: g.set_kernel_args(0, w.add_one, 4, 256, x), lambda: ex.update(g)):
        with pytest.raises(ValueError, match=closed):
            use()
    assert repr(g) == "<labkit.Graph closed>"
    before = x.copy_to_host()[0]
    ex.launch(s)                               # the executable of the other graph is unharmed
    s.synchronize()
    assert x.copy_to_host()[0] == before + 1
    ex.close(); other.close()


def test_set_kernel_args_with_a_host_array_says_to_pass_a_device_array(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    g = _captured(s, x)
    with g.instantiate() as ex:
        with pytest.raises(TypeError, match=r"^add_one: argument 0 \(x\) is a host numpy array; "
                                            r"pass a device array: copy it once with "
                                            r"labkit\.to_device"):
            ex.set_kernel_args(0, w.add_one, 4, 256, np.zeros(N, np.float32))
    g.close()


@pytest.mark.parametrize("args", [(), ("x", "x")], ids=["missing", "extra"])
def test_set_kernel_args_with_the_wrong_number_of_arguments_is_refused_naming_the_parameters(s, args):
    x = labkit.to_device(np.zeros(N, np.float32))
    g = _captured(s, x)
    with g.instantiate() as ex:
        with pytest.raises(TypeError, match=rf"^add_one\(x\) takes 1 argument, got {len(args)}: "
                                            r"pass x after the grid and block"):
            ex.set_kernel_args(0, w.add_one, 4, 256, *[x for _ in args])
        ex.launch(s)                          # refused at the call: the node runs as captured
        s.synchronize()
    assert x.copy_to_host()[0] == 2
    g.close()


def test_set_kernel_args_with_a_number_where_the_kernel_was_captured_with_an_array_is_refused(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    g = _captured(s, x)
    with g.instantiate() as ex:
        with pytest.raises(TypeError, match=r"^add_one\(x\): x was captured as a 1-D array, got "
                                            r"a number\. Pass arguments of the kinds"):
            ex.set_kernel_args(0, w.add_one, 4, 256, 3.0)
        with pytest.raises(TypeError, match=r"^add_one\(x\): x was captured as a 1-D array, got "
                                            r"a 2-D array"):
            g.set_kernel_args(0, w.add_one, 4, 256, labkit.to_device(np.zeros((2, 4), np.float32)))
    g.close()


def test_set_kernel_args_accepts_another_array_of_the_captured_kind(s):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    g = _captured(s, x)
    with g.instantiate() as ex:
        ex.set_kernel_args(0, w.add_one, 4, 256, y)
        ex.launch(s)
        s.synchronize()
    assert y.copy_to_host()[0] == 1 and x.copy_to_host()[0] == 1
    g.close()


def test_a_nested_capture_on_the_same_stream_says_to_end_the_outer_one_and_leaves_it_working(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    w.chain(1, x, s)
    with labkit.capture(s) as outer:
        w.add_one[4, 256, s](x)
        with pytest.raises(labkit.CudaError, match=r"^cudaStreamBeginCapture: this stream is "
                                                   r"already capturing") as ei:
            with labkit.capture(s):
                pass
        w.add_one[4, 256, s](x)
    assert ei.value.code == 401
    assert "end the outer capture first" in ei.value.hint and "another labkit.Stream" in ei.value.hint
    with outer.graph as g, g.instantiate() as ex:
        assert len(g) == 2
        ex.launch(s)
        s.synchronize()
    assert x.copy_to_host()[0] == 3


def test_synchronize_on_a_closed_stream_says_it_was_closed():
    s = labkit.Stream()
    s.close()
    with pytest.raises(ValueError, match=r"^this stream was closed \(by close\(\) or the end of "
                                         r"its with block\): make a new one"):
        s.synchronize()
    with pytest.raises(ValueError, match=r"^this stream was closed"):
        s.is_capturing()


def test_a_launch_on_a_host_array_inside_a_capture_is_900_naming_numbas_temporary_buffer(s):
    """numba allocates a temporary device buffer for a numpy argument; on a capturing stream
    that is refused (CUDA's 900, or cuda.core's own refusal, which labkit reports as 900)."""
    x = labkit.to_device(np.zeros(N, np.float32))
    w.add_one[4, 256, s](x)            # compiled outside the capture
    s.synchronize()
    with pytest.raises(labkit.CudaError, match=r"^launching add_one on a host array \(numba "
                                               r"would allocate a temporary device buffer for "
                                               r"it\): cudaErrorStreamCaptureUnsupported \(900\)"):
        with labkit.capture(s):
            w.add_one[4, 256, s](np.zeros(N, np.float32))
    assert not s.is_capturing()
    w.add_one[4, 256, s](x)            # the stream works again
    s.synchronize()
    assert x.copy_to_host()[0] == 2
