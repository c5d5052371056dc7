"""Kernel-node parameters built once: node update handles, graph node updates, explicit adds."""
import numpy as np
import pytest

import labkit
from labkit import explicit
from labkit.course.workloads import add_one, chain, scale

GRID, BLOCK, N = 4, 256, 1024


@pytest.fixture
def s():
    st = labkit.Stream()
    yield st
    st.close()


def _exec(s, buf, k=2):
    chain(1, buf, s)
    s.synchronize()
    with labkit.capture(s) as cap:
        chain(k, buf, s)
    return cap.graph, cap.graph.instantiate()


def test_a_node_handle_rebinds_only_its_node_and_switches_back(s):
    x, y, z = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(3))
    g, ex = _exec(s, x)
    h = ex.kernel_node(0, add_one, GRID, BLOCK, y)
    h()                              # node 0 -> y, node 1 stays on x
    ex.launch(s)
    h(z)                             # node 0 -> z
    ex.launch(s)
    h(y)                             # back to y: the block built before
    ex.launch(s)
    s.synchronize()
    assert x.copy_to_host()[0] == 1 + 3 and y.copy_to_host()[0] == 2 and z.copy_to_host()[0] == 1
    ex.close(); g.close()


def test_a_node_handle_refuses_another_kind_of_array_and_leaves_the_node_as_it_was(s):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    g, ex = _exec(s, x)
    h = ex.kernel_node(0, add_one, GRID, BLOCK, y)
    with pytest.raises(TypeError, match=r"argument 0 was prepared with dtype float32 and got float64"):
        h(labkit.to_device(np.zeros(N, np.float64)))
    ex.launch(s)
    s.synchronize()
    assert x.copy_to_host()[0] == 1 + 2 and y.copy_to_host()[0] == 0
    ex.close(); g.close()


def test_set_kernel_args_alternating_buffers_runs_the_last_one_set(s):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    g, ex = _exec(s, x, k=1)
    for buf in (y, x, y):
        ex.set_kernel_args(0, add_one, GRID, BLOCK, buf)
    ex.launch(s)
    s.synchronize()
    assert x.copy_to_host()[0] == 1 and y.copy_to_host()[0] == 1
    ex.close(); g.close()


def test_a_handle_of_a_closed_executable_is_refused(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    g, ex = _exec(s, x)
    h = ex.kernel_node(0, add_one, GRID, BLOCK, x)
    ex.close()
    with pytest.raises(ValueError, match="executable graph was closed"):
        h()
    g.close()


def test_a_graph_node_set_before_instantiation_runs_the_new_arguments(s):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    chain(1, x, s)
    with labkit.capture(s) as cap:
        chain(2, x, s)
    cap.graph.set_kernel_args(1, add_one, GRID, BLOCK, y)
    with cap.graph.instantiate() as ex:
        ex.launch(s)
        s.synchronize()
    assert x.copy_to_host()[0] == 2 and y.copy_to_host()[0] == 1
    cap.graph.close()


def test_an_explicit_chain_replays_exactly_and_mixed_node_kinds_work(s):
    x = labkit.to_device(np.ones(N, np.float32))
    g = explicit.new_graph()
    a = explicit.add_kernel_node(g, [], scale, GRID, BLOCK, x, np.float32(3))
    p = add_one.params(GRID, BLOCK, x)
    b = explicit.add_kernel_node(g, [a], p)
    explicit.add_kernel_node(g, [b], p)
    assert g.node_kinds() == ["kernel"] * 3 and g.edges == [(0, 1), (1, 2)]
    with g.instantiate() as ex:
        ex.launch(s)
        s.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), np.full(N, 5, np.float32))
    g.close()


def test_a_launch_params_with_a_grid_as_well_is_refused():
    x = labkit.to_device(np.ones(N, np.float32))
    g = explicit.new_graph()
    with pytest.raises(TypeError, match="either a LaunchParams, or a kernel"):
        explicit.add_kernel_node(g, [], add_one.params(GRID, BLOCK, x), GRID, BLOCK)
    g.close()


def test_building_the_chain_explicitly_costs_no_more_host_time_than_capturing_it(s):
    x = labkit.to_device(np.zeros(N, np.float32))
    chain(2, x, s)
    explicit.chain_graph(add_one, 2, GRID, BLOCK, x).close()
    s.synchronize()

    def best(fn, times=3):
        out = []
        for _ in range(times):
            t0 = labkit.host_us()
            fn().close()
            out.append(labkit.host_us() - t0)
        return min(out)

    def captured():
        with labkit.capture(s) as cap:
            chain(200, x, s)
        return cap.graph
    built = best(lambda: explicit.chain_graph(add_one, 200, GRID, BLOCK, x))
    assert built <= best(captured), built


def test_prebuilt_blocks_set_on_a_node_take_turns(s):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    g, ex = _exec(s, x, k=1)
    px, py = add_one.params(GRID, BLOCK, x), add_one.params(GRID, BLOCK, y)
    for p in (py, px, py):
        ex.set_kernel_params(0, p)
        ex.launch(s)
    s.synchronize()
    assert x.copy_to_host()[0] == 1 + 1 and y.copy_to_host()[0] == 2
    ex.close(); g.close()
