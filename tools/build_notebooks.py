"""Build the course's notebooks from their sources: ``python tools/build_notebooks.py [--check]``.

Each notebook has one source, ``notebooks/src/NN_topic.py``, in jupytext's percent format
(JupyterLab opens it as a notebook; ``notebooks/src/jupytext.toml`` says how). A source's
cells carry their role as tags:

- ``starter``: the exercise as the learner gets it; only in ``notebooks/NN_topic.ipynb``;
- ``solution``: the worked answer; only in ``notebooks/solutions/NN_topic_solution.ipynb``;
- ``check``: the cell that checks the answer; in both, and in the learner's notebook tagged
  ``raises-exception`` as well, because there it fails until the exercise is done;
- no role: in both notebooks.

The course's GitHub address is configuration, read at build time from pyproject.toml's
``[project.urls] Repository`` (``https://github.com/<owner>/<name>``). When it is set, every
notebook opens with its "Open in Colab" badge and the one ``%pip install`` line its Colab
runtime needs, and notebook 00 gets a first code cell that installs the course in Colab (and
does nothing elsewhere). When it is unset, the notebooks carry neither: no page shows a placeholder address.
Sources carry no address: a badge line opening a source's first cell, or a Colab install cell,
is left out and made again from the configuration; any other GitHub address of the course in a
source is refused.

Both notebooks are written without outputs, with kernelspec python3 and cell ids made from the
notebook's name and the cell's position, so a build changes only what the source changed.
``--check`` writes nothing: it exits 1, naming each notebook that differs from its source.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import jupytext
import nbformat

from labkit.course import course_map

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "src"
ROLES = ("starter", "solution", "check")
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

PYPROJECT = ROOT / "pyproject.toml"
COLAB_BADGE_SVG = "https://colab.research.google.com/assets/colab-badge.svg"
# Where text names a GitHub repository of the course: a Colab link, a pip install from git, Binder.
REPO_MENTION = re.compile(r"(?:colab\.research\.google\.com/github/|git\+https://github\.com/|"
                          r"mybinder\.org/v2/gh/)([\w.-]+/[\w.-]+?)(?:\.git)?(?=[/\s\"'`)@]|$)")
GITHUB_URL = re.compile(r"^https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?$")
# A badge line as sources used to open with; the build makes it from the configuration instead.
BADGE_LINE = re.compile(r"^\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)[^\n]*\n*")
SETUP_NOTEBOOK = "00_"      # the notebook whose first code cell installs the course in Colab
INSTALL_CELL = '''\
# Only in Google Colab: install the course into this runtime (cu12 on a GPU runtime: Colab's
# drivers run CUDA 12). Anywhere else this cell does nothing.
import sys

if "google.colab" in sys.modules:
    import importlib, shutil, subprocess
    extra = "[cu12]" if shutil.which("nvidia-smi") else ""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                           f"cuda-graphs-lab{{extra}} @ git+https://github.com/{repo}"],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError("pip could not install the course:\\n" + done.stderr[-3000:])
    importlib.invalidate_caches()
    print(f"Colab: the course is installed (cuda-graphs-lab{{extra}})")
else:
    print("Not in Colab: this cell installs nothing (elsewhere, install as the README says)")'''


def course_repo(pyproject: Path = PYPROJECT) -> str | None:
    """``<owner>/<name>`` from pyproject.toml's ``[project.urls] Repository``; None when unset.

    Raises
    ------
    SourceError
        When it is set but is not a ``https://github.com/<owner>/<name>`` address.
    """
    try:
        import tomllib
    except ModuleNotFoundError:      # Python 3.10
        import tomli as tomllib
    urls = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("urls", {})
    url = urls.get("Repository")
    if not url:
        return None
    m = GITHUB_URL.match(url.strip())
    if not m:
        raise SourceError(f"pyproject.toml: [project.urls] Repository = {url!r} is not a GitHub "
                          "address; write https://github.com/<owner>/<name> (Colab and pip install "
                          "from it), or remove it to build the notebooks without a Colab badge")
    return m.group(1)


def colab_url(notebook: str, repo: str) -> str:
    """Where Colab opens ``notebook`` (``NN_topic.ipynb``) straight from the repository."""
    return f"https://colab.research.google.com/github/{repo}/blob/main/notebooks/{notebook}"


def colab_badge(notebook: str, repo: str) -> str:
    """The markdown "Open in Colab" badge of ``notebook``."""
    return f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(notebook, repo)})"


def colab_line(notebook: str, repo: str) -> str:
    """The line that opens ``notebook``'s first cell: its badge and what to run first in Colab."""
    if notebook.startswith(SETUP_NOTEBOOK):
        after = "In Colab, the first code cell installs the course."
    else:
        after = (f'In Colab, run `%pip install -q "cuda-graphs-lab[cu12] @ '
                 f'git+https://github.com/{repo}"` first.')
    return f"{colab_badge(notebook, repo)} {after}"


