"""Notebook 07's exercise check accepts the capstone's worked answer and rejects each plausible
wrong one, for several k (one test per wrong answer)."""
import pytest

import labkit
from labkit.course import decoder as dec
from labkit.course.exercises import nb07
from tests.notebook_sources import run_cell


@pytest.fixture(scope="module")
def stream():
    with labkit.Stream() as s:
        yield s


def _notebooks(role, stream):
    """The notebook's ``build`` and ``decode`` from its starter or solution cell."""
    return run_cell("07", role, {"labkit": labkit, "dec": dec, "stream": stream})


def _steps(model, stream, k):
    dec.capture_step(model, stream).close()
    with labkit.capture(stream) as cap:
        for _ in range(k):
            dec.step(model, stream)
    return cap.graph.instantiate(upload_stream=stream)


def _decode(ex, launches, stream):
    lat = []
    for _ in range(launches):
        t0 = labkit.host_us()
        ex.launch(stream)
        stream.synchronize()
        lat.append(labkit.host_us() - t0)
    return lat


def test_check_accepts_the_notebooks_solution_for_every_k(stream):
    ns = _notebooks("solution", stream)
    out = nb07.check_capstone(ns["build"], ns["decode"], stream)
    assert sorted(out) == list(nb07.KS) and all("equal numpy's" in v for v in out.values())


def test_check_rejects_the_notebooks_starter(stream):
    with pytest.raises(AssertionError, match=r"^build\(\.\.\.\) must return an executable graph"):
        run_cell("07", "check", _notebooks("starter", stream))


def test_a_build_that_ignores_k_and_captures_four_steps_is_rejected(stream):
    with pytest.raises(AssertionError, match=r"^for k = 1 your graph holds 260 kernel nodes, 4 "
                                             r"decode steps' worth[\s\S]*depend on k\?"):
        nb07.check_capstone(lambda m, s, k: _steps(m, s, 4), _decode, stream)


def test_a_build_that_always_captures_one_step_is_rejected_at_k_3(stream):
    with pytest.raises(AssertionError, match=r"^for k = 3 your graph holds 65 kernel nodes"):
        nb07.check_capstone(lambda m, s, k: _steps(m, s, 1), _decode, stream)


def test_a_graph_that_was_not_instantiated_is_rejected(stream):
    def build(m, s, k):
        dec.capture_step(m, s).close()
        with labkit.capture(s) as cap:
            for _ in range(k):
                dec.step(m, s)
        return cap.graph
    with pytest.raises(AssertionError, match=r"^build\(\.\.\.\) must return an executable graph "
                                             r"\(what graph\.instantiate\(\) returns\), got Graph"):
        nb07.check_capstone(build, _decode, stream)


def test_a_loop_that_launches_once_is_rejected(stream):
    def decode(ex, launches, s):
        t0 = labkit.host_us()
        ex.launch(s)
        s.synchronize()
        return [labkit.host_us() - t0] * launches
    with pytest.raises(AssertionError, match=r"launched the graph 1 times: each of the 3 replays"):
        nb07.check_capstone(_steps, decode, stream)


def test_a_loop_that_steps_eagerly_instead_of_replaying_is_rejected(stream):
    model = {}

    def build(m, s, k):
        model["m"] = m
        return _steps(m, s, k)

    def decode(ex, launches, s):
        lat = []
        for _ in range(launches):
            t0 = labkit.host_us()
            dec.step(model["m"], s)
            s.synchronize()
            lat.append(labkit.host_us() - t0)
        return lat
    with pytest.raises(AssertionError, match=r"launched the graph 0 times"):
        nb07.check_capstone(build, decode, stream)


def test_a_loop_that_times_only_the_launch_call_is_rejected(stream):
    def decode(ex, launches, s):
        lat = []
        for _ in range(launches):
            t0 = labkit.host_us()
            ex.launch(s)
            lat.append(labkit.host_us() - t0)
        s.synchronize()
        return lat
    with pytest.raises(AssertionError, match=r"median latency is [\d.]+ µs, but a replay takes "
                                             r"about \d+ µs[\s\S]*the launch call alone\?"):
        nb07.check_capstone(_steps, decode, stream)


def test_a_loop_that_returns_no_latencies_is_rejected(stream):
    def decode(ex, launches, s):
        for _ in range(launches):
            ex.launch(s)
        s.synchronize()
    with pytest.raises(AssertionError, match=r"^decode must return one latency per replay \(3\), "
                                             r"got nothing"):
        nb07.check_capstone(_steps, decode, stream)


