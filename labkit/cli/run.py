"""``python -m labkit run``: execute the course and build a browsable site from it.

Each notebook runs in a fresh ``python3`` kernel (nbclient), the way a learner's "Restart and
run all" would. A failing notebook is named with its cell and error; the others still run; the
exit code is 1. Into ``--out`` (``build/`` by default) go the executed notebooks and the
course site, built by Sphinx with myst-nb from the notebooks just executed (myst-nb executes
nothing itself) in sphinx-book-theme. The Sphinx project is packaged beside this module
(``labkit/cli/site/``: its ``conf.py`` and style sheet); this run adds the pages:

- ``index.html``, for learners: the course map (``notebooks/README.md``'s prose; each notebook from
  ``notebooks/course_map.json``)
  as a card with its goals and its key figure at a readable size (the figure of its cell tagged
  ``key-figure``, else the last figure it drew);
- one page per notebook with its outputs and figures (tracebacks without this machine's paths;
  a pending exercise check as a "Not solved yet" note, not a traceback), in a sidebar table of
  contents, with previous/next links and a search page;
- ``report.html``, the build report: each notebook's status, run time and backend/device;
- the files a notebook's markdown links to by a relative path (a trace it wrote, a script beside
  it), copied beside its page, so each link downloads the file (`linked_files`).
"""
from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from labkit.course import course_map as map_data

PACKAGE_ROOT = Path(__file__).resolve().parents[2]   # labkit/cli/run.py -> the checkout
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SITE_SOURCE = "_site_source"    # inside --out: the Sphinx project this run writes
SITE_TITLE = "CUDA Graphs Lab"

KEY_FIGURE_TAG = "key-figure"    # the cell whose figure the index shows for its notebook

# Printed by a throw-away interpreter with the kernels' environment, so the index says what
# the kernels chose even for a notebook that failed before its first output. labkit's own
# refusal (LABKIT_BACKEND=cuda without a GPU) comes back as its message alone, exit 3.
PROBE = (
    "import sys\n"
    "try:\n"
    "    import labkit\n"
    "except Exception as exc:\n"
    "    print(exc, file=sys.stderr)\n"
    "    sys.exit(3)\n"
    "name = getattr(labkit, 'device_name', None)\n"
    "print(getattr(labkit, 'backend', '?'))\n"
    "print(name() if callable(name) else '?')\n"
)

SITE_TEMPLATE = Path(__file__).resolve().parent / "site"   # conf.py and _static/, packaged
REPORT_PAGE = "report"
NOT_SOLVED = "NotSolvedYet"      # labkit.course.exercises' pending check: a note, not a traceback


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


class ProbeFailed(Exception):
    """``import labkit`` fails in the kernels' environment: every notebook would fail the same."""


def probe_device(env: dict[str, str]) -> str:
    """``"<backend> / <device>"`` as a kernel with ``env`` will see it.

    Raises
    ------
    ProbeFailed
        With labkit's message (or the import error's last line) when ``import labkit`` fails
        there, e.g. ``LABKIT_BACKEND=cuda`` on a machine without a usable GPU.
    """
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300, cwd=PACKAGE_ROOT)
    if done.returncode != 0:
        raise ProbeFailed((done.stderr.strip().splitlines() or ["import labkit failed"])[-1])
    backend, device = (done.stdout.strip().splitlines() + ["?", "?"])[:2]
    return f"{backend} / {device}"


def last_figure(nb) -> str | None:
    """The base64 PNG of the notebook's key figure: the last image of the last cell tagged
    ``key-figure`` that drew one, else the notebook's last image."""
    figure = tagged = None
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            png = output.get("data", {}).get("image/png")
            if png:
                figure = png.replace("\n", "")
                if KEY_FIGURE_TAG in cell.get("metadata", {}).get("tags", []):
                    tagged = figure
    return tagged or figure


