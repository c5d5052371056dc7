"""The capacity benchmark's arithmetic: percentiles, learners per core, a room's size."""
from __future__ import annotations

import pytest

from hub.bench import Round, learners_per_core, percentile, sizing


def _round(n, p50):
    return Round(n, p50, p50, p50, 300.0)


def test_percentile_interpolates_between_ranks():
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)


def test_percentile_of_nothing_is_an_error():
    with pytest.raises(ValueError, match=r"^no values"):
        percentile([], 50)


def test_learners_per_core_is_the_most_learners_within_twice_one_learners_time():
    rounds = [_round(1, 4.0), _round(2, 5.0), _round(4, 7.9), _round(8, 16.0)]
    assert learners_per_core(rounds, cores=2) == 2.0


def test_a_round_just_past_twice_does_not_count():
    rounds = [_round(1, 4.0), _round(2, 8.01)]
    assert learners_per_core(rounds, cores=2) == 0.5


def test_learners_per_core_needs_the_single_learner_first():
    with pytest.raises(ValueError, match=r"start with a single learner"):
        learners_per_core([_round(2, 5.0)], cores=2)


def test_a_room_gets_whole_cores_and_everyones_memory_plus_the_hubs():
    assert sizing(30, per_core=2.0, mib_per_learner=512) == (15, 16.0)
    assert sizing(100, per_core=3.0, mib_per_learner=400) == (34, 40.1)
