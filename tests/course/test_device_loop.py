"""The capstone's device loop: one WHILE graph makes numpy's tokens, stops at EOS or at the
limit, and its body is exactly one decode step (the stop test inside the step's last kernel)."""
import numpy as np
import pytest

import labkit
from labkit.course import decoder as dec, device_loop as dl


@pytest.fixture(scope="module")
def setup():
    m = dec.make_model(seed=0)
    s = labkit.Stream()
    loop = dl.build(m, s)
    yield m, loop
    loop.close()


def test_the_loop_body_has_exactly_the_kernels_of_one_decode_step(setup):
    m, loop = setup
    assert len(loop.body.kernel_nodes()) == m.cfg.kernels_per_token
    assert len(loop.body) == m.cfg.kernels_per_token


def test_the_loop_stops_at_the_end_of_sequence_token_with_numpys_tokens(setup):
    m, loop = setup
    ref = dec.reference_generate(m, 1, m.cfg.max_seq)
    eos, n = dl.eos_for(ref, 20)
    r = loop.run(1, m.cfg.max_seq, eos)
    assert r.stopped_at_eos and len(r.tokens) == n
    np.testing.assert_array_equal(r.tokens, ref[:n])


def test_without_an_end_of_sequence_token_the_loop_stops_at_the_limit(setup):
    m, loop = setup
    r = loop.run(1, 7)
    assert not r.stopped_at_eos
    np.testing.assert_array_equal(r.tokens, dec.reference_generate(m, 1, 7))


def test_a_generations_host_cpu_holds_its_launch_and_its_wait(setup):
    m, loop = setup
    r = loop.run(1, 12)
    assert 0 < r.launch_cpu_us < r.cpu_us
    assert r.cpu_us_per_token == pytest.approx(r.cpu_us / 12)


def test_a_limit_beyond_the_models_positions_is_refused(setup):
    m, loop = setup
    with pytest.raises(ValueError, match=r"limit must be 1\.\.max_seq \(64\), got 65"):
        loop.run(1, 65)


@pytest.fixture(scope="module")
def streaming():
    m = dec.make_model(seed=0)
    s = labkit.Stream()
    loop = dl.StreamingLoop(m, s)
    yield m, loop
    loop.close()


def test_the_streaming_loop_delivers_numpys_tokens_and_stops_at_eos(streaming):
    m, loop = streaming
    ref = dec.reference_generate(m, 1, m.cfg.max_seq)
    eos, n = dl.eos_for(ref, 30)
    r = loop.run(1, m.cfg.max_seq, eos)
    assert r.stopped_at_eos and len(r.tokens) == n
    np.testing.assert_array_equal(r.tokens, ref[:n])


def test_the_streaming_loop_has_the_step_in_its_body_and_one_launch_per_generation(streaming):
    m, loop = streaming
    assert len(loop.body.kernel_nodes()) == m.cfg.kernels_per_token


def test_streamed_tokens_arrive_one_by_one_about_a_step_apart(streaming):
    m, loop = streaming
    r = loop.run(1, 20)
    assert len(r.arrival_us) == 20 and np.all(np.diff(r.arrival_us) > 0)
    gaps = r.inter_token_us
    assert gaps.max() < 1.2 * np.median(gaps)           # a steady stream, not a burst at the end
    assert r.ttft_us < 2 * np.median(gaps)               # the first token comes after one step
    assert r.arrival_us[-1] <= r.wall_us


def test_k_steps_per_launch_stop_late_at_eos_with_numpys_tokens():
    m = dec.make_model(seed=0)
    s = labkit.Stream()
    ref = dec.reference_generate(m, 1, m.cfg.max_seq)
    eos, n = dl.eos_for(ref, 30)
    ex = dl.capture_steps(m, s, 4)
    r = dl.k_per_launch(m, ex, 4, 1, m.cfg.max_seq, s, eos)
    np.testing.assert_array_equal(r.tokens, ref[:n])
    assert r.stopped_at_eos and r.wasted == (-n) % 4


def test_a_streamed_generation_inside_a_timeline_keeps_both(streaming):
    from labkit import timing
    m, loop = streaming
    with timing.timeline("streamed") as rec:
        r = loop.run(1, 10)
    np.testing.assert_array_equal(r.tokens, dec.reference_generate(m, 1, 10))
    assert any(s.name.startswith("WHILE") for s in rec.timeline.spans)


def test_the_publishing_kernel_equals_its_reference_while_the_loop_goes_on():
    import labkit._kernel as K
    args = [np.array([-1, 64, 0], np.int32), np.array([42], np.int32), np.array([4], np.int32),
            np.zeros(1, np.int32), np.zeros(2 + 64, np.int32), 0]
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    b = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    dl.advance_stop_publish.reference(K._dims(1), K._dims(1), *a)
    dl.advance_stop_publish.simulate(1, 1, *b)
    for x, y in zip(a[:5], b[:5]):
        np.testing.assert_array_equal(x, y)
    assert a[2][0] == 5 and a[4][0] == 5 and a[4][2 + 4] == 42 and a[4][1] == 0