def _machine_prefixes() -> list[tuple[str, str]]:
    """(path prefix, what a page shows instead), longest first: site-packages, the standard
    library, the checkout, the home folder."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    libraries = [paths["purelib"], paths["platlib"], *getattr(site, "getsitepackages", list)(),
                 site.getusersitepackages()]
    pairs = [(p, "site-packages/") for p in libraries]
    pairs += [(paths["stdlib"], "python/"), (str(PACKAGE_ROOT), ""), (str(Path.cwd()), ""),
              (str(Path.home()), "~/")]
    short = {}
    for p, r in pairs:
        for spelling in {p, str(Path(p).resolve())} if p else ():   # as written, and resolved
            prefix = spelling.rstrip("/") + "/"
            if prefix != "/":              # the root folder is in every path: leave it
                short.setdefault(prefix, r)   # the first (most specific) name for a folder wins
    return sorted(short.items(), key=lambda pr: -len(pr[0]))


def strip_machine_paths(nb):
    """Rewrite the error and stderr outputs of ``nb`` without this machine's paths, for the
    site: ``/home/me/course/labkit/_capture.py`` shows as ``labkit/_capture.py``, a library
    file as ``site-packages/numba/...``. Returns the function that does it to a string."""
    prefixes = _machine_prefixes()

    def clean(text: str) -> str:
        for prefix, short in prefixes:
            text = text.replace(prefix, short)
        return text
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [clean(line) for line in output.get("traceback", [])]
                output["evalue"] = clean(output.get("evalue", ""))
            elif output.get("output_type") == "stream" and output.get("name") == "stderr":
                output["text"] = clean(output.get("text", ""))
    return clean


def kernel_config():
    """nbclient's configuration: the kernel talks to its manager encrypted (CurveZMQ) where
    jupyter_client and ipykernel support that. ipykernel then does not print its
    "[IPKernelApp] WARNING | Kernel is running over TCP without encryption" line into the
    run's output, once per notebook; older versions, which cannot encrypt, do not print it."""
    import zmq
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    config = Config()
    if KernelManager.class_traits().get("transport_encryption") is not None and zmq.has("curve"):
        # "auto": keys are provisioned when the kernelspec declares curve support (ipykernel 7)
        config.KernelManager.transport_encryption = "auto"
    return config


