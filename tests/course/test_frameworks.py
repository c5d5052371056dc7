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


# ------------------------------------------------- a decision that depends on the data (section 6)

@pytest.mark.skipif(labkit.backend != "sim", reason="compares with numba's CUDA simulator")
@pytest.mark.parametrize("x0", [2.0, 9.0])
def test_the_decision_kernels_references_equal_the_kernels(x0):
    x = np.full(70, x0, np.float32)
    for kern, args in ((fw.flag_above, (x.copy(), 6.0, np.zeros(1, np.int32))),):
        a = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        b = [v.copy() if isinstance(v, np.ndarray) else v for v in args]
        kern.reference((1, 1, 1), (1, 1, 1), *a)
        kern.simulate(1, 1, *b)
        np.testing.assert_array_equal(a[2], b[2])
        assert a[2][0] == (x0 > 6.0)
    for flag in (0, 1):
        a, b = x.copy(), x.copy()
        fw.halve_or_add.reference((2, 1, 1), (32, 1, 1), a, np.array([flag], np.int32))
        fw.halve_or_add.simulate(2, 32, b, np.array([flag], np.int32))
        np.testing.assert_array_equal(a, b)
        assert np.all(a[:64] == (x0 * 0.5 if flag else x0 + 1)) and np.all(a[64:] == x0)


def test_the_three_ways_of_deciding_leave_the_same_numbers_and_only_on_device_never_waits():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    hd = fw.HostDecision(x, 6.0, s)
    finals, waits = {}, {}
    for how in ("eager", "split", "on_device"):
        x.copy_to_device(np.zeros(1024, np.float32))
        s.synchronize()
        w0 = hd.syncs
        for _ in range(12):
            getattr(hd, how)(s)
        s.synchronize()
        finals[how], waits[how] = x.copy_to_host(), hd.syncs - w0
    hd.close()
    want = np.float32(0)
    for _ in range(12):                      # numpy's version of the step
        want += 1
        want = want * np.float32(0.5) if want > 6.0 else want + 1
    for how, v in finals.items():
        assert np.all(v == want), how
    assert waits == {"eager": 12, "split": 12, "on_device": 0}


def test_a_host_decision_cannot_be_captured():
    s = labkit.Stream()
    hd = fw.HostDecision(labkit.to_device(np.zeros(1024, np.float32)), 6.0, s)
    with pytest.raises(labkit.CudaError, match=r"^synchronizing a stream: "
                                               r"cudaErrorStreamCaptureUnsupported \(900\)"):
        with labkit.capture(s):
            hd.eager(s)
    hd.close()


def test_the_torch_compile_check_says_it_needs_a_gpu_on_the_simulator():
    if labkit.backend == "cuda":
        pytest.skip("on a GPU the check runs")
    with pytest.raises(RuntimeError, match=r"^torch\.compile needs a GPU"):
        fw.torch_compile_capture_check()


def test_every_framework_source_names_its_repository_file_commit_day_and_facts():
    rows = fw.sources()
    assert {r["framework"] for r in rows} == {"llama.cpp", "vLLM", "PyTorch", "NCCL"}
    for r in rows:
        assert r["repo"].count("/") == 1 and r["path"] and r["facts"], r
        assert len(r["commit"]) == 40 or r["commit"].startswith(("merged", "documentation")), r
        assert len(r["read"]) == 10 and r["read"][:2] == "20", r
    text = repr(fw.sources_note("vLLM"))
    assert "vllm/config/compilation.py" in text and "llama.cpp" not in text
    with pytest.raises(ValueError, match=r"^no sources recorded"):
        fw.sources_note("TensorRT-LLM")


def test_every_reported_figure_names_its_source_and_the_note_says_they_are_not_measured():
    rows = fw.reports()
    assert rows and all(r["label"] and str(r["value"]) and r["source"] for r in rows)
    text = repr(fw.reports_note())
    assert text.startswith("Reported by the frameworks (not measured by the course):")
    assert all(r["source"] in text for r in rows)
