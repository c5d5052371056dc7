"""``python -m labkit doctor``: is this machine ready for the course, and if not, what to do.

It opens with one sentence in plain words (which backend is in use and whether that is fine),
then the details: the backend ``import labkit`` chose and why, the NVIDIA driver's CUDA version
and the install extra that matches it (``cu12`` or ``cu13``), whether the CUDA runtime of the
installed cuda-bindings can run on that driver (same major version: minor versions are
compatible), whether numba-cuda finds the NVVM, NVRTC and libdevice it compiles kernels with,
the versions of the packages the course leans on, CUPTI, and the calibration behind the
simulator's clock. Every problem is printed with its fix; the exit code is 0 when there is
none (a CPU-only machine on the simulator has none) and 1 otherwise.

The machine is read through small probe functions (`driver_version`, `runtime_version`,
`find_compiler_libraries`) so that tests can fake any machine.
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
# labkit needs cuda-bindings (and numba-cuda brings cuda-core); the cuda-python metapackage is
# not needed, so its absence is no problem.
PACKAGES = [
    ("numba", True),
    ("numba-cuda", True),
    ("cuda-bindings", True),
    ("cuda-core", False),
    ("cuda-python", False),
    ("numpy", True),
    ("matplotlib", True),
]

# The oldest CUDA major numba-cuda 0.30 runs on, and the extra for each driver major.
OLDEST_CUDA_MAJOR = 12
NEWEST_EXTRA_MAJOR = 13
# What numba-cuda needs to compile a kernel on a GPU, and where each comes from.
COMPILER_LIBRARIES = ("NVVM", "NVRTC", "libdevice")


@dataclass
class Report:
    """What doctor found: ``rows`` of (label, value) and ``problems`` of (problem, fix)."""

    rows: list[tuple[str, str]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)

    def row(self, label: str, value: object) -> None:
        self.rows.append((label, str(value)))

    def problem(self, text: str, fix: str) -> None:
        self.problems.append((text, fix))

    headline: str = ""

    def render(self) -> str:
        width = max((len(label) for label, _ in self.rows), default=0)
        lines = [self.headline, ""] if self.headline else []
        lines += [f"  {label:<{width}}  {value}" for label, value in self.rows]
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


def extra_for(driver: int) -> str | None:
    """The install extra that matches a driver's packed CUDA version, or None if too old.

    Parameters
    ----------
    driver : int
        ``cudaDriverGetVersion``'s value, e.g. 12040 for a driver that supports CUDA 12.4.

    Returns
    -------
    str or None
        ``"cu12"`` for a CUDA 12 driver, ``"cu13"`` for 13 and newer (a newer driver runs
        older runtimes), None for a driver older than CUDA 12 or no driver (0).
    """
    major = driver // 1000
    if major < OLDEST_CUDA_MAJOR:
        return None
    return f"cu{min(major, NEWEST_EXTRA_MAJOR)}"


def install_command(extra: str) -> str:
    return f'pip install -e ".[{extra}]"  (from the repository root)'


def driver_problem(driver: int, runtime: int) -> tuple[str, str] | None:
    """The (problem, fix) when the CUDA runtime cannot run on the driver, else None.

    A runtime of the driver's major version runs on it whatever the minor versions (CUDA's
    minor version compatibility: runtime 13.3 on a 13.0 driver is fine), and so does an older
    major. A newer major does not, and neither does a driver older than CUDA 12.

    Parameters
    ----------
    driver, runtime : int
        Packed CUDA versions (12040 is 12.4); a driver of 0 means there is none.
    """
    if driver <= 0:
        return None
    if driver // 1000 < OLDEST_CUDA_MAJOR:
        return (f"the NVIDIA driver supports only CUDA {cuda_version_text(driver)}; numba-cuda "
                f"needs a driver for CUDA {OLDEST_CUDA_MAJOR} or newer",
                "update the NVIDIA driver (R525 or newer supports CUDA 12, R580 or newer CUDA 13)")
    if runtime and runtime // 1000 > driver // 1000:
        return (f"the installed cuda-bindings brings the CUDA {cuda_version_text(runtime)} runtime, "
                f"which needs a driver for CUDA {runtime // 1000}; this driver supports CUDA "
                f"{cuda_version_text(driver)}, so the GPU cannot be used",
                f"{install_command(extra_for(driver))}, which installs cuda-bindings "
                f"{driver // 1000}.x; or update the NVIDIA driver to one for CUDA {runtime // 1000}")
    return None


# --- probes: each reads one fact from this machine; tests replace them --------------------

def driver_version() -> int:
    """The driver's CUDA version, packed (13000 is 13.0); 0 when there is no NVIDIA driver."""
    try:
        from cuda.bindings import runtime
        err, version = runtime.cudaDriverGetVersion()
    except Exception:  # cuda-bindings missing or broken: check_packages says so
        return 0
    return version if int(err) == 0 else 0