def title_of(nb, path: Path) -> str:
    """The notebook's first markdown heading, else its file name."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return path.stem


def execute(path: Path, out: Path, env: dict[str, str], timeout: int) -> Result:
    """Run one notebook in a fresh kernel; write its executed copy into ``out``."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    result = Result(path=path, title=title_of(nb, path))
    started = []
    client = NotebookClient(
        nb, config=kernel_config(), timeout=timeout, kernel_name="python3",
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
    result.brief = strip_machine_paths(nb)(result.brief)   # the index shows it too
    nbformat.write(nb, out / path.name)
    return result


def status_table(results: list[Result], device: str) -> str:
    """The build report's table, as HTML: one row per notebook with status, time and backend."""
    rows = []
    for r in results:
        status = ('<span class="ok">ok</span>' if r.status == "ok" else
                  f'<span class="failed">failed at cell {r.cell}</span>'
                  f'<pre>{html.escape(r.brief)}</pre>')
        rows.append(
            f'<tr><td><a href="{html.escape(r.path.stem)}.html">{html.escape(r.path.stem)}</a>'
            f'<div>{html.escape(r.title)}</div></td><td>{status}</td>'
            f'<td>{r.seconds:.1f} s</td><td>{html.escape(device)}</td></tr>')
    return ('<table class="labkit-run"><tr><th>notebook</th><th>status</th><th>run time</th>'
            '<th>backend / device</th></tr>\n' + "\n".join(rows) + "\n</table>")


def report_page(results: list[Result], device: str) -> str:
    """The site's ``report.md``: how this build ran, for whoever built it."""
    failed = sum(r.status != "ok" for r in results)
    total = sum(r.seconds for r in results)
    return (f"# Build report\n\n"
            f"This site was built by `python -m labkit run`: {len(results) - failed} of "
            f"{len(results)} notebooks ran through, {failed} failed, in {total:.0f} s of "
            f"execution. Backend / device: {device}.\n\n"
            f"```{{raw}} html\n{status_table(results, device)}\n```\n")


LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
CARDS = "<!-- the course map's cards -->"


def _card(number: str, name: str, figure: str | None, minutes: int | None = None,
          prerequisites: str = "", goals: str = "") -> str:
    """One notebook of the course map as a card: title, minutes and prerequisites, goals, figure."""
    meta = []
    if minutes:
        meta.append(f"about {minutes} minutes")
    if prerequisites:
        meta.append(f"after {prerequisites}")
    parts = [f"**{number} · {name}**" if number else f"**{name}**"]
    if meta:
        parts.append("*" + ", ".join(meta) + "*")
    if goals:
        parts.append(f"You will be able to {goals}.")
    if figure:
        alt = f"key figure of notebook {number or name}"
        parts.append(f'```{{raw}} html\n<img class="labkit-key-figure" alt="{html.escape(alt)}" '
                     f'src="data:image/png;base64,{figure}">\n```')
    body = "\n\n".join(parts)
    return f"````{{container}} labkit-card\n{body}\n````"


def course_map(readme: Path, pages: set[str], figures: dict[str, str] | None = None) -> str:
    """``notebooks/README.md`` for the site: headings one level down, links to pages kept, and
    the course map (``notebooks/course_map.json``, which also writes the README's table) as one
    card per notebook, with its key figure (``figures``: page name to base64 PNG).

    A link to a notebook that this run did not execute, or to a folder such as ``solutions/``,
    has no page in the site; it stays as its text.
    """
    if not readme.is_file():
        return ""
    figures = figures or {}
    text = readme.read_text(encoding="utf-8")
    entries = map_data.load(readme.parent)
    cards = None
    if entries is not None and map_data.BEGIN in text and map_data.END in text:
        head, rest = text.split(map_data.BEGIN, 1)
        text = head + CARDS + rest.split(map_data.END, 1)[1]
        cards = "\n\n".join(
            _card(e.number, f"[{e.title}]({e.file})", figures.get(e.file), e.minutes,
                  e.prerequisites, e.goals) for e in entries)
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            line = "#" + line
        lines.append(line)
    body = "\n".join(lines)
    if cards is not None:
        body = body.replace(CARDS, f"\n{cards}\n")

    def keep(m):
        return m.group(0) if m.group(2) in pages or "://" in m.group(2) else m.group(1)
    return LINK.sub(keep, body)


def landing_page(results: list[Result], readme: Path) -> str:
    """The site's ``index.md``, for learners: the course map, and the table of contents."""
    pages = {r.path.name for r in results}
    figures = {r.path.name: r.figure for r in results if r.figure}
    body = course_map(readme, pages, figures)
    if not body:       # no course map beside the notebooks: a card for each
        body = "\n\n".join(_card("", f"[{r.title}]({r.path.name})", r.figure)
                             for r in results)
    toc = "\n".join([r.path.stem for r in results] + [REPORT_PAGE])
    return (f"# {SITE_TITLE}\n\n{body}\n\n"
            f"```{{toctree}}\n:hidden:\n:maxdepth: 1\n\n{toc}\n```\n")


def not_solved_boxes(nb) -> int:
    """Show each pending exercise check of ``nb`` (a ``NotSolvedYet`` error) as a friendly
    "Not solved yet" note instead of a traceback; returns how many there were."""
    import nbformat

    count = 0
    for cell in nb.cells:
        for k, output in enumerate(cell.get("outputs", [])):
            if output.get("output_type") == "error" and output.get("ename") == NOT_SOLVED:
                message = ANSI.sub("", output.get("evalue", "")).strip()
                text = (f"Not solved yet. This check passes once the exercise above is done. "
                        f"It found:\n{message}")
                box = ('<div class="labkit-not-solved"><p><strong>Not solved yet.</strong> '
                       'This check passes once the exercise above is done. It found:</p>'
                       f'<pre>{html.escape(message)}</pre></div>')
                cell.outputs[k] = nbformat.v4.new_output(
                    "display_data", data={"text/html": box, "text/plain": text})
                count += 1
    return count


LOCAL_LINK = re.compile(r"\]\(([^)\s:#]+)\)")     # [text](path), no scheme, no anchor


def linked_files(nb, folder: Path) -> list[str]:
    """Relative paths of the files that ``nb``'s markdown links to and that exist under
    ``folder`` (the notebook's own folder): a trace the notebook wrote, a script beside it.
    Links to notebooks (other pages) and links that leave ``folder`` are not files to copy."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for rel in LOCAL_LINK.findall(cell.source):
            path = (folder / rel).resolve()
            if (rel.endswith((".ipynb", ".md")) or not path.is_file()
                    or not path.is_relative_to(folder.resolve())):
                continue
            found.append(rel)
    return list(dict.fromkeys(found))


def build_site(results: list[Result], device: str, out: Path) -> tuple[bool, str]:
    """Write the Sphinx project for ``results`` into ``out/_site_source`` and build it into ``out``.

    Returns
    -------
    (ok, message)
        ``ok`` is False when Sphinx failed; ``message`` then holds the end of its output.
    """
    import nbformat

    src = out / SITE_SOURCE
    shutil.rmtree(src, ignore_errors=True)    # only this run's notebooks belong in the site
    src.mkdir(parents=True)
    shutil.copy(SITE_TEMPLATE / "conf.py", src / "conf.py")
    for r in results:
        nb = nbformat.read(out / r.path.name, as_version=4)
        not_solved_boxes(nb)
        nbformat.write(nb, src / r.path.name)
        for rel in linked_files(nb, r.path.parent):      # myst-nb makes each link a download
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(r.path.parent / rel, src / rel)
    # The course map sits beside the notebooks (notebooks/README.md); tiny test runs have none.
    readme = results[0].path.parent / "README.md" if results else Path("README.md")
    (src / "index.md").write_text(landing_page(results, readme), encoding="utf-8")
    (src / f"{REPORT_PAGE}.md").write_text(report_page(results, device), encoding="utf-8")
    warnings = out / "sphinx-warnings.log"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-q", "-j", "auto",
         # the style sheet from the package: a static folder inside the site would be copied
         # into itself (the source folder sits in --out)
         "-D", f"html_static_path={SITE_TEMPLATE / '_static'}",
         "-d", str(out / ".doctrees"), "-w", str(warnings), str(src), str(out)],
        capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
        return False, f"sphinx exited with {done.returncode}:\n{tail}"
    return True, ""


def out_problem(out: Path) -> str | None:
    """Make the site folder ``out``; what is wrong with it, in words, if that cannot be done."""
    if out.exists() and not out.is_dir():
        return (f"--out {out} is a file, not a folder: the site needs a folder of its own; "
                f"give another path (the default is build/)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return (f"cannot make the site folder --out {out} ({exc.strerror or exc}): give a "
                f"folder you can write to (the default is build/)")
    if not os.access(out, os.W_OK | os.X_OK):
        return f"cannot write into --out {out} (permission denied): give a folder you can write to"
    return None


def main(argv: list[str] | None = None) -> int:
    """Execute notebooks, write the site into ``--out``; 0 if all ran, 1 if any failed.

    Parameters
    ----------
    argv : list of str, optional
        ``[NOTEBOOK ...] [--backend sim|cuda] [--out DIR] [--timeout S]``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m labkit run",
        description="Execute the course notebooks (a fresh kernel each) and build the course "
                    "site from them (Sphinx, myst-nb): index.html and one page per notebook.")
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
    problem = out_problem(args.out)
    if problem:
        print(f"labkit run: {problem}", file=sys.stderr)
        return 2
    env = kernel_env(args.backend)
    try:
        device = probe_device(env)
    except ProbeFailed as exc:
        # The kernels would each fail the same way: say it once, before starting any.
        print(f"labkit run: no notebook was started: {exc}\n"
              "`python -m labkit doctor` checks this machine and names the fix.", file=sys.stderr)
        return 2
    results = []
    bar = tqdm(paths, unit="notebook", file=sys.stderr)
    for path in bar:
        bar.set_description(path.stem)
        result = execute(path, args.out, env, args.timeout)
        if result.status != "ok":
            tqdm.write(f"FAILED {path.name}, cell {result.cell}:\n{result.error}\n", file=sys.stderr)
        results.append(result)
    bar.close()
    t0 = time.perf_counter()
    site_ok, message = build_site(results, device, args.out)
    if not site_ok:
        print(f"labkit run: the site was not built; {message}", file=sys.stderr)
    failed = [r.path.name for r in results if r.status != "ok"]
    print(f"{len(results) - len(failed)} ok, {len(failed)} failed; site: "
          f"{args.out / 'index.html'}, build report {args.out / (REPORT_PAGE + '.html')} "
          f"(built in {time.perf_counter() - t0:.0f} s)"
          + (f"\nfailed: {', '.join(failed)}" if failed else ""))
    return 1 if failed or not site_ok else 0
