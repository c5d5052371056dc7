"""``python -m labkit doctor``: is this machine ready for the course, and if not, what to do.

It prints the backend ``import labkit`` chose and why, the GPU with its driver and CUDA
runtime (on the "cuda" backend), the versions of the packages the course leans on, whether
CUPTI can be imported, and the calibration behind the simulator's clock. Every problem is
printed with its fix; the exit code is 0 when there is none and 1 otherwise.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass, field

# numba-cuda 0.30.4 cannot compile any kernel with numpy 2.5 (np.row_stack is gone there).
FIRST_BROKEN_NUMPY = (2, 5)

# (distribution, required): required ones are pyproject dependencies, the rest are informative.
PACKAGES = [
    ("numba", True),
    ("numba-cuda", True),
    ("cuda-python", True),
    ("cuda-bindings", True),
    ("cuda-core", False),
    ("numpy", True),
    ("matplotlib", True),
]


@dataclass
class Report:
    """What doctor found: ``rows`` of (label, value) and ``problems`` of (problem, fix)."""

    rows: list[tuple[str, str]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def row(self, label: str, value: object) -> None:
        self.rows.append((label, str(value)))

    def problem(self, text: str, fix: str) -> None:
        self.problems.append((text, fix))

    def render(self) -> str:
        width = max((len(label) for label, _ in self.rows), default=0)
        lines = [f"  {label:<{width}}  {value}" for label, value in self.rows]
        if self.problems:
            lines.append(f"\n{len(self.problems)} problem(s):")
            for text, fix in self.problems:
                lines += [f"  - {text}", f"    fix: {fix}"]
        else:
            lines.append("\nNo problems found.")
        return "\n".join(lines)


def cuda_version_text(number: int) -> str:
    """CUDA's packed version number as text: 12040 -> ``"12.4"``, 13010 -> ``"13.1"``."""
    return f"{number // 1000}.{number % 1000 // 10}"


def numpy_problem(version: str) -> tuple[str, str] | None:
    """The (problem, fix) for a numpy that numba-cuda 0.30 cannot compile with, else None.

    Parameters
    ----------
    version : str
        An installed numpy version, e.g. ``"2.4.6"`` or ``"2.5.0rc1"``.
    """
    # "2.5.0rc1" counts as 2.5: a pre-release already carries the change that breaks numba-cuda.
    match = re.match(r"(\d+)\.(\d+)", version)
    parts = tuple(int(g) for g in match.groups()) if match else (0, 0)
    if parts >= FIRST_BROKEN_NUMPY:
        return (f"numpy {version} is >= 2.5: numba-cuda 0.30 cannot compile any kernel with it",
                'pip install "numpy>=1.24,<2.5"')
    return None


def check_backend(lk, report: Report) -> None:
    """Backend and reason, or the LABKIT_BACKEND error that kept labkit from choosing one."""
    error = getattr(lk, "backend_error", None)
    if error is not None:
        report.row("backend", "none chosen")
        report.problem(f"the backend could not be chosen: {error}",
                       "see the message above; LABKIT_BACKEND=sim always works, on any machine")
        return
    backend = getattr(lk, "backend", None)
    report.row("backend", backend or "unknown")
    report.row("why", getattr(lk, "backend_reason", None) or "unknown")
    if backend not in ("cuda", "sim"):
        report.problem(f"labkit did not choose a backend (labkit.backend is {backend!r})",
                       "this labkit is incomplete or stale: reinstall with `pip install -e .` "
                       "from the repository root")