def runtime_version() -> int:
    """The CUDA runtime version of the installed cuda-bindings, packed; 0 if unreadable."""
    try:
        from cuda.bindings import runtime
        err, version = runtime.cudaRuntimeGetVersion()
    except Exception:
        return 0
    return version if int(err) == 0 else 0


def find_compiler_libraries() -> dict[str, str | None]:
    """Where numba-cuda finds NVVM, NVRTC and libdevice: a path each, or None if not found.

    It asks numba-cuda's own lookup (``numba.cuda.cuda_paths``, which goes through
    cuda.pathfinder: wheels, conda, CUDA_HOME, the system), so the answer is the one numba-cuda
    gets when it compiles a kernel.
    """
    try:
        paths = importlib.import_module("numba.cuda.cuda_paths")
    except Exception:
        return dict.fromkeys(COMPILER_LIBRARIES)
    lookups = {"NVVM": "_get_nvvm_path", "NVRTC": "_get_nvrtc_path",
               "libdevice": "_get_libdevice_path"}
    found = {}
    for name, function in lookups.items():
        try:
            found[name] = getattr(paths, function)().info or None
        except Exception:  # cuda.pathfinder raises DynamicLibNotFoundError for a missing library
            found[name] = None
    return found


# --- checks ---------------------------------------------------------------------------------

def check_backend(lk, report: Report) -> None:
    """Backend and reason, or the LABKIT_BACKEND error that kept labkit from choosing one."""
    error = getattr(lk, "backend_error", None)
    if error is not None:
        report.row("backend", "none chosen")
        report.problem(f"the backend could not be chosen: {error}",
                       "see the message above; LABKIT_BACKEND=sim always works, on any machine")
        return
    backend = getattr(lk, "backend", None)
    words = {"cuda": "cuda (a real NVIDIA GPU)", "sim": "sim (the CPU simulator)"}
    report.row("backend", words.get(backend, backend or "unknown"))
    report.row("why", getattr(lk, "backend_reason", None) or "unknown")
    if backend not in ("cuda", "sim"):
        report.problem(f"labkit did not choose a backend (labkit.backend is {backend!r})",
                       "this labkit is incomplete or stale: reinstall with `pip install -e .` "
                       "from the repository root")


def check_driver(report: Report, driver: int, runtime: int) -> None:
    """The driver's CUDA version, the extra for it, and whether the runtime can run on it."""
    if driver <= 0:
        report.row("NVIDIA driver", "none found (cudaDriverGetVersion gives 0)")
    else:
        extra = extra_for(driver)
        report.row("NVIDIA driver", f"supports CUDA {cuda_version_text(driver)}")
        report.row("install extra", f"{extra}: {install_command(extra)}" if extra
                   else f"none: the driver is older than CUDA {OLDEST_CUDA_MAJOR}")
    if not runtime:
        report.row("CUDA runtime", "unknown (cuda-bindings could not be asked)")
    elif driver <= 0:
        report.row("CUDA runtime", f"{cuda_version_text(runtime)} (from cuda-bindings; the "
                                   "simulator uses only its names)")
    elif (found := driver_problem(driver, runtime)) is not None:
        report.row("CUDA runtime", f"{cuda_version_text(runtime)}: cannot run on this driver")
        report.problem(*found)
    else:
        same = runtime // 1000 == driver // 1000
        report.row("CUDA runtime", f"{cuda_version_text(runtime)}: runs on this driver ("
                   + ("same major version; minor versions are compatible)" if same
                      else "an older major version, which newer drivers run)"))
    if driver > 0 and (found := driver_problem(driver, 0)) is not None:
        report.problem(*found)


def check_gpu(lk, report: Report) -> None:
    """GPU name and compute capability; only on the "cuda" backend."""
    if getattr(lk, "backend", None) != "cuda":
        report.row("gpu", "none in use")
        return
    err, props = lk.rt.cudaGetDeviceProperties(0)
    if int(err) != 0:
        report.problem(f"cudaGetDeviceProperties(0) returned {err!r}",
                       "check `nvidia-smi`; the driver may need a reboot or reinstall")
        return
    report.row("gpu", f"{props.name.decode(errors='replace').rstrip(chr(0))} "
                      f"(compute capability {props.major}.{props.minor})")


