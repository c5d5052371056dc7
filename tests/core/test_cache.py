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


def test_updating_graph_updates_same_topology_and_reinstantiates_on_change(stream):
    x, y = (labkit.to_device(np.zeros(N, np.float32)) for _ in range(2))
    ug = UpdatingGraph(max_failures=2)
    assert ug.refresh(_capture_chain(stream, x, 2)) == "instantiated"
    assert ug.refresh(_capture_chain(stream, y, 2)) == "updated"
    ug.launch(stream)
    stream.synchronize()
    assert np.all(y.copy_to_host() == 2) and np.all(x.copy_to_host() == 0)
    assert ug.refresh(_capture_chain(stream, x, 3)) == "reinstantiated"
    ug.launch(stream)
    stream.synchronize()
    assert np.all(x.copy_to_host() == 3)
    assert ug.stats() == dict(updates=1, failed_updates=1, instantiations=2,
                              consecutive_failures=1, updates_enabled=True)
    ug.close()


def test_updating_graph_stops_trying_updates_after_repeated_failures(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    ug = UpdatingGraph(max_failures=2)
    ug.refresh(_capture_chain(stream, x, 1))
    assert [ug.refresh(_capture_chain(stream, x, k)) for k in (2, 3, 3, 3)] == ["reinstantiated"] * 4
    # two failures in a row switched updates off: the later same-topology graphs were not tried
    assert ug.failed_updates == 2 and ug.updates == 0 and not ug.updates_enabled
    assert ug.instantiations == 5
    ug.close()


def test_a_success_resets_the_failure_count(stream):
    x = labkit.to_device(np.zeros(N, np.float32))
    ug = UpdatingGraph(max_failures=2)
    ug.refresh(_capture_chain(stream, x, 1))
    outcomes = [ug.refresh(_capture_chain(stream, x, k)) for k in (2, 2, 3, 3)]
    assert outcomes == ["reinstantiated", "updated", "reinstantiated", "updated"]
    assert ug.updates_enabled and ug.consecutive_failures == 0
    ug.close()


def test_updating_graph_refuses_launch_before_refresh(stream):
    with pytest.raises(RuntimeError, match=r"^nothing to launch yet"):
        UpdatingGraph().launch(stream)
