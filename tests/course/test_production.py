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


@pytest.fixture(scope="module")
def spec():
    from labkit.course import decoder as dec
    s = labkit.Stream()
    m = dec.make_model(seed=0, max_seq=48, n_layers=2)
    sp = pr.Speculative(m, s, pr.guesses(m, 1, wrong=0.3, seed=2), k_max=3)
    yield m, sp
    sp.close()


@pytest.mark.parametrize("variant", pr.SPEC_VARIANTS)
def test_every_speculative_variant_makes_numpys_greedy_tokens(spec, variant):
    from labkit.course import decoder as dec
    m, sp = spec
    want = dec.reference_generate(m, 1, 30)
    toks, rounds, steps = sp.run(variant, 30)
    np.testing.assert_array_equal(toks, want)
    # some guesses were accepted (fewer rounds than tokens), some refused (more than the least)
    assert -(-30 // (sp.k_max + 1)) < rounds < 30
    assert steps >= rounds * 2


def test_padding_runs_more_verify_steps_than_a_graph_per_length_in_as_many_rounds(spec):
    _, sp = spec
    runs = {v: sp.run(v, 30) for v in pr.SPEC_VARIANTS}
    (_, r_a, s_a), (_, r_b, s_b), (_, r_c, s_c) = (runs[v] for v in pr.SPEC_VARIANTS)
    assert r_a == r_b == r_c
    assert s_b == r_b * (sp.k_max + 1) and s_a == s_c < s_b


def test_wrong_guesses_are_refused_not_emitted():
    from labkit.course import decoder as dec
    s = labkit.Stream()
    m = dec.make_model(seed=1, max_seq=24, n_layers=1)
    sp = pr.Speculative(m, s, pr.guesses(m, 1, wrong=1.0), k_max=2)
    try:
        want = dec.reference_generate(m, 1, 12)
        for v in pr.SPEC_VARIANTS:
            toks, rounds, steps = sp.run(v, 12)
            np.testing.assert_array_equal(toks, want)
            assert rounds == 12 and steps == (36 if v == pr.SPEC_VARIANTS[1] else 24)
        with pytest.raises(ValueError, match=r"^n_tokens must be 1\.\.21"):
            sp.run(pr.SPEC_VARIANTS[0], 22)
        with pytest.raises(ValueError, match=r"^variant must be one of"):
            sp.run("greedy", 4)
    finally:
        sp.close()


@pytest.mark.skipif(labkit.backend != "sim", reason="compares with numba's CUDA simulator")
def test_the_speculative_kernels_equal_their_references():
    table = np.arange(20, dtype=np.int32)[::-1].copy()
    hist = np.array([19, 18, 5, 16, 15, 14, 13, 12], np.int32)
    cases = [
        (pr.propose, (table, np.array([1], np.int32), np.array([2, 9], np.int32),
                      np.zeros(1, np.int32), np.zeros(3, np.int32), np.uint64(0))),
        (pr.feed, (np.array([7, -1, 4], np.int32), 2, np.array([3], np.int32),
                   np.zeros(1, np.int32), np.array([9], np.int32))),
        (pr.feed, (np.array([7, -1, 4], np.int32), 1, np.array([3], np.int32),
                   np.zeros(1, np.int32), np.array([9], np.int32))),
        (pr.accept, (np.array([18, 17, 16], np.int32), np.array([1], np.int32), hist,
                     np.zeros(1, np.int32), np.zeros(1, np.int32), np.array([3, 9], np.int32),
                     np.zeros(2, np.int32), 0, np.uint64(0))),
    ]
    for kern, args in cases:
        a = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        b = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        kern.reference((1, 1, 1), (1, 1, 1), *a)
        kern.simulate(1, 1, *b)
        for x, y in zip(a, b):
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y)
    # accept: guess 0 agrees with history[1], guess 1 does not: one accepted, then the pick
    a = [v.copy() if isinstance(v, np.ndarray) else v for v in cases[3][1]]
    pr.accept.reference((1, 1, 1), (1, 1, 1), *a)
    assert a[3][0] == 3 and a[4][0] == 5 and list(a[5]) == [2, 9] and list(a[6]) == [1, 4]
