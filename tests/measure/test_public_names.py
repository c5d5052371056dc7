"""labkit.timing and labkit.plot: modules of their own, loaded on first use (``import labkit`` does
not import matplotlib); labkit.backend: the backend's name, a plain str; labkit.backends: its
package."""
import os
import subprocess
import sys

import pytest

import labkit


def _run(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LABKIT_BACKEND="sim")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_timing_and_plot_are_the_modules_of_those_names():
    from labkit import plot, timing
    import labkit.plot as p
    import labkit.timing as t
    assert timing is t and plot is p and labkit.timing is t


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
             "import labkit.timing as t, labkit.plot as p\n"
             "print(labkit.timing is t, labkit.plot is p)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


def test_labkit_backend_is_the_backends_name_and_labkit_backends_its_package():
    assert labkit.backend in ("cuda", "sim") and type(labkit.backend) is str
    assert labkit.backend == labkit.backends.name
    assert labkit.backends.is_gpu is (labkit.backend == "cuda")
    assert labkit.backends.rt is labkit.rt
    with pytest.raises(AttributeError, match=r"has no attribute 'no_such_name'"):
        labkit.backends.no_such_name
