"""``python -m labkit run``: execute the course and build a browsable site from it.

Each notebook runs in a fresh ``python3`` kernel (nbclient), the way a learner's "Restart and
run all" would. Into ``--out`` (``build/`` by default) go the executed notebooks, one HTML page
per notebook (nbconvert, figures embedded) and ``index.html``: the course map with each
notebook's status, run time, backend/device and its key figure (the last figure it drew).
A failing notebook is named with its cell and error; the others still run; the exit code is 1.
"""
from __future__ import annotations

import argparse
import html
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]   # labkit/cli/run.py -> the checkout
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Printed by a throw-away interpreter with the kernels' environment, so the index says what
# the kernels chose even for a notebook that failed before its first output.
PROBE = (
    "import labkit\n"
    "name = getattr(labkit, 'device_name', None)\n"
    "print(getattr(labkit, 'backend', '?'))\n"
    "print(name() if callable(name) else '?')\n"
)


@dataclass
class Result:
    """How one notebook went."""

    path: Path
    status: str = "ok"          # "ok" or "failed"
    seconds: float = 0.0
    cell: int | None = None     # 1-based index of the failing cell, counting markdown cells
    error: str = ""             # the full error, traceback included, as the terminal shows it
    brief: str = ""             # its last line, e.g. "ValueError: boom", for the index
    figure: str | None = None   # base64 PNG of the notebook's last image output
    title: str = ""


def notebook_dir() -> Path:
    """The course's ``notebooks/``: beside the labkit package, else in the current directory."""
    beside = PACKAGE_ROOT / "notebooks"
    return beside if beside.is_dir() else Path.cwd() / "notebooks"


def resolve(names: list[str]) -> list[Path]:
    """Paths of the notebooks to run: each name is a path or a prefix such as ``02``.

    Raises
    ------
    SystemExit
        With the course's notebook names, when a name matches nothing.
    """
    folder = notebook_dir()
    if not names:
        return sorted(folder.glob(NOTEBOOK_GLOB))
    paths = []
    for name in names:
        if Path(name).is_file():
            paths.append(Path(name))
            continue
        matches = sorted(folder.glob(f"{Path(name).stem}*.ipynb"))
        if len(matches) != 1:
            known = ", ".join(p.stem for p in sorted(folder.glob(NOTEBOOK_GLOB))) or "none"
            raise SystemExit(f"labkit run: {name!r} names {len(matches)} notebooks in {folder}; "
                             f"give a path or one of: {known}")
        paths.append(matches[0])
    return paths


def kernel_env(backend: str | None) -> dict[str, str]:
    """The environment each kernel starts with."""
    env = dict(os.environ)
    # Kernels must draw inline PNGs for the pages and the index; an inherited Agg would not.
    env.pop("MPLBACKEND", None)
    if backend:
        env["LABKIT_BACKEND"] = backend
        if backend == "cuda":
            # labkit sets NUMBA_ENABLE_CUDASIM=1 in this process when it chose "sim"; passed
            # on, it would make every kernel simulate and labkit refuse the "cuda" backend.
            env.pop("NUMBA_ENABLE_CUDASIM", None)
    return env


def probe_device(env: dict[str, str]) -> str:
    """``"<backend> / <device>"`` as a kernel with ``env`` will see it, or the import error."""
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300, cwd=PACKAGE_ROOT)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["import labkit failed"])[-1]
        return f"unavailable ({last})"
    backend, device = (done.stdout.strip().splitlines() + ["?", "?"])[:2]
    return f"{backend} / {device}"


def last_figure(nb) -> str | None:
    """The base64 PNG of the notebook's last image output: its key figure."""
    figure = None
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                figure = png.replace("\n", "")
    return figure


def title_of(nb, path: Path) -> str:
    """The notebook's first markdown heading, else its file name."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return path.stem


def execute(path: Path, out: Path, env: dict[str, str], timeout: int) -> Result:
    """Run one notebook in a fresh kernel; write its executed copy and HTML page into ``out``."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    result = Result(path=path, title=title_of(nb, path))
    started = []
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3",
        resources={"metadata": {"path": str(path.parent.resolve())}},
        # The last cell started is the one that failed; nbclient's own error names no index.
        on_cell_start=lambda cell, cell_index: started.append(cell_index))
    t0 = time.perf_counter()
    try:
        client.execute(env=env)
    except Exception as exc:  # a cell error, a timeout, or a dead kernel: report, go on
        result.status = "failed"
        result.cell = started[-1] + 1 if started else None
        result.error = ANSI.sub("", str(exc)).strip() or type(exc).__name__
        ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
        result.brief = (f"{ename}: {evalue}" if ename else result.error.splitlines()[-1])
    result.seconds = time.perf_counter() - t0
    result.figure = last_figure(nb)
    nbformat.write(nb, out / path.name)
    body, _ = HTMLExporter(embed_images=True).from_notebook_node(nb)
    (out / f"{path.stem}.html").write_text(body, encoding="utf-8")
    return result


