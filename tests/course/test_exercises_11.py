"""Notebook 11's exercise check accepts a sampler graph that advances its offset on the device and
rejects each plausible wrong one (one test per wrong answer)."""
import labkit
import numpy as np
import pytest

from labkit.course import production as pr
from labkit.course.exercises import nb11


def _draw(st, out, state):
    pr.uniform_from_state[(out.size + 255) // 256, 256, st](out, state)


def right(st, out, state):
    _draw(st, out, state)
    pr.advance_state[1, 1, st](state, out.size)


def offset_as_argument(st, out, state):           # the seed and offset frozen at capture
    pr.uniform_at[(out.size + 255) // 256, 256, st](out, nb11.SEED, 0)


def never_advances(st, out, state):               # reads the state, nothing moves it on
    _draw(st, out, state)


def advances_first(st, out, state):               # the first replay skips n numbers
    pr.advance_state[1, 1, st](state, out.size)
    _draw(st, out, state)


def advances_by_one(st, out, state):              # replays overlap
    _draw(st, out, state)
    pr.advance_state[1, 1, st](state, 1)


def host_counter(st, out, state):                 # a Python counter, copied in at capture
    offset = host_counter.calls * out.size
    host_counter.calls += 1
    state.copy_to_device(np.array([nb11.SEED, offset], np.uint64), stream=st)
    _draw(st, out, state)


def own_state(seed):                              # a state of its own, with its own seed
    mine = labkit.to_device(np.array([seed, 0], np.uint64))

    def record(st, out, state):
        right(st, out, mine)
    return record


@pytest.fixture
def stream():
    return labkit.Stream()


def test_the_check_accepts_a_draw_then_an_advance_on_the_device(stream):
    draws = nb11.check_sampler(right, stream)
    want = pr.uniform_reference(nb11.SEED, 0, nb11.REPLAYS * nb11.N)
    np.testing.assert_array_equal(np.concatenate(draws), want)


@pytest.mark.parametrize("record", [offset_as_argument, never_advances, host_counter],
                         ids=lambda f: f.__name__)
def test_the_check_refuses_replays_that_draw_the_same_numbers(record, stream):
    host_counter.calls = 0
    with pytest.raises(AssertionError, match=r"^replays 1 and 2 drew the same numbers"):
        nb11.check_sampler(record, stream)


def test_the_check_refuses_a_first_replay_that_starts_past_the_offset(stream):
    with pytest.raises(AssertionError, match=r"^replay 1 drew numbers 512 … 1023 of the stream"):
        nb11.check_sampler(advances_first, stream)


def test_the_check_refuses_replays_that_overlap(stream):
    with pytest.raises(AssertionError, match=r"^replay 2 drew numbers 1 … 512, repeating 511 "
                                             r"numbers of the replay before"):
        nb11.check_sampler(advances_by_one, stream)


def test_the_check_refuses_numbers_from_another_seed(stream):
    with pytest.raises(AssertionError, match=r"^replay 1 drew numbers that are not from the "
                                             r"stream of seed 2026"):
        nb11.check_sampler(own_state(7), stream)


def test_the_check_refuses_a_record_that_is_not_a_function(stream):
    with pytest.raises(TypeError, match=r"^record must be a function"):
        nb11.check_sampler(None, stream)
