"""``python -m labkit doctor``'s advice on faked machines: driver, runtime, compiler libraries.

The probes (`doctor.driver_version`, `doctor.runtime_version`, `doctor.find_compiler_libraries`)
are replaced, so each test describes one machine; the real one is only used by the CLI test.
"""
from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

from labkit.cli import doctor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALL_FOUND = {"NVVM": "/x/libnvvm.so.4", "NVRTC": "/x/libnvrtc.so.13",
             "libdevice": "/x/libdevice.10.bc"}


class _Ok:
    def __int__(self):
        return 0


def _gpu_labkit(name=b"NVIDIA H200\x00"):
    props = types.SimpleNamespace(name=name, major=9, minor=0)
    rt = types.SimpleNamespace(cudaGetDeviceProperties=lambda dev: (_Ok(), props))
    return types.SimpleNamespace(backend="cuda", backend_reason="auto: found 1 GPU(s)", rt=rt)


def _sim_labkit(reason="auto: no NVIDIA driver here (cudaGetDeviceCount returned "
                       "cudaErrorInsufficientDriver)"):
    return types.SimpleNamespace(backend="sim", backend_reason=reason)


@pytest.fixture
def machine(monkeypatch):
    """Fake the machine: ``machine(driver=13000, runtime=13030, libraries={...})``."""
    monkeypatch.setattr(doctor, "check_cupti", lambda lk, report, driver: None)
    monkeypatch.setattr(doctor, "check_calibration", lambda lk, report: None)

    def fake(driver, runtime, libraries=ALL_FOUND):
        monkeypatch.setattr(doctor, "driver_version", lambda: driver)
        monkeypatch.setattr(doctor, "runtime_version", lambda: runtime)
        monkeypatch.setattr(doctor, "find_compiler_libraries", lambda: dict(libraries))
    return fake


def test_a_cuda_12_driver_with_cuda_13_bindings_is_told_to_install_cu12(machine):
    machine(driver=12040, runtime=13030)
    report = doctor.diagnose(_sim_labkit("auto: the NVIDIA driver supports only CUDA 12.4"))
    assert dict(report.rows)["install extra"].startswith('cu12: pip install -e ".[cu12]"')
    [(problem, fix)] = report.problems
    assert "needs a driver for CUDA 13" in problem and "supports CUDA 12.4" in problem
    assert fix.startswith('pip install -e ".[cu12]"')
    assert "its GPU cannot be used" in report.headline


def test_runtime_13_3_on_a_13_0_driver_is_fine_by_minor_version_compatibility(machine):
    machine(driver=13000, runtime=13030)
    report = doctor.diagnose(_gpu_labkit())
    assert report.problems == []
    assert dict(report.rows)["CUDA runtime"] == (
        "13.3: runs on this driver (same major version; minor versions are compatible)")
    assert report.headline == ("The GPU (NVIDIA H200) is ready: the notebooks run on it and "
                               "measure real times.")


def test_a_cuda_12_runtime_on_a_cuda_13_driver_is_fine(machine):
    machine(driver=13000, runtime=12090)
    assert doctor.diagnose(_gpu_labkit()).problems == []


def test_a_driver_older_than_cuda_12_is_told_to_update_the_driver(machine):
    machine(driver=11080, runtime=12090)
    report = doctor.diagnose(_sim_labkit("auto: the GPU could not be used"))
    assert any("update the NVIDIA driver (R525" in fix for _, fix in report.problems)
    assert dict(report.rows)["install extra"] == "none: the driver is older than CUDA 12"


@pytest.mark.parametrize("driver, extra", [(12000, "cu12"), (12090, "cu12"), (13000, "cu13"),
                                           (14010, "cu13"), (11080, None), (0, None)])
def test_the_extra_follows_the_drivers_major_version(driver, extra):
    assert doctor.extra_for(driver) == extra


def test_missing_nvvm_on_a_gpu_names_the_extra_that_brings_it(machine):
    machine(driver=13000, runtime=13030, libraries={**ALL_FOUND, "NVVM": None})
    report = doctor.diagnose(_gpu_labkit())
    [(problem, fix)] = report.problems
    assert problem == "numba-cuda cannot find NVVM, so no kernel can be compiled for the GPU"
    assert fix.startswith('pip install -e ".[cu13]"') and "CUDA_HOME" in fix
    assert dict(report.rows)["NVVM"] == "not found"
    assert "1 thing(s) below need fixing" in report.headline


def test_missing_libraries_on_a_cuda_12_driver_name_cu12(machine):
    machine(driver=12080, runtime=12090, libraries=dict.fromkeys(ALL_FOUND))
    [(problem, fix)] = doctor.diagnose(_gpu_labkit()).problems
    assert "NVVM, NVRTC, libdevice" in problem and fix.startswith('pip install -e ".[cu12]"')


def test_the_simulator_on_a_cpu_only_machine_is_fine_in_plain_words(machine):
    machine(driver=0, runtime=13040, libraries=dict.fromkeys(ALL_FOUND))
    report = doctor.diagnose(_sim_labkit())
    assert report.problems == []
    assert report.headline.startswith("No NVIDIA driver here, so the simulator is in use, "
                                      "and that is fine")
    rows = dict(report.rows)
    assert rows["NVVM"] == "not found (the simulator does not need it)"
    assert rows["gpu"] == "none in use" and "simulat" not in rows["gpu"]


def test_labkit_backend_sim_is_named_as_the_reason(machine):
    machine(driver=13000, runtime=13030)
    report = doctor.diagnose(_sim_labkit("LABKIT_BACKEND=sim"))
    assert report.headline.startswith("The simulator is in use because LABKIT_BACKEND=sim asks")
    assert report.problems == []


def test_cuda_python_is_not_required_when_cuda_bindings_is_there(monkeypatch):
    real = doctor.importlib.metadata.version

    def version(name):
        if name == "cuda-python":
            raise doctor.importlib.metadata.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(doctor.importlib.metadata, "version", version)
    report = doctor.Report()
    doctor.check_packages(report)
    assert not any("cuda-python" in text for text, _ in report.problems)
    assert dict(report.rows)["cuda-python"] == "not installed (not needed: labkit uses cuda-bindings)"


def test_the_headline_comes_first_and_the_details_after():
    report = doctor.Report(headline="No NVIDIA driver here.")
    report.row("backend", "sim")
    assert report.render().splitlines()[:3] == ["No NVIDIA driver here.", "", "  backend  sim"]


@pytest.mark.skipif(doctor.driver_version() != 0, reason="this machine has an NVIDIA driver")
def test_doctor_exits_zero_on_this_cpu_only_machine_and_says_so_plainly():
    env = {k: v for k, v in os.environ.items()
           if k not in ("LABKIT_BACKEND", "NUMBA_ENABLE_CUDASIM", "LABKIT_SIM_REASON")}
    done = subprocess.run([sys.executable, "-m", "labkit", "doctor"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No NVIDIA driver here, so the simulator is in use, and that is fine" in done.stdout
    assert "simulating" not in done.stdout and "No problems found." in done.stdout