def index_html(results: list[Result], device: str) -> str:
    """The course map: one row per notebook with status, time, backend/device and figure."""
    rows = []
    for r in results:
        status = ('<span class="ok">ok</span>' if r.status == "ok" else
                  f'<span class="failed">failed at cell {r.cell}</span>'
                  f'<pre>{html.escape(r.brief)}</pre>')
        figure = (f'<img src="data:image/png;base64,{r.figure}" alt="key figure of {r.path.stem}">'
                  if r.figure else "")
        rows.append(
            f'<tr><td><a href="{html.escape(r.path.stem)}.html">{html.escape(r.path.stem)}</a>'
            f'<div>{html.escape(r.title)}</div></td><td>{status}</td>'
            f'<td>{r.seconds:.1f} s</td><td>{html.escape(device)}</td><td>{figure}</td></tr>')
    failed = sum(r.status != "ok" for r in results)
    summary = f"{len(results) - failed} ok, {failed} failed"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>CUDA Graphs Lab: course run</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; }}
table {{ border-collapse: collapse; }}
td, th {{ border-bottom: 1px solid #ddd; padding: .5rem 1rem; text-align: left; vertical-align: top; }}
td div {{ color: #555; font-size: .9em; }}
img {{ max-width: 320px; max-height: 200px; }}
.ok {{ color: #1a7f37; font-weight: bold; }}
.failed {{ color: #cf222e; font-weight: bold; }}
pre {{ max-width: 40rem; white-space: pre-wrap; font-size: .8em; }}
</style></head><body>
<h1>CUDA Graphs Lab</h1>
<p>Executed course: {summary}. Backend / device: {html.escape(device)}.</p>
<table><tr><th>notebook</th><th>status</th><th>run time</th><th>backend / device</th><th>key figure</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""


def main(argv: list[str] | None = None) -> int:
    """Execute notebooks, write the site into ``--out``; 0 if all ran, 1 if any failed.

    Parameters
    ----------
    argv : list of str, optional
        ``[NOTEBOOK ...] [--backend sim|cuda] [--out DIR] [--timeout S]``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m labkit run",
        description="Execute the course notebooks (a fresh kernel each) and build a site: "
                    "executed notebooks, one HTML page each, and index.html.")
    parser.add_argument("notebooks", nargs="*", metavar="NOTEBOOK",
                        help=f"paths or name prefixes such as 02 (default: every "
                             f"{NOTEBOOK_GLOB} in notebooks/, in order)")
    parser.add_argument("--backend", choices=["sim", "cuda"],
                        help="LABKIT_BACKEND for the kernels (default: the environment's, auto)")
    parser.add_argument("--out", type=Path, default=Path("build"), help="site folder (build)")
    parser.add_argument("--timeout", type=int, default=600, metavar="S",
                        help="seconds one cell may run (600)")
    args = parser.parse_args(argv)

    from tqdm import tqdm

    paths = resolve(args.notebooks)
    if not paths:
        print(f"labkit run: no {NOTEBOOK_GLOB} in {notebook_dir()}; run from the repository "
              "root or name the notebooks", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    env = kernel_env(args.backend)
    device = probe_device(env)
    results = []
    bar = tqdm(paths, unit="notebook", file=sys.stderr)
    for path in bar:
        bar.set_description(path.stem)
        result = execute(path, args.out, env, args.timeout)
        if result.status != "ok":
            tqdm.write(f"FAILED {path.name}, cell {result.cell}:\n{result.error}\n", file=sys.stderr)
        results.append(result)
    bar.close()
    (args.out / "index.html").write_text(index_html(results, device), encoding="utf-8")
    failed = [r.path.name for r in results if r.status != "ok"]
    print(f"{len(results) - len(failed)} ok, {len(failed)} failed; site: {args.out / 'index.html'}"
          + (f"\nfailed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
