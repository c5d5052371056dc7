"""Both backends implement the one interface written down in labkit.backends._interface: every
name, with the same parameters, and each module's ``__all__`` lists exactly those names."""
from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np
import pytest

import labkit
from labkit.backends import _interface
from labkit.backends import cuda as cuda_backend   # importable without a GPU: nothing runs
from labkit.backends import sim as sim_backend
from tests.kernels import BLOCK, GRID, N, add_one

BACKENDS = {"cuda": cuda_backend, "sim": sim_backend}


def _members(protocol) -> tuple[list[str], list[str]]:
    """(methods, data attributes) a Protocol declares."""
    methods = [n for n, v in vars(protocol).items()
               if inspect.isfunction(v) and not n.startswith("_")]
    data = [n for n in getattr(protocol, "__annotations__", {}) if not n.startswith("_")]
    return methods, data


def _parameters(fn, drop_self: bool) -> list[tuple[str, object]]:
    params = list(inspect.signature(fn).parameters.values())
    if drop_self:
        params = params[1:]
    return [(p.name, p.kind) for p in params]


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backend_module_has_every_name_of_the_interface_with_its_parameters(name):
    module = BACKENDS[name]
    methods, data = _members(_interface.Backend)
    missing = [m for m in methods + data if not hasattr(module, m)]
    assert not missing, f"backend {name} lacks {missing}"
    for m in methods:
        assert _parameters(getattr(module, m), False) == \
            _parameters(getattr(_interface.Backend, m), True), f"{name}.{m}'s parameters"
    assert isinstance(module, _interface.Backend)
    assert sorted(module.__all__) == sorted(methods + data), \
        f"{name}.__all__ differs from the interface's names"


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_backends_parameter_block_has_every_method_and_field_of_the_interface(name):
    cls = BACKENDS[name].KernelParams
    methods, data = _members(_interface.KernelParamBlock)
    for m in methods:
        assert _parameters(getattr(cls, m), True) == \
            _parameters(getattr(_interface.KernelParamBlock, m), True), f"{name}.KernelParams.{m}"
    # the fields are set in __init__ (a GPU's block cannot be built here): read its assignments
    init = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    assigned = {t.attr for node in ast.walk(init) if isinstance(node, ast.Assign)
                for target in node.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                if isinstance(t, ast.Attribute)}
    assert not set(data) - assigned, f"{name}.KernelParams never sets {set(data) - assigned}"


def test_the_active_backends_parameter_block_is_one_at_runtime():
    x = labkit.to_device(np.zeros(N, np.float32))
    from labkit.backends import KernelParams
    block = KernelParams(add_one, (GRID, 1, 1), (BLOCK, 1, 1), (x,))
    assert isinstance(block, _interface.KernelParamBlock)


def test_the_package_passes_on_every_name_of_the_interface():
    from labkit import backends as package
    methods, data = _members(_interface.Backend)
    for m in methods + data:
        if m == "IS_GPU":
            assert package.is_gpu is BACKENDS[labkit.backend].IS_GPU
        else:
            assert getattr(package, m) is getattr(BACKENDS[labkit.backend], m), m