def check_gpu(lk, report: Report) -> None:
    """GPU name, compute capability, driver and runtime versions; only on the "cuda" backend."""
    if getattr(lk, "backend", None) != "cuda":
        name = getattr(lk, "device_name", None)
        report.row("gpu", f"none in use; simulating {name()}" if callable(name) else "none in use")
        return
    rt = lk.rt
    err, props = rt.cudaGetDeviceProperties(0)
    if int(err) != 0:
        report.problem(f"cudaGetDeviceProperties(0) returned {err!r}",
                       "check `nvidia-smi`; the driver may need a reboot or reinstall")
        return
    report.row("gpu", f"{props.name.decode(errors='replace').rstrip(chr(0))} "
                      f"(compute capability {props.major}.{props.minor})")
    err, driver = rt.cudaDriverGetVersion()
    report.row("driver supports CUDA", cuda_version_text(driver) if int(err) == 0 else repr(err))
    err, runtime = rt.cudaRuntimeGetVersion()
    report.row("CUDA runtime", cuda_version_text(runtime) if int(err) == 0 else repr(err))
    if int(err) == 0 and runtime > driver:
        report.problem(
            f"the CUDA runtime ({cuda_version_text(runtime)}) is newer than the driver supports "
            f"({cuda_version_text(driver)})",
            "update the NVIDIA driver, or install a cuda-python matching the driver's CUDA")


def check_packages(report: Report) -> None:
    """Installed versions, read from package metadata so nothing heavy is imported."""
    for name, required in PACKAGES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            report.row(name, "not installed")
            if required:
                report.problem(f"{name} is not installed", 'pip install -e .  (from the repository root)')
            continue
        report.row(name, version)
        if name == "numpy" and (found := numpy_problem(version)):
            report.problem(*found)


def check_cupti(lk, report: Report) -> None:
    """CUPTI (``cupti`` from cupti-python) gives kernel traces; optional, GPU only."""
    if importlib.util.find_spec("cupti") is not None:
        report.row("CUPTI", "importable (kernel traces available)")
    elif getattr(lk, "backend", None) == "cuda":
        report.row("CUPTI", 'not installed; for kernel traces: pip install -e ".[gpu]"')
    else:
        report.row("CUPTI", "not installed (only useful on a GPU)")


def check_calibration(lk, report: Report) -> None:
    """The measured cost model that drives the simulator's virtual clock."""
    try:
        calibration = importlib.import_module("labkit._calibration").load()
    except Exception as exc:  # a missing or broken file must not stop the rest of the report
        report.row("calibration", "unavailable")
        report.problem(f"the simulator's calibration cannot be loaded ({type(exc).__name__}: {exc})",
                       "reinstall with `pip install -e .`; on a GPU machine, "
                       "`python -m labkit calibrate` measures a new one")
        return
    keys = ("gpu", "driver", "cuda_runtime", "numba_cuda", "date", "source")
    report.row("calibration", ", ".join(f"{k}={calibration.get(k, '?')}" for k in keys))


def diagnose(lk) -> Report:
    """Run every check against the imported ``labkit`` module ``lk``.

    Parameters
    ----------
    lk : module
        ``labkit`` itself; tests pass a stand-in with the same attributes.

    Returns
    -------
    Report
        The rows to print and the problems, each with its fix.
    """
    report = Report()
    check_backend(lk, report)
    if getattr(lk, "backend_error", None) is None:
        try:
            check_gpu(lk, report)
        except Exception as exc:  # a driver fault is exactly what doctor is for: report it
            report.problem(f"querying the GPU failed: {type(exc).__name__}: {exc}",
                           "check `nvidia-smi`, or use LABKIT_BACKEND=sim")
    check_packages(report)
    check_cupti(lk, report)
    check_calibration(lk, report)
    return report


def main(argv: list[str] | None = None) -> int:
    """Print the report; return 0 when there are no problems, 1 otherwise."""
    argparse.ArgumentParser(
        prog="python -m labkit doctor",
        description="Check this machine for the course; each problem is printed with its fix.",
    ).parse_args(argv)
    try:
        import labkit as lk
    except Exception as exc:  # e.g. BackendError when labkit is imported here for the first time
        lk = type("_Unchosen", (), {"backend_error": exc})()
    report = diagnose(lk)
    print("CUDA Graphs Lab doctor\n")
    print(report.render())
    return 1 if report.problems else 0
