"""numba-cuda's private launch internals are used in one place, pinned to the versions they are
known in, and the pin agrees with the package's dependency on numba-cuda."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from labkit.backends import _numba_kernel

ROOT = Path(__file__).resolve().parents[2]


def _numba_cuda_requirements() -> list[Requirement]:
    try:
        import tomllib
    except ImportError:   # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    reqs += [r for extra in project.get("optional-dependencies", {}).values() for r in extra]
    return [Requirement(r) for r in reqs if Requirement(r).name == "numba-cuda"]


def test_the_pinned_versions_are_the_ones_the_package_installs():
    reqs = _numba_cuda_requirements()
    assert reqs
    for req in reqs:
        for minor in _numba_kernel.SUPPORTED:
            assert req.specifier.contains(f"{minor}.0"), (str(req), minor)
        hi = _numba_kernel.SUPPORTED[-1]
        major, minor = map(int, hi.split("."))
        assert not req.specifier.contains(f"{major}.{minor + 1}.0"), \
            f"{req} allows a numba-cuda newer than labkit's pin {hi}.x"


def test_a_numba_cuda_outside_the_pin_is_refused_with_the_install_line():
    _numba_kernel.check_version("0.30.4")
    with pytest.raises(RuntimeError, match=re.escape(
            "known in numba-cuda 0.30.x; this one is 0.31.0: install a supported one "
            "(pip install 'numba-cuda>=0.30,<0.31')")):
        _numba_kernel.check_version("0.31.0")
    with pytest.raises(RuntimeError, match=r"this one is 0\.3\.0:"):
        _numba_kernel.check_version("0.3.0")


def test_no_module_but_the_pinned_one_touches_numbas_private_launch_internals():
    users = [p.relative_to(ROOT).as_posix() for p in (ROOT / "labkit").rglob("*.py")
             if re.search(r"\._prepare_args\b|\._codelibrary\b", p.read_text())]
    assert users == ["labkit/backends/_numba_kernel.py"]


def test_entry_names_are_the_compiled_overloads_symbols():
    class Compiled:
        entry_name = "_ZN8__main__7add_oneB2v1E"

    class Dispatcher:
        overloads = {("f4[::1]",): Compiled()}

    assert _numba_kernel.entry_names(Dispatcher()) == ["_ZN8__main__7add_oneB2v1E"]
    assert _numba_kernel.entry_names(object()) == []
