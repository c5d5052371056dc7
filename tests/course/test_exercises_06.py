"""Notebook 06's exercise check accepts the solution and rejects plausible wrong answers."""
import numpy as np
import pytest

import labkit
from labkit import check, rt
from labkit.course.exercises import nb06
from labkit.course.workloads import add_one
from tests.notebook_sources import run_cell


def _notebooks(role, stream):
    """The notebook's ``fast_update`` from its starter or solution cell."""
    return run_cell("06", role, {"add_one": add_one, "stream": stream})


def test_check_accepts_one_sync_at_the_end():
    with labkit.Stream() as s:
        out = nb06.check_fewer_syncs(_notebooks("solution", s)["fast_update"], s)
    assert out["ratio"] <= nb06.MAX_RATIO


def test_the_notebooks_check_cell_passes_the_solution_and_fails_the_starter(capsys):
    with labkit.Stream() as s:
        run_cell("06", "check", _notebooks("solution", s))
        with pytest.raises(AssertionError, match=r"^your function still waits for the GPU over and "
                                                 r"over: 20 synchronizations and 20 copies"):
            run_cell("06", "check", _notebooks("starter", s))


def test_check_rejects_the_unchanged_loop():
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^your function still waits for the GPU over and "
                                                 r"over: 20 synchronizations and 20 copies"):
            nb06.check_fewer_syncs(nb06.slow_update, s)


def test_check_rejects_a_loop_that_drops_kernels():
    def too_few(x, stream):
        for _ in range(nb06.N_KERNELS - 1):
            add_one[4, 256, stream](x)

    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^your function changed the result"):
            nb06.check_fewer_syncs(too_few, s)


def test_check_rejects_keeping_a_sync_after_every_kernel():
    # only the copy dropped (ratio 0.74 ≤ 0.85)
    def sync_each(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
            stream.synchronize()

    with labkit.Stream() as s:
        with pytest.raises(AssertionError,
                           match=r"^your function still waits for the GPU over and over: 20 "
                                 r"synchronizations for 20 kernels .*A synchronize, through labkit "
                                 r"or the raw runtime alike, holds the CPU"):
            nb06.check_fewer_syncs(sync_each, s)


def test_check_rejects_a_raw_runtime_synchronize_after_every_kernel():
    # the same wait, called through labkit.rt instead of Stream.synchronize
    def raw_sync_each(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
            check(rt.cudaStreamSynchronize(stream.handle), "cudaStreamSynchronize")

    with labkit.Stream() as s:
        with pytest.raises(AssertionError,
                           match=r"^your function still waits for the GPU over and over: 20 "
                                 r"synchronizations for 20 kernels"):
            nb06.check_fewer_syncs(raw_sync_each, s)


def test_check_rejects_keeping_the_copy_to_the_host_after_every_kernel():
    # the synchronize dropped but the "progress" copy kept: faster than the original, and a wait
    # after every kernel all the same
    def copy_each(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
            x.copy_to_host()
        stream.synchronize()

    with labkit.Stream() as s:
        with pytest.raises(AssertionError,
                           match=r"^your function still waits for the GPU over and over: 1 "
                                 r"synchronization and 20 copies to the host for 20 kernels .*"
                                 r"A copy to the host is a wait too"):
            nb06.check_fewer_syncs(copy_each, s)


def test_the_wait_messages_do_not_give_the_answer_away():
    def sync_each(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
            stream.synchronize()

    with labkit.Stream() as s:
        with pytest.raises(AssertionError) as err:
            nb06.check_fewer_syncs(sync_each, s)
    assert "synchronize once" not in str(err.value) and "at the end" not in str(err.value)


def test_counting_waits_restores_what_it_wrapped():
    with labkit.Stream() as s:
        x = labkit.to_device(np.zeros(4, np.float32))
        before = (rt.cudaStreamSynchronize, rt.cudaMemcpy, type(x).copy_to_host)
        waits = nb06.waits_in_one_call(lambda x, st: (st.synchronize(), x.copy_to_host()), x, s)
        assert (rt.cudaStreamSynchronize, rt.cudaMemcpy, type(x).copy_to_host) == before
    assert waits == {"sync": 1, "copy": 1}


def test_check_counts_one_sync_for_the_solution():
    with labkit.Stream() as s:
        out = nb06.check_fewer_syncs(_notebooks("solution", s)["fast_update"], s)
    assert out["syncs"] == 1


def _each(wait):
    def fn(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
            wait(stream)
    return fn


_EVENTS: dict = {}


def _event_wait(stream):
    ev = _EVENTS.setdefault("ev", labkit.Event(timing=False))
    ev.record(stream)
    ev.synchronize()


@pytest.mark.parametrize("wait", [
    lambda st: labkit.synchronize(),                                       # cudaDeviceSynchronize
    _event_wait,                                                           # an event per kernel
    lambda st: __import__("numba").cuda.synchronize(),                     # numba's own
], ids=["device synchronize", "event synchronize", "numba synchronize"])
def test_check_rejects_any_other_kind_of_wait_after_every_kernel(wait):
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^your function still waits for the GPU over and "
                                                 r"over: 20 synchronizations for 20 kernels"):
            nb06.check_fewer_syncs(_each(wait), s)


def test_check_rejects_a_loop_that_never_waits():
    # every wait dropped: fast, and the result right once the check synchronizes, yet the
    # function returns before its kernels have run, where the original returned with x done
    def no_wait(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)

    with labkit.Stream() as s:
        with pytest.raises(AssertionError,
                           match=r"^your function never waits for the GPU: it returns while the "
                                 r"kernels may still be running"):
            nb06.check_fewer_syncs(no_wait, s)



# "Done when it returns": each of these waits once, so the wait count cannot tell them from the
# solution; what they leave running when they return can.

def _done_early(body):
    with labkit.Stream() as s:
        with pytest.raises(AssertionError, match=r"^your function returns before its kernels are "
                                                 r"done"):
            nb06.check_fewer_syncs(body, s)


def test_check_rejects_a_synchronize_before_the_work():
    def sync_first(x, stream):
        stream.synchronize()
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
    _done_early(sync_first)


def test_check_rejects_a_synchronize_of_another_stream():
    other = labkit.Stream()

    def wrong_stream(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
        other.synchronize()
    _done_early(wrong_stream)


def test_check_rejects_the_kernels_on_the_default_stream():
    def default_stream(x, stream):
        for _ in range(nb06.N_KERNELS):
            add_one[4, 256, 0](x)
        stream.synchronize()
    _done_early(default_stream)


def test_check_rejects_an_event_recorded_after_the_first_kernel():
    def early_event(x, stream):
        ev = labkit.Event()
        for i in range(nb06.N_KERNELS):
            add_one[4, 256, stream](x)
            if i == 0:
                ev.record(stream)
        ev.synchronize()
    _done_early(early_event)
