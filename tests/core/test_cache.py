"""GraphCache: hits, misses, LRU eviction that really frees, bucketing, bad shapes; UpdatingGraph."""
import labkit  # noqa: F401  (before numba.cuda)
import numpy as np
import pytest

from labkit import GraphCache
from labkit.cache import UpdatingGraph
from tests.kernels import BLOCK, GRID, N, add_one


@pytest.fixture
def stream():
    s = labkit.Stream()
    yield s
    s.close()


def _builder(x, built):
    """A build function that records which sizes it captured; size launches of add_one."""
    def build(size, stream):
        built.append(size)
        with labkit.capture(stream) as cap:
            for _ in range(size if isinstance(size, int) else size[0]):
                add_one[GRID, BLOCK, stream](x)
        return cap.graph
    return build


def test_exact_shapes_count_hits_and_misses(stream):
    x, built = labkit.to_device(np.zeros(N, np.float32)), []
    cache = GraphCache(build=_builder(x, built))
    for size in [1, 2, 1, 1, 3, 2]:
        assert cache.run(size, stream) == size
    stream.synchronize()
    assert built == [1, 2, 3]
    s = cache.stats()
    assert (s["hits"], s["misses"], s["evictions"], s["entries"]) == (3, 3, 0, 3)
    assert s["padded_elements"] == 0 and cache.hit_rate == pytest.approx(0.5)
    assert np.all(x.copy_to_host() == 10)      # 1+2+1+1+3+2 launches of add_one ran
    cache.close()


def test_buckets_pad_up_to_the_next_captured_size(stream):
    x, built = labkit.to_device(np.zeros(N, np.float32)), []
    cache = GraphCache(build=_builder(x, built), buckets=[4, 1, 2, 8])
    assert [cache.get(n)[1] for n in [1, 3, 4, 5, 8, 2]] == [1, 4, 4, 8, 8, 2]
    assert built == [1, 4, 8, 2]
    s = cache.stats()
    assert s["requested_elements"] == 23 and s["padded_elements"] == 1 + 3
    assert s["padding_fraction"] == pytest.approx(4 / 27)
    cache.close()


def test_tuple_shapes_bucket_the_first_dimension(stream):
    x, built = labkit.to_device(np.zeros(N, np.float32)), []
    cache = GraphCache(build=_builder(x, built), buckets=[2, 4])
    assert cache.get((3, 5))[1] == (4, 5)
    assert cache.stats()["padded_elements"] == 5
    cache.close()


def test_lru_eviction_closes_executable_and_graph(stream):
    x, built = labkit.to_device(np.zeros(N, np.float32)), []
    cache = GraphCache(build=_builder(x, built), max_entries=2)
    ex1, _ = cache.get(1)
    graph1 = cache._entries[1][1]
    cache.get(2)
    cache.get(1)                  # 1 is now the most recently used: 2 goes next
    ex3, _ = cache.get(3)
    assert cache.keys() == [1, 3] and cache.stats()["evictions"] == 1
    ex2_gone = cache.get(2)       # a miss again: 1 is evicted now
    assert cache.keys() == [3, 2] and built == [1, 2, 3, 2]
    assert ex1.handle is None and graph1.handle is None      # destroyed, not just forgotten
    assert len(cache) == 2 and ex2_gone[0].handle is not None
    cache.close()
    assert len(cache) == 0 and ex3.handle is None


def test_every_evicted_executable_is_destroyed_in_the_runtime(stream, monkeypatch):
    x, built = labkit.to_device(np.zeros(N, np.float32)), []
    destroyed = []
    real = labkit.rt.cudaGraphExecDestroy

    def spy(h):
        destroyed.append(int(h))
        return real(h)
    monkeypatch.setattr(labkit.rt, "cudaGraphExecDestroy", spy)
    cache = GraphCache(build=_builder(x, built), max_entries=3)
    handles = [int(cache.get(n)[0].handle) for n in range(1, 8)]
    assert len(cache) == 3 and cache.stats()["evictions"] == 4
    assert destroyed == handles[:4]
    cache.close()
    assert sorted(destroyed) == sorted(handles)


