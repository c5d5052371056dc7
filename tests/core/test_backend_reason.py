"""The backend's "why" is the real reason, in a child process too.

``import labkit`` sets NUMBA_ENABLE_CUDASIM=1 when it chooses the simulator, and child
processes (the notebook kernels of ``python -m labkit run``) inherit it. They must still report
why the parent chose "sim" (no driver), not the variable the parent set.
"""
from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

import labkit
from labkit.backends import _choose as _backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD = ("import labkit, subprocess, sys\n"
         "print(labkit.backend_reason)\n"
         "child = subprocess.run([sys.executable, '-c', {code!r}], capture_output=True, text=True)\n"
         "print(child.stdout.strip() or child.stderr.strip().splitlines()[-1])\n")
REASON = "import labkit; print(labkit.backend_reason)"
needs_cpu = pytest.mark.skipif(labkit.backend == "cuda", reason="this machine has a GPU")


def _parent_and_child(child_code=REASON, **env):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("LABKIT_BACKEND", "NUMBA_ENABLE_CUDASIM", _backend.SIM_REASON_VAR)}
    done = subprocess.run([sys.executable, "-c", CHILD.format(code=child_code)],
                          capture_output=True, text=True, env={**clean, **env}, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    parent, child = done.stdout.strip().splitlines()[-2:]
    return parent, child


@needs_cpu
def test_a_child_of_a_simulating_process_reports_the_parents_real_reason():
    parent, child = _parent_and_child()
    assert parent.startswith("auto: no NVIDIA driver here")
    assert child == parent


@needs_cpu
def test_numba_enable_cudasim_set_by_the_user_is_still_named():
    parent, child = _parent_and_child(NUMBA_ENABLE_CUDASIM="1")
    assert parent == child == "NUMBA_ENABLE_CUDASIM=1 is set, so numba can only simulate"


@pytest.fixture
def inherited_sim(monkeypatch):
    """The environment a kernel inherits from a labkit that chose "sim" for want of a driver."""
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setenv(_backend.SIM_REASON_VAR, "auto: no NVIDIA driver here (...)")
    monkeypatch.setenv("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    monkeypatch.setattr(_backend, "_numba_cuda_mode", lambda: None)


def test_labkit_backend_cuda_drops_the_simulator_switch_labkit_set(inherited_sim, monkeypatch):
    monkeypatch.setenv("LABKIT_BACKEND", "cuda")
    monkeypatch.setattr(_backend, "_probe_gpu", lambda: (True, "found 1 GPU(s), device 0 is X"))
    assert _backend.choose() == ("cuda", "LABKIT_BACKEND=cuda: found 1 GPU(s), device 0 is X")
    assert "NUMBA_ENABLE_CUDASIM" not in os.environ


def test_auto_keeps_the_inherited_reason_without_probing_again(inherited_sim, monkeypatch):
    monkeypatch.setenv("LABKIT_BACKEND", "auto")
    monkeypatch.setattr(_backend, "_probe_gpu", lambda: pytest.fail("probed again"))
    assert _backend.choose() == ("sim", "auto: no NVIDIA driver here (...)")


def test_the_users_own_cudasim_with_labkit_backend_cuda_is_still_refused(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.delenv(_backend.SIM_REASON_VAR, raising=False)
    monkeypatch.setenv("LABKIT_BACKEND", "cuda")
    monkeypatch.setattr(_backend, "_probe_gpu", lambda: (True, "found 1 GPU(s)"))
    with pytest.raises(_backend.BackendError, match=r"^LABKIT_BACKEND=cuda but "
                                                    r"NUMBA_ENABLE_CUDASIM=1 .*unset"):
        _backend.choose()


def _rt(driver):
    return types.SimpleNamespace(cudaDriverGetVersion=lambda: (0, driver))


@pytest.mark.parametrize("name, driver, words", [
    ("cudaErrorInsufficientDriver", 0, "no NVIDIA driver here"),
    ("cudaErrorInsufficientDriver", 12040, "the NVIDIA driver supports only CUDA 12.4"),
    ("cudaErrorNoDevice", 13000, "no NVIDIA GPU here"),
    ("cudaErrorUnknown", 13000, "the GPU could not be used"),
])
def test_no_gpu_is_said_in_plain_words_then_cudas_error(name, driver, words):
    text = _backend._no_gpu_words(types.SimpleNamespace(name=name), _rt(driver))
    assert text.startswith(words)
    assert text.endswith(f"(cudaGetDeviceCount returned {name})")