def binder_url(repo: str) -> str:
    """mybinder.org's launch of the repository, opening JupyterLab on the course."""
    return f"https://mybinder.org/v2/gh/{repo}/main?urlpath=lab/tree/notebooks"


def _is_install_cell(cell: nbformat.NotebookNode) -> bool:
    return (cell.cell_type == "code" and "google.colab" in cell.source
            and "git+https://github.com/" in cell.source)


def without_links(nb: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    """The source without its badge line and Colab install cell; refuses any other address."""
    cells = [c for c in nb.cells if not _is_install_cell(c)]
    if cells and cells[0].cell_type == "markdown":
        cells[0].source = BADGE_LINE.sub("", cells[0].source.lstrip(), count=1)
    for i, cell in enumerate(cells):
        m = REPO_MENTION.search(cell.source)
        if m:
            raise SourceError(f"{path.name}, cell {i + 1}: names a repository of the course "
                              f"({m.group(1)}); sources name none: the build adds the Colab "
                              "badge and install line from pyproject.toml's [project.urls] "
                              "Repository")
    nb.cells = cells
    return nb


def with_links(cells: list, notebook: str, repo: str | None) -> list:
    """``cells`` with the badge line and, in notebook 00, the Colab install cell, if ``repo``."""
    if not repo or not cells:
        return cells
    first = cells[0]
    if first.cell_type == "markdown":
        first.source = f"{colab_line(notebook, repo)}\n\n{first.source}"
    if notebook.startswith(SETUP_NOTEBOOK):
        cells.insert(1, nbformat.v4.new_code_cell(INSTALL_CELL.format(repo=repo)))
    return cells


class SourceError(ValueError):
    """A source whose tags the build cannot turn into two notebooks."""


def sources() -> list[Path]:
    """Every notebook source, in course order."""
    return sorted(SOURCES.glob("[0-9][0-9]_*.py"))


def read_source(path: Path) -> nbformat.NotebookNode:
    """The source as a notebook; raises SourceError when its role tags are inconsistent."""
    nb = jupytext.read(path, fmt="py:percent")
    counts = {role: 0 for role in ROLES}
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        roles = [t for t in tags if t in ROLES]
        if len(roles) > 1:
            raise SourceError(f"{path.name}, cell {i + 1}: tagged {roles}; give a cell one role")
        if "raises-exception" in tags:
            raise SourceError(
                f"{path.name}, cell {i + 1}: tagged raises-exception; JupyterLab's Run All stops "
                "at such a cell, so catch the error and print it instead (the build tags the "
                "learner's check cell itself)")
        for role in roles:
            counts[role] += 1
    if counts["check"] != 1:
        raise SourceError(f"{path.name}: {counts['check']} cells tagged check; tag exactly one, "
                          "the cell that checks the exercise")
    if not counts["starter"] or counts["starter"] != counts["solution"]:
        raise SourceError(f"{path.name}: {counts['starter']} starter and {counts['solution']} "
                          "solution cells; give each starter cell its solution cell")
    return without_links(nb, path)


def without_claims(source: str) -> str:
    """A code cell as the learner reads it: without the course's claim checks (``claims.x(...)``
    statements and the import of ``claims``). They check the prose on this machine, which is
    the tests' business: the solution notebook keeps them, and the suite runs it strictly."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source          # magics and the like: left as they are
    drop = set()
    for node in ast.walk(tree):
        is_claim = (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Attribute)
                    and isinstance(node.value.func.value, ast.Name)
                    and node.value.func.value.id == "claims")
        is_import = (isinstance(node, ast.ImportFrom)
                     and [a.asname or a.name for a in node.names] == ["claims"])
        if is_claim or is_import:
            drop.update(range(node.lineno, node.end_lineno + 1))
    if not drop:
        return source
    kept = "\n".join(line for i, line in enumerate(source.split("\n"), 1) if i not in drop)
    ast.parse(kept)            # a block left empty would be a SyntaxError: say so at build time
    return kept.rstrip("\n")


def cells_for(nb: nbformat.NotebookNode, role: str) -> list[nbformat.NotebookNode]:
    """The source's cells as the ``learner`` or the ``solution`` notebook holds them."""
    drop = "solution" if role == "learner" else "starter"
    out = []
    for cell in nb.cells:
        tags = list(cell.metadata.get("tags", []))
        if drop in tags:
            continue
        if role == "learner" and "check" in tags:
            tags.append("raises-exception")   # nbmake lets it fail; tests prove it does
        if cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(cell.source)
        else:
            new = nbformat.v4.new_code_cell(
                without_claims(cell.source) if role == "learner" else cell.source)
        if tags:
            new.metadata["tags"] = tags
        out.append(new)
    return out


def targets(source: Path) -> dict[str, Path]:
    """Where the learner's and the solution notebook of ``source`` go."""
    return {"learner": NOTEBOOKS / f"{source.stem}.ipynb",
            "solution": NOTEBOOKS / "solutions" / f"{source.stem}_solution.ipynb"}


def build(nb: nbformat.NotebookNode, role: str, target: Path, repo: str | None = None) -> str:
    """The text of the ``role`` notebook built from source ``nb``, as it is committed; with
    the Colab badge and install line of the course's repository ``repo`` (``<owner>/<name>``)."""
    out = nbformat.v4.new_notebook()
    out.metadata["kernelspec"] = dict(KERNELSPEC)
    out.metadata["language_info"] = {"name": "python"}
    stem = target.stem.replace("_", "-")[:50]
    notebook = target.name.replace("_solution.ipynb", ".ipynb")   # Colab opens the learner's
    out.cells = with_links(cells_for(nb, role), notebook, repo)
    for i, cell in enumerate(out.cells):
        cell["id"] = f"{stem}-{i:02d}"
    nbformat.validate(out)
    text = nbformat.writes(out)
    return text if text.endswith("\n") else text + "\n"


def expected() -> dict[Path, str]:
    """Every built notebook's path and text, and the course map's README (its table written
    from ``notebooks/course_map.json``)."""
    want = {}
    repo = course_repo()
    for source in sources():
        nb = read_source(source)
        for role, target in targets(source).items():
            want[target] = build(nb, role, target, repo)
    entries = course_map.load(NOTEBOOKS)
    if entries is not None:
        learners = {p.name for p in want if p.parent == NOTEBOOKS}
        mapped = {e.file for e in entries}
        if mapped != learners:
            raise SourceError(f"notebooks/{course_map.FILE} lists {sorted(mapped - learners)} "
                              f"without a source and lacks {sorted(learners - mapped)}: give "
                              "each notebook of notebooks/src/ one entry")
        readme = NOTEBOOKS / "README.md"
        try:
            want[readme] = course_map.with_table(readme.read_text(encoding="utf-8"), entries)
        except ValueError as exc:
            raise SourceError(f"notebooks/README.md: {exc}") from None
    return want


def stale(want: dict[Path, str]) -> list[Path]:
    """Committed course notebooks that no source builds any more."""
    built = set(want)
    found = list(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    found += (NOTEBOOKS / "solutions").glob("[0-9][0-9]_*_solution.ipynb")
    return sorted(p for p in found if p not in built)


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every built notebook; 0 when all match."""
    parser = argparse.ArgumentParser(
        prog="python tools/build_notebooks.py",
        description="Build notebooks/NN_topic.ipynb and notebooks/solutions/"
                    "NN_topic_solution.ipynb from notebooks/src/NN_topic.py.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a committed notebook differs from its source")
    args = parser.parse_args(argv)
    try:
        want = expected()
    except SourceError as exc:
        print(f"build_notebooks: {exc}", file=sys.stderr)
        return 2
    if not want:
        print(f"build_notebooks: no NN_topic.py in {SOURCES}", file=sys.stderr)
        return 2
    rel = lambda p: p.relative_to(ROOT).as_posix()  # noqa: E731
    differ = [p for p, text in want.items()
              if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if args.check:
        problems = [f"{rel(p)} differs from its source notebooks/src/"
                    f"{p.stem.removesuffix('_solution')}.py" if p.suffix == ".ipynb" else
                    f"{rel(p)}'s table differs from notebooks/{course_map.FILE}" for p in differ]
        problems += [f"{rel(p)} has no source in notebooks/src/" for p in stale(want)]
        if problems:
            print("\n".join(problems) + "\nrun `python tools/build_notebooks.py` and commit the "
                  "sources and notebooks together", file=sys.stderr)
            return 1
        print(f"{len(want)} files match their sources (the notebooks and the course map)")
        return 0
    for path in differ:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(want[path], encoding="utf-8")
        print("wrote", rel(path))
    for path in stale(want):
        print(f"note: {rel(path)} has no source; delete it if its notebook is gone", file=sys.stderr)
    print(f"{len(want)} files built (the notebooks and the course map), {len(differ)} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
