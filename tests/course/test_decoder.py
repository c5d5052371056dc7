"""The capstone decoder: each kernel's numpy reference equals the kernel's own code (numba's
CUDA simulator), and eager, graph and numpy decodes produce the same tokens."""
import numpy as np
import pytest

import labkit
from labkit.course import decoder as dec

TPB = dec.TPB
RNG = np.random.default_rng(7)


def _both(kern, grid, block, *args):
    """Run the reference and the simulated kernel on copies of ``args``; return both copies."""
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    b = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    kern.reference(labkit._kernel._dims(grid), labkit._kernel._dims(block), *a)
    kern.simulate(grid, block, *b)
    return a, b


def _assert_same(a, b):
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_matvec_reference_equals_kernel():
    W, x, y = RNG.standard_normal((5, 70)), RNG.standard_normal(70), np.zeros(5)
    _assert_same(*_both(dec.matvec, 5, TPB, W, x, y))


def test_rmsnorm_reference_equals_kernel():
    x, w, out = RNG.standard_normal(70), RNG.standard_normal(70), np.zeros(70)
    _assert_same(*_both(dec.rmsnorm, 1, TPB, x, w, out))


def test_embed_reference_equals_kernel():
    E, Pe = RNG.standard_normal((10, 8)), RNG.standard_normal((6, 8))
    tok, pos = np.array([3], np.int32), np.array([2], np.int32)
    _assert_same(*_both(dec.embed, 1, TPB, E, Pe, tok, pos, np.zeros(8)))


def test_store_kv_reference_equals_kernel():
    k, v = RNG.standard_normal(8), RNG.standard_normal(8)
    kc, vc, pos = np.zeros((6, 8)), np.zeros((6, 8)), np.array([4], np.int32)
    a, b = _both(dec.store_kv, 1, TPB, k, v, kc, vc, pos)
    _assert_same(a, b)
    assert np.array_equal(a[2][4], k) and not a[2][3].any()


@pytest.mark.parametrize("p", [0, 3, 5])
def test_attention_kernels_reference_equal_kernel(p):
    H, S, D = 2, 6, 8
    q, kc, vc = RNG.standard_normal(D), RNG.standard_normal((S, D)), RNG.standard_normal((S, D))
    pos = np.array([p], np.int32)
    _assert_same(*_both(dec.attn_scores, H, TPB, q, kc, pos, np.zeros((H, S))))
    scores = np.where(np.arange(S) <= p, RNG.standard_normal((H, S)), -1e30)
    a, b = _both(dec.softmax, H, TPB, scores, pos, np.zeros((H, S)))
    _assert_same(a, b)
    np.testing.assert_allclose(a[2].sum(axis=1), 1.0)
    probs = a[2]
    _assert_same(*_both(dec.attn_out, D, TPB, probs, vc, pos, np.zeros(D)))


def test_elementwise_kernels_reference_equal_kernel():
    _assert_same(*_both(dec.residual_add, 2, TPB, RNG.standard_normal(70), RNG.standard_normal(70)))
    _assert_same(*_both(dec.silu, 2, TPB, RNG.standard_normal(70)))
    _assert_same(*_both(dec.advance, 1, 1, np.array([5], np.int32)))


def test_argmax_reference_equals_kernel_and_takes_first_of_ties():
    logits = RNG.standard_normal(150)
    logits[[40, 90]] = 10.0   # a tie: numpy's argmax takes the first
    a, b = _both(dec.argmax, 1, TPB, logits, np.zeros(1, np.int32), np.zeros(8, np.int32),
                 np.array([2], np.int32))
    _assert_same(a, b)
    assert a[1][0] == 40 and a[2][2] == 40


def test_eager_graph_and_numpy_decode_give_identical_tokens():
    m = dec.make_model(seed=3)
    with labkit.Stream() as s:
        ref = dec.reference_generate(m, 5, 12)
        eager = dec.generate_eager(m, 5, 12, s)
        graph = dec.generate_graph(m, 5, 12, s)
    assert eager.kernels_per_token == m.cfg.kernels_per_token == 65
    assert np.array_equal(eager.tokens, ref) and np.array_equal(graph.tokens, ref)
    assert len(set(ref.tolist())) > 3, "a degenerate decode would prove little"


def test_graph_replays_read_the_position_from_device_memory():
    m = dec.make_model(seed=1)
    with labkit.Stream() as s:
        ex = dec.capture_step(m, s)
        first = dec.generate_graph(m, 2, 6, s, exec_=ex)
        again = dec.generate_graph(m, 2, 6, s, exec_=ex)   # the same executable, reused
    assert np.array_equal(first.tokens, dec.reference_generate(m, 2, 6))
    assert np.array_equal(again.tokens, first.tokens)