def check_compiler(lk, report: Report, driver: int, found: dict[str, str | None]) -> None:
    """NVVM, NVRTC and libdevice: a GPU needs all three to compile kernels; the simulator none."""
    missing = [name for name in COMPILER_LIBRARIES if not found.get(name)]
    on_gpu = getattr(lk, "backend", None) == "cuda"
    for name in COMPILER_LIBRARIES:
        report.row(name, found.get(name) or ("not found" + ("" if on_gpu else
                                                            " (the simulator does not need it)")))
    if on_gpu and missing:
        extra = extra_for(driver) or "cu13"
        report.problem(
            f"numba-cuda cannot find {', '.join(missing)}, so no kernel can be compiled for the GPU",
            f"{install_command(extra)}: it brings them as NVIDIA wheels, no CUDA toolkit needed "
            "(or point CUDA_HOME at an installed CUDA toolkit)")


def check_packages(report: Report) -> None:
    """Installed versions, read from package metadata so nothing heavy is imported."""
    for name, required in PACKAGES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            if required:
                report.row(name, "not installed")
                report.problem(f"{name} is not installed", 'pip install -e .  (from the repository root)')
            else:
                report.row(name, "not installed (not needed: labkit uses cuda-bindings)"
                           if name == "cuda-python" else "not installed")
            continue
        report.row(name, version)
        if name == "numpy" and (found := numpy_problem(version)):
            report.problem(*found)


def check_cupti(lk, report: Report, driver: int) -> None:
    """CUPTI (``cupti`` from cupti-python) gives kernel traces; optional, GPU only."""
    if getattr(lk, "backend", None) == "cuda":
        ok, why = importlib.import_module("labkit.measure._cupti").available()
        if ok:
            report.row("CUPTI", "works (kernel traces available)")
        elif driver // 1000 == 12:
            report.row("CUPTI", "not available: no cupti-python works with numba-cuda 0.30 on "
                                "CUDA 12, so traces use CUDA event pairs")
        else:
            report.row("CUPTI", f"not available, so traces use CUDA event pairs ({why})")
    elif importlib.util.find_spec("cupti") is not None:
        report.row("CUPTI", "installed (used only on a GPU)")
    else:
        report.row("CUPTI", "not installed (used only on a GPU)")


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


def headline(lk, report: Report, driver: int) -> str:
    """One sentence in plain words: which backend is in use, and whether that is fine."""
    if getattr(lk, "backend_error", None) is not None:
        return "labkit could not choose a backend; the problem below says how to fix it."
    backend = getattr(lk, "backend", None)
    reason = getattr(lk, "backend_reason", None) or ""
    trouble = (f", but {len(report.problems)} thing(s) below need fixing"
               if report.problems else "")
    if backend == "cuda":
        gpu = dict(report.rows).get("gpu", "a GPU").split(" (")[0]
        if trouble:
            return f"The GPU ({gpu}) is in use{trouble}."
        return f"The GPU ({gpu}) is ready: the notebooks run on it and measure real times."
    fine = "and that is fine: every notebook runs on it"
    if reason.startswith("LABKIT_BACKEND=sim"):
        why = "LABKIT_BACKEND=sim asks for the simulator"
    elif reason.startswith("NUMBA_ENABLE_CUDASIM"):
        why = "NUMBA_ENABLE_CUDASIM=1 is set (unset it to use a GPU)"
    elif driver <= 0:
        return f"No NVIDIA driver here, so the simulator is in use, {fine}{trouble}."
    else:
        return (f"An NVIDIA driver is here but its GPU cannot be used, so the simulator is in "
                f"use{trouble or '; the notebooks still run on it'}.")
    return f"The simulator is in use because {why}, {fine}{trouble}."


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
    driver = driver_version()
    check_backend(lk, report)
    if getattr(lk, "backend_error", None) is None:
        try:
            check_gpu(lk, report)
        except Exception as exc:  # a driver fault is exactly what doctor is for: report it
            report.problem(f"querying the GPU failed: {type(exc).__name__}: {exc}",
                           "check `nvidia-smi`, or use LABKIT_BACKEND=sim")
    check_driver(report, driver, runtime_version())
    check_compiler(lk, report, driver, find_compiler_libraries())
    check_packages(report)
    check_cupti(lk, report, driver)
    check_calibration(lk, report)
    report.headline = headline(lk, report, driver)
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

