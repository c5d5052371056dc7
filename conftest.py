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
