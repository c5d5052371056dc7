"""labkit.timing and labkit.plot: public names for labkit.measure's modules, loaded on first use
(``import labkit.timing`` too); labkit.backend: a name that reaches its package."""
import os
import subprocess
import sys

import pytest

import labkit


def _run(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LABKIT_BACKEND="sim")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_timing_and_plot_are_the_measure_modules():
    from labkit import plot, timing
    from labkit.measure import plot as measure_plot, timing as measure_timing
    assert timing is measure_timing and plot is measure_plot
    assert labkit.timing is measure_timing


def test_import_labkit_leaves_matplotlib_unloaded_until_plot_is_asked_for():
    r = _run("import sys, labkit\n"
             "print('matplotlib' in sys.modules)\n"
             "labkit.plot\n"
             "print('matplotlib' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"^module 'labkit' has no attribute 'no_such_name'$"):
        labkit.no_such_name


def test_import_labkit_timing_and_plot_give_the_measure_modules():
    r = _run("import labkit.timing, labkit.plot\n"
             "import labkit.measure.timing as t, labkit.measure.plot as p\n"
             "print(labkit.timing is t, labkit.plot is p)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


def test_labkit_backend_is_the_backends_name_and_reaches_the_package():
    assert labkit.backend in ("cuda", "sim") and isinstance(labkit.backend, str)
    assert f"{labkit.backend}" == str(labkit.backend) == labkit.backend.name
    assert labkit.backend.is_gpu is (labkit.backend == "cuda")
    assert labkit.backend.rt is labkit.rt
    with pytest.raises(AttributeError, match=r"has no attribute 'no_such_name'"):
        labkit.backend.no_such_name