def test_too_many_tokens_is_refused():
    m = dec.make_model(max_seq=8)
    with pytest.raises(ValueError, match=r"^n_tokens must be 1\.\.max_seq \(8\)"):
        dec.reference_generate(m, 0, 9)


def test_load_prompt_reference_equals_kernel():
    prompt, pos, tok = np.array([4, 9, 2, 7], np.int32), np.array([2], np.int32), np.zeros(1, np.int32)
    a, b = _both(dec.load_prompt, 1, 1, prompt, pos, tok)
    _assert_same(a, b)
    assert a[2][0] == 2


def test_a_prefilled_prompt_then_eager_or_graph_decode_gives_numpys_tokens():
    m = dec.make_model(seed=3)
    prompt = [5, 17, 42, 99]
    with labkit.Stream() as s:
        ref = dec.reference_generate(m, prompt, 10)
        eager = dec.generate_eager(m, prompt, 10, s)
        graph = dec.generate_graph(m, prompt, 10, s)
    assert np.array_equal(eager.tokens, ref) and np.array_equal(graph.tokens, ref)
    # the prompt matters: from its last token alone the tokens differ
    assert not np.array_equal(ref, dec.reference_generate(m, prompt[-1], 10))
    # time to first token is the (eager) prefill and the first step; the gaps are the rest
    assert graph.prefill_us > 0 and graph.ttft_us == graph.prefill_us + graph.token_us[0]
    assert len(graph.inter_token_us) == 9


def test_a_prompt_and_its_tokens_must_fit_the_kv_cache():
    m = dec.make_model(max_seq=8)
    with pytest.raises(ValueError, match=r"less the prompt's 3 prefilled tokens, got 6"):
        dec.reference_generate(m, [1, 2, 3, 4], 6)


def test_the_what_if_prices_exactly_the_steps_kernels():
    from labkit.course.decoder import whatif
    m = dec.make_model(seed=0)
    rows = whatif.step_bytes(m.cfg, 8)
    assert [r[0] for r in rows] == [k.name for k, *_ in dec.launches(m.cfg, m.dev, m.state)] + ["advance"]
    # the real arrays' bytes, argument for argument
    real = [sum(a.nbytes for a in args if hasattr(a, "nbytes"))
            for _, _, _, args in dec.launches(m.cfg, m.dev, m.state)]
    assert [r[2] for r in rows[:-1]] == real


def test_a_7b_class_step_reads_its_weights_once_in_bf16():
    from labkit.course.decoder import whatif
    c = whatif.SEVEN_B
    p = whatif.price(c, 2, "7B")
    params = c.n_layers * (4 * c.d_model ** 2 + 2 * c.d_model * c.d_ff) + 2 * c.vocab * c.d_model
    assert 6.5e9 < params < 7e9
    assert 2 * params / 1e9 < p.gb < 1.1 * 2 * params / 1e9   # weights, plus the KV cache
    assert p.kernels == 15 * c.n_layers + 5
    # a graph cannot beat the GPU's own time, and numba's launches outlast it
    assert p.host_us["numba"] > p.gpu_us and p.speedup["numba"] > 1


def test_the_published_llama_cpp_band_is_read_from_notebook_07s_reference_row():
    from labkit.course import reference
    from labkit.course.decoder import whatif
    lo, hi = whatif.published_gain()
    assert 1.0 < lo < hi
    assert reference.figure("07", whatif.LLAMA_CPP_GAIN) == f"{lo:g}–{hi:g}×"


def test_the_what_if_charges_eager_launches_and_the_graph_the_same_gpu_time():
    """Where the GPU sets the pace of both, the model gives no launch path a gain or a loss
    beyond the graph's own launch: a graph cannot be modelled slower than eager for a GPU gap
    that only it is charged."""
    from labkit._calibration import params
    from labkit.course.decoder import whatif
    P = dict(params())
    p = whatif.price(whatif.SEVEN_B, 2, "7B", P=P)
    gpu_bound = [k for k, h in p.host_us.items() if h < p.gpu_us]
    assert gpu_bound, "a launch path faster than a 7B step's GPU time"
    for k in gpu_bound:
        # eager: the GPU's time and one latency; graph: the same and one graph launch
        want = (p.gpu_us + P["launch_latency_us"]) / (p.graph_launch_us + P["launch_latency_us"]
                                                      + p.gpu_us)
        assert p.speedup[k] == pytest.approx(want)
    # the gap is in the GPU's time, once per kernel, on both sides
    no_gap = whatif.price(whatif.SEVEN_B, 2, "7B", P={**P, "graph_node_gap_us": 0.0})
    assert p.gpu_us - no_gap.gpu_us == pytest.approx(p.kernels * P["graph_node_gap_us"])