def test_a_batch_larger_than_the_largest_bucket_says_what_to_do(stream):
    cache = GraphCache(build=_builder(labkit.to_device(np.zeros(N, np.float32)), []),
                       buckets=[1, 2, 4])
    with pytest.raises(ValueError, match=r"^batch size 5 is larger than the largest captured "
                                         r"bucket \(4\): add a bucket of at least 5"):
        cache.get(5)
    assert cache.stats()["misses"] == 0 and cache.stats()["requested_elements"] == 0


@pytest.mark.parametrize("bad", [0, -3, (2, 0), ()])
def test_non_positive_shapes_are_refused(stream, bad):
    cache = GraphCache(build=_builder(labkit.to_device(np.zeros(N, np.float32)), []))
    with pytest.raises(ValueError, match=r"^cannot serve shape .*every dimension must be a positive int"):
        cache.get(bad)


@pytest.mark.parametrize("bad", [2.0, "4", True, None])
def test_shapes_of_the_wrong_type_are_refused(stream, bad):
    cache = GraphCache(build=_builder(labkit.to_device(np.zeros(N, np.float32)), []))
    with pytest.raises(TypeError, match=r"^a shape is a positive int"):
        cache.get(bad)


def test_build_must_return_a_graph(stream):
    cache = GraphCache(build=lambda size, s: None)
    with pytest.raises(TypeError, match=r"^build\(3, stream\) returned NoneType"):
        cache.get(3)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(buckets=[]), r"^buckets must be positive"),
    (dict(buckets=[0, 2]), r"^buckets must be positive"),
    (dict(max_entries=0), r"^max_entries must be at least 1"),
])
def test_bad_configuration_is_refused(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        GraphCache(build=lambda size, s: None, **kwargs)


# ---------------------------------------------------------------------- UpdatingGraph

def _capture_chain(stream, x, k):
    with labkit.capture(stream) as cap:
        for _ in range(k):
            add_one[GRID, BLOCK, stream](x)
    return cap.graph


def _chain(x, k):
    """record(stream) for a step of k add_one kernels on x."""
    def record(stream):
        for _ in range(k):
            add_one[GRID, BLOCK, stream](x)
    return record


def test_refresh_updates_same_topology_and_reinstantiates_on_change(stream):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    ug = UpdatingGraph()
    assert ug.refresh(_capture_chain(stream, x, 2)) == "instantiated"
    assert ug.refresh(_capture_chain(stream, y, 2)) == "updated"
    ug.launch(stream)
    stream.synchronize()
    assert np.all(y.copy_to_host() == 2) and np.all(x.copy_to_host() == 0)
    assert ug.refresh(_capture_chain(stream, x, 3)) == "reinstantiated"
    ug.launch(stream)
    stream.synchronize()
    assert np.all(x.copy_to_host() == 3)
    assert (ug.updates, ug.failed_updates, ug.instantiations) == (1, 1, 2)
    ug.close()


def test_warm_up_runs_the_first_step_eagerly_then_captures_once_it_repeats(stream):
    # llama.cpp's current rule: a graph is captured only when the same step comes twice in a row
    x = labkit.to_device(np.zeros(N, np.float32))
    captured = []

    def record(st):
        captured.append(st.is_capturing())
        add_one[GRID, BLOCK, st](x)

    with UpdatingGraph() as ug:
        assert ug.rule == "warm-up"
        assert [ug.run(record, "one kernel", stream) for _ in range(5)] == (
            ["eager", "instantiated"] + ["replayed"] * 3)
        stream.synchronize()
    assert captured == [False, True]           # eager once, recorded once inside the capture
    assert np.all(x.copy_to_host() == 5)


def test_warm_up_runs_a_changed_step_eagerly_and_captures_it_when_it_repeats(stream):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    steps = [(x, 2), (x, 2), (y, 2), (y, 2), (y, 2), (y, 3), (y, 3)]
    with UpdatingGraph() as ug:
        out = [ug.run(_chain(buf, k), (id(buf), k), stream) for buf, k in steps]
        stream.synchronize()
        assert out == ["eager", "instantiated",        # warm-up, then the first capture
                       "eager", "updated", "replayed",  # another buffer: same topology, updated
                       "eager", "reinstantiated"]       # another kernel count: a new topology
        assert ug.stats() == dict(replays=1, updates=1, failed_updates=1, instantiations=2,
                                  eager_steps=3, consecutive_changed=0, using_graphs=True,
                                  warmed_up=True, disabled=False)
    assert np.all(x.copy_to_host() == 4) and np.all(y.copy_to_host() == 12)


def test_warm_up_never_captures_a_step_that_changes_every_time(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    ks = [2, 3] * 4
    with UpdatingGraph() as ug:
        out = [ug.run(_chain(x, k), k, stream) for k in ks]
        stream.synchronize()
        assert out == ["eager"] * len(ks)
        assert ug.instantiations == 0 and ug.exec is None and not ug.using_graphs
    assert np.all(x.copy_to_host() == sum(ks))


def test_the_first_rule_turns_graphs_off_for_good_after_max_changed_changes_in_a_row(stream):
    # llama.cpp's rule until early 2026: every change is captured; after N in a row, no graphs
    # again, even once the step is stable
    x = labkit.to_device(np.zeros(N, np.float32))
    ks = [2, 2, 3, 2, 3, 3, 3, 3]
    with UpdatingGraph(max_changed=2) as ug:
        assert ug.rule == "off after 2 changes"
        out = [ug.run(_chain(x, k), k, stream) for k in ks]
        stream.synchronize()
        assert out == ["instantiated", "replayed",
                       "reinstantiated", "reinstantiated",     # changes 1 and 2: captured
                       "eager", "eager", "eager", "eager"]     # off for good, stable or not
        assert ug.disabled and ug.eager_steps == 4
    assert np.all(x.copy_to_host() == sum(ks))


def test_after_a_burst_of_changes_only_the_warm_up_rule_comes_back_to_graphs(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    ks = [2, 3, 4, 5, 6] + [3] * 6                 # a prompt's changing steps, then decode
    outs = {}
    for rule in (None, 4):
        with UpdatingGraph(max_changed=rule) as ug:
            outs[rule] = [ug.run(_chain(x, k), k, stream) for k in ks]
            stream.synchronize()
    assert outs[None][-4:] == ["replayed"] * 4
    assert outs[4][-6:] == ["eager"] * 6
    assert np.all(x.copy_to_host() == 2 * sum(ks))


def test_eager_steps_capture_nothing(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    seen = []

    def record_k(k):
        def record(st):
            seen.append((k, st.is_capturing()))
            add_one[GRID, BLOCK, st](x)
        return record

    with UpdatingGraph(max_changed=1) as ug:
        for k in (1, 2, 3):
            ug.run(record_k(k), k, stream)
        stream.synchronize()
    assert seen == [(1, True), (2, True), (3, False)]


@pytest.mark.parametrize("bad", [0, -1, True])
def test_updating_graph_refuses_a_max_changed_below_one(bad):
    with pytest.raises(ValueError, match=r"^max_changed must be at least 1 \(or None"):
        UpdatingGraph(max_changed=bad)


def test_updating_graph_refuses_an_unhashable_key(stream):
    with UpdatingGraph() as ug, pytest.raises(TypeError, match=r"unhashable"):
        ug.run(lambda st: None, [1, 2], stream)


def test_updating_graph_refuses_launch_before_refresh(stream):
    with pytest.raises(RuntimeError, match=r"^nothing to launch yet"):
        UpdatingGraph().launch(stream)