def test_a_loop_that_restarts_the_generation_each_replay_is_rejected(stream):
    def decode(ex, launches, s):
        lat = []
        for _ in range(launches):
            t0 = labkit.host_us()
            ex.launch(s)
            s.synchronize()
            lat.append(labkit.host_us() - t0)
        return lat

    def build(m, s, k):
        ex = _steps(m, s, k)
        real = ex.launch

        def launch(stream):            # back to the prompt's last token before every replay
            m.state["pos"].copy_to_device(__import__("numpy").array([len(nb07.PROMPT) - 1], "int32"))
            real(stream)
        ex.launch = launch
        return ex
    with pytest.raises(AssertionError, match=r"^for k = 1 the tokens differ from numpy's from "
                                             r"token \d+ on"):
        nb07.check_capstone(build, decode, stream)


def test_a_loop_that_launches_every_replay_then_waits_once_is_rejected(stream):
    # the replays overlap, and each returned "latency" is the total over the launches: on the
    # simulator its median is one replay's time, so only the spacing of the launches tells
    def decode(ex, launches, s):
        t0 = labkit.host_us()
        for _ in range(launches):
            ex.launch(s)
        s.synchronize()
        return [(labkit.host_us() - t0) / launches] * launches
    with pytest.raises(AssertionError, match=r"launched each replay about [\d.]+ µs after the one "
                                             r"before, but a replay takes about \d+ µs[\s\S]*What "
                                             r"must happen between one replay's launch"):
        nb07.check_capstone(_steps, decode, stream)


def test_a_loop_whose_clock_starts_once_before_every_replay_is_rejected(stream):
    # each latency counts the replays before it: 1, 2, 3 replays' time
    def decode(ex, launches, s):
        t0, lat = labkit.host_us(), []
        for _ in range(launches):
            ex.launch(s)
            s.synchronize()
            lat.append(labkit.host_us() - t0)
        return lat
    with pytest.raises(AssertionError, match=r"your latencies grow with every replay \([\d, ]+ µs\)"
                                             r"[\s\S]*where does each one's clock start\?"):
        nb07.check_capstone(_steps, decode, stream)


def test_a_loop_that_returns_latencies_in_nanoseconds_is_rejected(stream):
    def decode(ex, launches, s):
        lat = []
        for _ in range(launches):
            t0 = labkit.host_us()
            ex.launch(s)
            s.synchronize()
            lat.append((labkit.host_us() - t0) * 1000)     # as time.perf_counter_ns() counts
        return lat
    with pytest.raises(AssertionError, match=r"median latency is [\d,]+, but a replay takes about "
                                             r"\d+ µs[\s\S]*In what unit does your clock count\?"):
        nb07.check_capstone(_steps, decode, stream)


def test_gpu_event_timing_is_a_right_answer(stream):
    def decode(ex, launches, s):
        lat = []
        for _ in range(launches):
            start, end = labkit.Event(), labkit.Event()
            start.record(s)
            ex.launch(s)
            end.record(s)
            end.synchronize()
            lat.append(1000 * start.elapsed_ms(end))
        return lat
    done = nb07.check_capstone(_steps, decode, stream)
    assert sorted(done) == [1, 3, 5]


def test_one_mean_repeated_as_every_replays_latency_is_rejected(stream):
    # each replay launched and waited for, but one figure, the mean, returned for all of them
    def decode(ex, launches, s):
        t0 = labkit.host_us()
        for _ in range(launches):
            ex.launch(s)
            s.synchronize()
        return [(labkit.host_us() - t0) / launches] * launches
    with pytest.raises(AssertionError, match=r"^for k = 1 every replay has the same latency, [\d.]+ µs, "
                                             r"but the check made replay 2's launch call about \d+ µs "
                                             r"slower on purpose: one figure for all of them"):
        nb07.check_capstone(_steps, decode, stream)


def test_a_clock_started_after_the_launch_call_is_rejected(stream):
    def decode(ex, launches, s):
        lat = []
        for _ in range(launches):
            ex.launch(s)
            t0 = labkit.host_us()
            s.synchronize()
            lat.append(labkit.host_us() - t0)
        return lat
    with pytest.raises(AssertionError, match=r"^for k = 1 the check made replay 2's launch call about "
                                             r"\d+ µs slower on purpose, but your latency for it is "
                                             r"only -?[\d.]+ µs above the others'[\s\S]*Where does "
                                             r"your clock start\?"):
        nb07.check_capstone(_steps, decode, stream)


def test_gpu_events_recorded_after_the_launch_are_rejected(stream):
    def decode(ex, launches, s):
        lat = []
        for _ in range(launches):
            start, end = labkit.Event(), labkit.Event()
            ex.launch(s)
            start.record(s)            # after the replay in stream order: times nothing
            end.record(s)
            end.synchronize()
            lat.append(1000 * start.elapsed_ms(end))
        return lat
    with pytest.raises(AssertionError, match=r"median latency is [\d.]+ µs, but a replay takes about"):
        nb07.check_capstone(_steps, decode, stream)
