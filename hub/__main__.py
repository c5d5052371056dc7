"""``python -m hub {check,bench,links}``: the instructor's hub tools, from the repository root."""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def check(argv: list[str]) -> int:
    """Start the one-machine recipe here, log learners in, run a notebook in each, stop it all."""
    parser = argparse.ArgumentParser(prog="python -m hub check", description=check.__doc__)
    parser.add_argument("--course", default=str(ROOT), help="the course folder (default: this "
                        "repository)")
    parser.add_argument("--config", default=str(ROOT / "hub/one-machine/jupyterhub_config.py"),
                        help="the JupyterHub configuration to try (default: the recipe)")
    parser.add_argument("--learners", type=int, default=3)
    parser.add_argument("--notebook", default="solutions/00_setup_solution",
                        help="under cuda-graphs-lab/notebooks/ (default solutions/00_setup_solution)")
    args = parser.parse_args(argv)
    from hub.course import CourseError
    from hub.local import HubError, LocalHub
    from hub.remote import NotebookFailed

    names = [f"learner{i + 1}" for i in range(args.learners)]
    t0 = time.monotonic()
    try:
        with LocalHub(course=args.course, recipe=Path(args.config)) as hub:
            print(f"hub up at {hub.url} ({time.monotonic() - t0:.1f} s)")
            for name in names:
                hub.login(name)
            with ThreadPoolExecutor(len(names)) as pool:
                tokens = dict(zip(names, pool.map(hub.start_server, names)))
            print(f"{len(names)} learners logged in, servers up ({time.monotonic() - t0:.1f} s)")
            with ThreadPoolExecutor(len(names)) as pool:
                runs = list(pool.map(lambda n: hub.run(n, tokens[n], args.notebook), names))
            for name, run in zip(names, runs):
                print(f"{name}: {args.notebook} ran in {run.total_s:.1f} s")
    except (CourseError, HubError, NotebookFailed) as e:
        print(f"hub check failed: {e}", file=sys.stderr)
        return 1
    print(f"hub stopped, no process left ({time.monotonic() - t0:.1f} s)")
    return 0


def bench(argv: list[str]) -> int:
    from hub.bench import main
    return main(argv)


def links(argv: list[str]) -> int:
    """Print one nbgitpuller link per course notebook."""
    parser = argparse.ArgumentParser(prog="python -m hub links", description=links.__doc__)
    parser.add_argument("--hub", required=True, help="the hub's address, https://...")
    parser.add_argument("--repo", help="the course repository's clone URL (default: "
                        "pyproject.toml's [project.urls] Repository)")
    parser.add_argument("--branch", default="main",
                        help="the branch or tag the hub's image was built from (default main)")
    args = parser.parse_args(argv)
    from hub.links import nbgitpuller_link, repository_url
    try:
        if args.repo is None:
            args.repo = repository_url(ROOT / "pyproject.toml")
        for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
            print(f"{nb.stem}: {nbgitpuller_link(args.hub, args.repo, nb.stem, args.branch)}")
    except ValueError as e:
        print(f"links: {e}", file=sys.stderr)
        return 2
    return 0


VERBS = {"check": check, "bench": bench, "links": links}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in VERBS:
        print("usage: python -m hub {check,bench,links} [--help]\n"
              "  check  start the one-machine recipe here, run a notebook for a few learners\n"
              "  bench  learners per core on the simulator (the capacity benchmark)\n"
              "  links  nbgitpuller links that open each notebook", file=sys.stderr)
        return 2
    return VERBS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
