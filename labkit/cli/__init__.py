"""``python -m labkit {doctor,bench,calibrate,run,measurements}``: the course's command line.

``labkit/__main__.py`` only calls `main` here. Each verb lives in its own module of this
package (``labkit/cli/doctor.py``, ...) with a ``main(argv) -> int``; the maintainers'
procedures behind bench, calibrate and measurements are in `labkit.toolbox`. They are imported only once
chosen, because ``import labkit`` picks the backend (and may probe a GPU): ``--help`` must stay
instant and must work even where the backend cannot be chosen.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Python runs labkit/__main__.py as ``__main__`` inside the package, so ``labkit/__init__.py`` is
# imported first anyway; that is the package's business. What this module avoids is importing
# the verb modules (numba, nbclient, matplotlib...) before one is chosen.
VERBS = {
    "doctor": "check this machine: backend, GPU, versions, calibration; each problem with its fix",
    "bench": "the chain benchmark: eager vs graph per kernel, each graph phase (--json, --wrapper)",
    "calibrate": "measure the simulator's cost model on a real GPU and save it in the package",
    "run": "execute the course notebooks and build the browsable site (build/index.html)",
    "measurements": "maintainers: write docs/measurements.md from docs/measurements/*.json "
                    "(--check, --draft)",
}

# run gives each kernel its own LABKIT_BACKEND, and doctor reports the error itself.
NEEDS_THIS_BACKEND = {"bench", "calibrate"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m labkit",
        description="CUDA Graphs Lab helper commands. `python -m labkit VERB --help` for a verb's options.")
    sub = parser.add_subparsers(dest="verb", metavar="{" + ",".join(VERBS) + "}")
    for verb, text in VERBS.items():
        # add_help=False: the verb's own parser answers `VERB --help` with its real options.
        sub.add_parser(verb, help=text, description=text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` to ``labkit.cli.<verb>.main(rest)`` and return its exit code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``python -m labkit``; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The verb's exit code (2 for a usage error, as argparse does).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv or argv[0] not in VERBS:
        # Only a bad or missing verb, or -h, reaches argparse here; it prints and exits.
        args = parser.parse_args(argv)
        if args.verb is None:
            parser.print_help()
            return 2
    verb, rest = argv[0], argv[1:]
    # labkit may hold back a backend error at import when started as `python -m labkit`, so
    # that doctor can report it; verbs that work on this process's backend must still refuse.
    error = getattr(sys.modules.get("labkit"), "backend_error", None)
    if error is not None and verb in NEEDS_THIS_BACKEND:
        print(f"python -m labkit {verb}: {error}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(f"labkit.cli.{verb}")
    except ModuleNotFoundError as exc:
        if exc.name != f"labkit.cli.{verb}":
            raise  # a dependency of the verb is missing: its own message says which
        print(f"python -m labkit {verb}: this checkout has no labkit/cli/{verb}.py; "
              "update it (git pull) or reinstall with `pip install -e .`", file=sys.stderr)
        return 2
    code = module.main(rest)
    return int(code or 0)
