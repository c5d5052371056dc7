"""On cuda-bindings 12 (the cu12 extra), labkit.rt keeps cuda-bindings 13's signatures."""
from __future__ import annotations

import types

import pytest

from labkit.backends._cuda12 import SAME_AS_IN_13, Runtime12, cuda_runtime


def _bindings12():
    """A stand-in for cuda.bindings.runtime 12.x: each function says its own name."""
    names = list(SAME_AS_IN_13) + list(SAME_AS_IN_13.values()) + ["cudaGraphLaunch"]
    module = types.SimpleNamespace(**{n: (lambda *a, _n=n: (_n, a)) for n in names})
    module.cudaGraphKernelNodeCopyAttributes = lambda *a: ("copy", a)
    return module


@pytest.mark.parametrize("name", sorted(SAME_AS_IN_13))
def test_a_call_whose_signature_changed_in_13_goes_to_its_12_x_twin(name):
    assert Runtime12(_bindings12()).__getattr__(name)()[0] == SAME_AS_IN_13[name]


def test_every_other_name_is_the_12_x_modules_own():
    assert Runtime12(_bindings12()).cudaGraphLaunch("g", 0) == ("cudaGraphLaunch", ("g", 0))


def test_copy_attributes_takes_the_destination_first_as_in_13():
    assert Runtime12(_bindings12()).cudaGraphKernelNodeCopyAttributes("dst", "src") == (
        "copy", ("src", "dst"))


def test_cuda_bindings_13_is_used_as_it_is():
    module = _bindings12()
    assert cuda_runtime(module, "13.4.4") is module
    assert isinstance(cuda_runtime(module, "12.9.6"), Runtime12)


def test_the_twins_exist_in_the_installed_12_x_bindings():
    import cuda.bindings
    from cuda.bindings import runtime
    if not cuda.bindings.__version__.startswith("12."):
        pytest.skip(f"cuda-bindings {cuda.bindings.__version__} installed, not 12.x")
    missing = [v for v in SAME_AS_IN_13.values() if not hasattr(runtime, v)]
    assert not missing
