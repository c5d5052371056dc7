"""`timing.measure(after=...)`: what a timed call made is released after it, untimed."""
from __future__ import annotations

import numpy as np

import labkit
from labkit import timing
from labkit.course.workloads import add_one


def test_after_receives_each_calls_result_and_is_not_timed():
    made, released = [], []

    def fn():
        made.append(len(made))
        return made[-1]

    st = timing.measure(fn, warmup=2, repeat=5, after=released.append)
    assert released == made == list(range(7))      # every call's result, warm-up included
    assert len(st.samples) == 5


def test_instantiations_released_by_after_leave_no_executable_alive():
    s = labkit.Stream()
    x = labkit.to_device(np.zeros(1024, np.float32))
    add_one[4, 256, s](x)
    with labkit.capture(s) as cap:
        add_one[4, 256, s](x)
    execs = []

    def inst():
        execs.append(cap.graph.instantiate())
        return execs[-1]

    timing.measure(inst, warmup=1, repeat=3, after=lambda ex: ex.close())
    assert len(execs) == 4
    for ex in execs:       # each was closed right after its timed call
        try:
            ex.launch(s)
        except Exception as e:
            assert "closed" in str(e)
        else:
            raise AssertionError("an executable released by after= could still launch")
    cap.graph.close()
    s.close()
