"""Notebook 10's helpers: the piecewise step is the decoder's step; the GPU rows say they need one."""
import labkit
import numpy as np
import pytest

from labkit._graph import _kernel_symbol
from labkit.course import decoder as dec, frameworks as fw

PROMPT, N = 1, 12


@pytest.fixture(scope="module")
def model():
    return dec.make_model(seed=0)


def _names(graph):
    return [_kernel_symbol(n) for n in graph.kernel_nodes()]


def test_step_launches_are_the_decoders_step_kernel_for_kernel(model):
    s = labkit.Stream()
    dec.generate_eager(model, PROMPT, 1, s)          # compiled and loaded
    with labkit.capture(s) as a:
        dec.step(model, s)
    with labkit.capture(s) as b:
        for kern, grid, block, args in fw.step_launches(model):
            kern[grid, block, s](*args)
    assert len(fw.step_launches(model)) == model.cfg.kernels_per_token
    assert _names(b.graph) == _names(a.graph)


def test_the_piecewise_step_decodes_numpys_tokens_with_attention_eager(model):
    s = labkit.Stream()
    pw = fw.PiecewiseStep(model, s)
    layers = model.cfg.n_layers
    assert (pw.pieces, pw.eager_kernels, pw.kernels) == (layers + 1, 3 * layers,
                                                         model.cfg.kernels_per_token)
    eager_kinds = {x[0] for kind, launches in pw.segments if kind == "eager" for x in launches}
    assert eager_kinds == set(fw.ATTENTION)
    r = fw.generate_piecewise(model, PROMPT, N, s, step=pw)
    np.testing.assert_array_equal(r.tokens, dec.reference_generate(model, PROMPT, N))
    assert r.kernels_per_token == model.cfg.kernels_per_token and r.setup_us == 0.0


def test_piecewise_costs_between_eager_and_the_full_graph_on_the_simulator(model):
    if labkit.backend != "sim":
        pytest.skip("the ordering on a GPU is what the notebook's claim checks there")
    s = labkit.Stream()
    e = np.median(dec.generate_eager(model, PROMPT, N, s).token_us)
    p = np.median(fw.generate_piecewise(model, PROMPT, N, s).token_us)
    g = np.median(dec.generate_graph(model, PROMPT, N, s).token_us)
    assert g < p < e


def test_piecewise_refuses_more_tokens_than_the_cache_holds(model):
    with pytest.raises(ValueError, match=r"^n_tokens must be 1\.\.max_seq \(64\) less the "
                                         r"prompt's 0 prefilled tokens, got 65$"):
        fw.generate_piecewise(model, PROMPT, 65, labkit.Stream())
    with pytest.raises(ValueError, match=r"^n_tokens must be 1\.\.max_seq \(64\) less the "
                                         r"prompt's 2 prefilled tokens, got 63$"):
        fw.generate_piecewise(model, [1, 2, 3], 63, labkit.Stream())


def test_the_piecewise_step_continues_a_longer_prompt_after_the_decoders_prefill(model):
    s = labkit.Stream()
    prompt = [5, 9, 2]
    r = fw.generate_piecewise(model, prompt, N, s)
    np.testing.assert_array_equal(r.tokens, dec.reference_generate(model, prompt, N))
    assert r.prefill_us > 0


def test_the_mlp_block_graphed_matches_numpy(model):
    g = labkit.graphed(fw.mlp_block(model), np.zeros(model.cfg.d_model))
    x = np.random.default_rng(3).standard_normal(model.cfg.d_model)
    np.testing.assert_allclose(g(x).copy_to_host(), fw.mlp_reference(model, x), rtol=1e-12)


@pytest.mark.parametrize("fn, what", [(fw.torch_compile_generate, "torch.compile"),
                                      (fw.cupy_capture_generate, "CuPy's stream capture")])
def test_the_gpu_rows_say_they_need_a_gpu_on_the_simulator(model, fn, what):
    if labkit.backend != "sim":
        pytest.skip("on a GPU these rows run")
    with pytest.raises(RuntimeError, match=rf"^{what} needs a GPU \(backend 'cuda'\); this is "
                                           r"backend 'sim'"):
        fn(model, PROMPT, N)


def test_an_nvtx_range_is_timed_in_real_microseconds():
    us = fw.nvtx_range_us(2000)
    assert 0.0 < us < 5.0
    assert fw.NVTX_PHASES == ("capture", "instantiate", "upload", "launch", "update")
