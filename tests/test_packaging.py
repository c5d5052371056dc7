"""pyproject.toml and environment.yml pin the same packages the same way.

Conda users install from environment.yml, pip users from pyproject.toml; when the two drift, one
group gets a numpy that numba-cuda cannot compile with. These tests read both files as data.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

try:
    import tomllib
except ImportError:  # Python 3.10: the test extra installs tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# numba-cuda 0.30.4 cannot compile any kernel with numpy 2.5.
FIRST_BROKEN_NUMPY = "2.5"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _key(req: Requirement) -> tuple[str, SpecifierSet, str]:
    return canonicalize_name(req.name), req.specifier, str(req.marker or "")


def _pyproject_requirements() -> list[Requirement]:
    project = _pyproject()["project"]
    lines = project["dependencies"] + project["optional-dependencies"]["test"]
    return [Requirement(line) for line in lines]


def _conda_pip_requirements() -> list[Requirement]:
    """The pip section of environment.yml, without pip options such as ``-e .``."""
    sections = [d["pip"] for d in _environment()["dependencies"] if isinstance(d, dict)]
    assert len(sections) == 1, "environment.yml needs exactly one `- pip:` section"
    return [Requirement(line) for line in sections[0] if not line.startswith("-")]


def _conda_packages() -> list[str]:
    return [d for d in _environment()["dependencies"] if isinstance(d, str)]


def _caps_numpy_below_broken(requirements: list[Requirement]) -> bool:
    """True when every numpy requirement excludes the first numpy that breaks numba-cuda."""
    numpys = [r for r in requirements if canonicalize_name(r.name) == "numpy"]
    return bool(numpys) and all(
        not r.specifier.contains(FIRST_BROKEN_NUMPY, prereleases=True)
        and not r.specifier.contains("99.0", prereleases=True)
        for r in numpys)


def test_every_pyproject_pin_appears_in_environment_yml_with_the_same_specifier():
    conda = {_key(r)[0]: _key(r) for r in _conda_pip_requirements()}
    mismatched = [str(r) for r in _pyproject_requirements() if conda.get(_key(r)[0]) != _key(r)]
    assert not mismatched, (
        f"environment.yml's pip section lacks or pins differently: {mismatched}; "
        "copy these lines from pyproject.toml")


def test_environment_yml_pins_nothing_that_pyproject_does_not():
    ours = {_key(r) for r in _pyproject_requirements()}
    extra = [str(r) for r in _conda_pip_requirements() if _key(r) not in ours]
    assert not extra, (
        f"environment.yml pins {extra}, which pyproject.toml's dependencies and test extra "
        "do not; add them to pyproject.toml or drop them from environment.yml")


def test_environment_yml_installs_labkit_itself():
    sections = [d["pip"] for d in _environment()["dependencies"] if isinstance(d, dict)]
    assert "-e ." in sections[0], "add `- -e .` to environment.yml's pip section"


def test_environment_yml_asks_for_the_python_that_pyproject_requires():
    requires = _pyproject()["project"]["requires-python"]
    assert f"python{requires}" in _conda_packages()
    assert "pip" in _conda_packages()


@pytest.mark.parametrize("source", ["pyproject.toml", "environment.yml"])
def test_numpy_is_capped_below_the_release_that_breaks_numba_cuda(source):
    reqs = _pyproject_requirements() if source == "pyproject.toml" else _conda_pip_requirements()
    assert _caps_numpy_below_broken(reqs), (
        f"{source} must pin numpy below {FIRST_BROKEN_NUMPY} (numba-cuda 0.30.4 cannot "
        "compile any kernel with numpy 2.5): use numpy>=1.24,<2.5")


@pytest.mark.parametrize("line, capped", [
    ("numpy>=1.24,<2.5", True),
    ("numpy<2.4", True),
    ("numpy>=1.24", False),       # the missing upper bound this guard exists for
    ("numpy>=1.24,<3", False),    # a bound, but one that still lets 2.5 in
    ("numpy!=2.5.0", False),      # 2.5.1 would still install
])
def test_the_numpy_cap_check_tells_a_missing_bound_from_a_real_one(line, capped):
    assert _caps_numpy_below_broken([Requirement(line)]) is capped


def test_the_numpy_cap_check_fails_when_numpy_is_not_listed():
    assert not _caps_numpy_below_broken([Requirement("numba>=0.60")])


# --- the GPU extras: one per CUDA major version of the NVIDIA driver ------------------------

def _extra(name: str) -> list[Requirement]:
    return [Requirement(line) for line in _pyproject()["project"]["optional-dependencies"][name]]


def _base(name: str) -> Requirement:
    [req] = [Requirement(line) for line in _pyproject()["project"]["dependencies"]
             if canonicalize_name(Requirement(line).name) == name]
    return req


def test_the_base_accepts_cuda_bindings_of_either_major_so_an_extra_can_pick_one():
    spec = _base("cuda-bindings").specifier
    assert spec.contains("12.9.6") and spec.contains("13.4.4") and not spec.contains("14.0.0")


@pytest.mark.parametrize("major", [12, 13])
def test_each_cuda_extra_brings_numba_cudas_extra_and_bindings_of_its_major(major):
    reqs = {canonicalize_name(r.name): r for r in _extra(f"cu{major}")}
    numba_cuda = reqs["numba-cuda"]
    assert numba_cuda.extras == {f"cu{major}"}
    assert numba_cuda.specifier == _base("numba-cuda").specifier
    bindings = reqs["cuda-bindings"].specifier
    assert bindings.contains(f"{major}.9.6") and not bindings.contains(f"{major + 1}.0.0")
    assert not bindings.contains(f"{major - 1}.9.9")
    assert all(bindings.contains(v) for v in _base("cuda-bindings").specifier.filter(
        [f"{major}.9.1", f"{major}.9.6"]))


def test_cupti_python_in_cu13_is_of_cuda_13():
    [cupti] = [r for r in _extra("cu13") if canonicalize_name(r.name) == "cupti-python"]
    assert cupti.specifier.contains("13.4.0") and not cupti.specifier.contains("14.0.0")


def test_cuda_python_is_no_longer_a_dependency():
    names = {canonicalize_name(Requirement(line).name)
             for line in _pyproject()["project"]["dependencies"]}
    # its 13.x metapackage pins cuda-bindings 13, which cannot run on a CUDA 12 driver
    assert "cuda-python" not in names and "cuda-bindings" in names
