"""The eager switch (LABKIT_GRAPHS=eager, labkit.eager()): every labkit graph path runs the same
launches without a graph, and labkit.compare_outputs tells graph and eager runs apart."""
import os
import subprocess
import sys

import numpy as np
import pytest

import labkit
from labkit.course import workloads as w

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 1024


def _zeros():
    return labkit.to_device(np.zeros(N, np.float32))


def test_the_environment_variable_turns_the_switch_on_and_eager_false_overrides_it():
    code = ("import labkit; a = labkit._eager.graphs_are_eager()\n"
            "with labkit.eager(False): b = labkit._eager.graphs_are_eager()\n"
            "print(a, b)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, LABKIT_GRAPHS="eager"))
    assert out.stdout.split() == ["True", "False"], out.stderr
    assert not labkit._eager.graphs_are_eager()


def test_an_eager_capture_runs_nothing_in_its_block_and_each_launch_runs_it_once():
    x = _zeros()
    with labkit.Stream() as s, labkit.eager():
        with labkit.capture(s) as cap:
            w.add_one[4, 256, s](x)
            w.scale[4, 256, s](x, np.float32(3.0))
        s.synchronize()
        assert x.copy_to_host()[0] == 0.0          # recorded, as a capture records
        assert isinstance(cap.graph, labkit._eager.EagerGraph) and len(cap.graph) == 2
        ex = cap.graph.instantiate()
        ex.upload(s)
        ex.launch(s)
        ex.launch(s)
        s.synchronize()
    assert x.copy_to_host()[0] == 12.0             # ((0 + 1) * 3 + 1) * 3


def test_graph_and_eager_switch_give_the_same_buffers_for_a_capture_block():
    results = []
    for on in (False, True):
        x = labkit.to_device(np.arange(N, dtype=np.float32))
        with labkit.Stream() as s, labkit.eager(on):
            with labkit.capture(s) as cap:
                w.chain(3, x, s)
            ex = cap.graph.instantiate()
            for _ in range(4):
                ex.launch(s)
            s.synchronize()
            ex.close()
            cap.graph.close()
        results.append(x.copy_to_host())
    np.testing.assert_array_equal(results[0], results[1])


def test_captured_replays_its_capture_but_runs_the_function_again_when_eager():
    seen = []
    with labkit.Stream() as s:
        for on in (False, True):
            calls = []
            x = _zeros()

            def body(st):
                calls.append(1)
                w.add_one[4, 256, st](x)
            step = labkit.captured(body)
            with labkit.eager(on):
                for _ in range(3):
                    step(s)
            s.synchronize()
            seen.append((len(calls), float(x.copy_to_host()[0])))
            step.close()
    assert seen == [(1, 3.0), (3, 3.0)]        # captured once and replayed; or called each time


def test_graph_cache_and_node_updates_work_with_the_switch_on():
    x, y = _zeros(), _zeros()

    def build(size, st):
        with labkit.capture(st) as cap:
            w.add_one[size, 256, st](x)
        return cap.graph
    with labkit.Stream() as s, labkit.eager():
        cache = labkit.GraphCache(build, buckets=[2, 4])
        assert cache.run(3, s) == 4 and cache.run(1, s) == 2
        ex, _ = cache.get(4)
        ex.set_kernel_args(0, w.add_one, 4, 256, y)
        ex.launch(s)
        s.synchronize()
        cache.close()
    want = np.r_[np.full(512, 2.0), np.ones(512)].astype(np.float32)   # 4 blocks, then 2
    np.testing.assert_array_equal(x.copy_to_host(), want)
    np.testing.assert_array_equal(y.copy_to_host(), np.ones(N, np.float32))


def test_an_eager_executable_refuses_a_topology_change_as_cuda_does():
    x = _zeros()
    with labkit.Stream() as s, labkit.eager():
        with labkit.capture(s) as one:
            w.add_one[4, 256, s](x)
        with labkit.capture(s) as two:
            w.add_one[4, 256, s](x)
            w.add_one[4, 256, s](x)
        ex = one.graph.instantiate()
        result = ex.update(two.graph)
        assert not result and result.code == 910
        with pytest.raises(NotImplementedError, match=r"^GraphExec.kernel_node needs a real graph"):
            ex.kernel_node(0, w.add_one, 4, 256, x)


def test_compare_outputs_names_the_buffer_a_frozen_scalar_makes_differ():
    a, b = _zeros(), _zeros()
    t = {"n": 0}

    def reset():
        a.copy_to_device(np.zeros(N, np.float32))
        b.copy_to_device(np.zeros(N, np.float32))
        t["n"] = 0

    def fn(st):
        w.add_one[4, 256, st](a)                  # the same every call
        t["n"] += 1                               # host state: frozen in a graph
        w.saxpy[4, 256, st](b, np.float32(t["n"]), a, b)
    with labkit.Stream() as s:
        report = labkit.compare_outputs(fn, s, {"a": a, "b": b}, setup=reset, calls=3)
        assert not report.ok and report.mismatched == ["b"]
        assert "b       NO" in str(report)
        same = labkit.compare_outputs(lambda st: w.add_one[4, 256, st](a), s, {"a": a},
                                      setup=reset, calls=3)
        assert same.ok


def test_compare_outputs_needs_an_output():
    with labkit.Stream() as s:
        with pytest.raises(ValueError, match=r"^outputs must name at least one device array"):
            labkit.compare_outputs(lambda st: None, s, {})


def test_captured_capture_captures_without_launching_and_does_nothing_when_eager():
    x = _zeros()
    with labkit.Stream() as s:
        step = labkit.captured(lambda st: w.add_one[4, 256, st](x))
        step.capture(s)
        s.synchronize()
        assert x.copy_to_host()[0] == 0.0 and len(step.graph) == 1
        step(s)
        step.close()
        with labkit.eager():
            step.capture(s)
            assert step.exec is None
            step(s)
        s.synchronize()
    assert x.copy_to_host()[0] == 2.0


def test_a_graphed_callable_runs_its_function_on_the_static_inputs_with_the_switch_on():
    calls = []

    def fn(st, a):
        calls.append(1)
        w.add_one[4, 256, st](a)
        return a
    g = labkit.graphed(fn, np.zeros(N, np.float32), warmup=1)
    made = len(calls)                                   # the warm-up and the capture
    out = g(np.full(N, 5.0, np.float32))
    assert len(calls) == made and out.copy_to_host()[0] == 6.0    # a replay
    with labkit.eager():
        out = g(np.full(N, 7.0, np.float32))
    assert len(calls) == made + 1 and out.copy_to_host()[0] == 8.0   # fn itself
