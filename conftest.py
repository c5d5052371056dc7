"""The test suite holds the course's timing claims strictly (labkit.measure.claims): a claim that no
longer holds on the calibrated simulator, or on the GPU under test, fails the run. The
notebooks' kernels inherit the setting from this process's environment.

The simulator's host is noisy by default, as a GPU server's is (seeded: the same figures each
run); a test that needs the model's exact figures asks for `steady_host`."""
import os

import pytest

os.environ.setdefault("LABKIT_CLAIMS", "strict")


def _steady():
    from labkit.sim import clock
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABKIT_SIM_NOISE", "0")
        clock.reset_noise()
        yield
    clock.reset_noise()


@pytest.fixture
def steady_host():
    """The simulator's exact figures: no warm-up, no host noise (LABKIT_SIM_NOISE=0), for the
    test that asks; the seeded noise comes back, reseeded, after it."""
    yield from _steady()


@pytest.fixture(scope="module")
def steady_host_module():
    """`steady_host` for a whole module (and its module-scoped fixtures)."""
    yield from _steady()


@pytest.fixture(autouse=True)
def _no_sticky_fault_left():
    """A test that leaves the simulated GPU with a sticky fault (700) fails, and the next test
    starts clean: on a GPU the fault would end the process."""
    yield
    import labkit
    if labkit.backend != "sim":
        return
    from labkit.sim import _engine
    code = _engine.sticky()
    if code is not None:
        where = _engine._state["fault_at"]
        _engine.clear_fault()
        pytest.fail(f"the test left a sticky fault {code} (from {where}): a test that faults "
                    "on purpose calls labkit.reset_after_fault()")
