"""Notebook 11's helpers: vLLM's size list, what each capture strategy costs, the generator's
kernels equal their references, the address check, and two ranks capturing."""
import labkit
import numpy as np
import pytest

from labkit.course import production as pr


def test_the_capture_sizes_follow_vllms_rule():
    s = pr.capture_sizes(256)
    assert s[:5] == [1, 2, 4, 8, 16] and s[-1] == 512 and len(s) == 51
    assert all(b - a == 8 for a, b in zip(s[3:], s[4:]) if b < 256)
    assert all(b - a == 16 for a, b in zip(s, s[1:]) if a >= 256)
    assert pr.capture_sizes(8)[-1] == 16 and pr.capture_sizes(1000)[-1] == 512


def test_a_pool_filled_largest_first_holds_only_the_largest_buffer():
    s, sizes, width = labkit.Stream(), [1, 4, 8, 16], 256
    got = {}
    for strategy in pr.STRATEGIES:
        graphs, mem, startup = pr.capture_all(sizes, strategy, s, width=width, layers=2)
        got[strategy] = mem
        assert sorted(graphs) == sizes and startup > 0
        for ex, _ in graphs.values():
            ex.close()
    assert got["a buffer per graph"] == got["one pool, smallest first"] == 4 * width * sum(sizes)
    assert got["one pool, largest first"] == 4 * width * max(sizes)
    with pytest.raises(ValueError, match=r"^strategy must be one of"):
        pr.capture_all(sizes, "lazily", s)


@pytest.mark.skipif(labkit.backend != "sim", reason="compares with numba's CUDA simulator")
def test_the_generator_kernels_equal_their_references():
    for kern, args in ((pr.uniform_at, (np.zeros(70, np.float32), 5, 9)),
                       (pr.uniform_from_state, (np.zeros(70, np.float32),
                                                np.array([5, 9], np.uint64))),
                       (pr.advance_state, (np.array([5, 9], np.uint64), 70)),
                       (pr.add_rows, (np.zeros(70, np.float32), 50))):
        grid, block = (1, 1, 1), (128, 1, 1)
        if kern is pr.advance_state:
            grid, block = (1, 1, 1), (1, 1, 1)
        a = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        b = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        kern.reference(grid, block, *a)
        kern.simulate(grid[0], block[0], *b)
        for x, y in zip(a, b):
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(pr.uniform_reference(5, 9, 70)[:3],
                                  pr.uniform_reference(5, 0, 80)[9:12])


def test_the_address_check_names_a_moved_input_and_passes_the_captured_one():
    x = labkit.to_device(np.zeros(8, np.float32))
    guard = pr.AddressCheck(x=x)
    guard.check(x=x)
    with pytest.raises(RuntimeError, match=r"^the graph would read stale memory: input x "
                                           r"\(captured at 0x[0-9a-f]+, now at 0x[0-9a-f]+\)"):
        guard.check(x=labkit.to_device(np.zeros(8, np.float32)))
    with pytest.raises(ValueError, match=r"^not captured: \['y'\]"):
        guard.check(y=x)


def test_only_warm_up_and_thread_local_capture_let_both_ranks_capture():
    ok = {(w, m): all(v == "ok" for v in pr.ranks_capture(m, w).values())
          for w in (False, True) for m in ("global", "thread_local")}
    assert ok == {(False, "global"): False, (False, "thread_local"): False,
                  (True, "global"): False, (True, "thread_local"): True}
