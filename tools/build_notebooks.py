"""Build the course's notebooks from their sources: ``python tools/build_notebooks.py [--check]``.

Each notebook has one source, ``notebooks/src/NN_topic.py``, in jupytext's percent format
(JupyterLab opens it as a notebook; ``notebooks/src/jupytext.toml`` says how). A source's
cells carry their role as tags:

- ``starter``: the exercise as the learner gets it; only in ``notebooks/NN_topic.ipynb``;
- ``solution``: the worked answer; only in ``notebooks/solutions/NN_topic_solution.ipynb``;
- ``check``: the cell that checks the answer; in both, and in the learner's notebook tagged
  ``raises-exception`` as well, because there it fails until the exercise is done;
- no role: in both notebooks.

Once the course's GitHub repository is set (`COURSE_REPO`, the one place it is named), every
source opens with its "Open in Colab" badge (`colab_badge`); while it is still the placeholder, a
source may leave the badge out, so no learner meets a placeholder address. Any other GitHub
address of the course in a source is refused, so a new repository means one edit here and the
lines the build then names.

Both notebooks are written without outputs, with kernelspec python3 and cell ids made from the
notebook's name and the cell's position, so a build changes only what the source changed.
``--check`` writes nothing: it exits 1, naming each notebook that differs from its source.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "src"
ROLES = ("starter", "solution", "check")
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

# The course's GitHub repository, OWNER/NAME. A PLACEHOLDER until the course is published: set
# the real one here, then `python tools/build_notebooks.py` names each line to change (the badge
# of every source, notebook 00's Colab install cell); a test checks the README's badges.
COURSE_REPO = "OWNER/cuda-graphs-lab"
COLAB_BADGE_SVG = "https://colab.research.google.com/assets/colab-badge.svg"
# Where a source names the course's own repository: a Colab link, a pip install from git, Binder.
REPO_MENTION = re.compile(r"(?:colab\.research\.google\.com/github/|git\+https://github\.com/|"
                          r"mybinder\.org/v2/gh/)([\w.-]+/[\w.-]+?)(?:\.git)?(?=[/\s\"'`)@]|$)")


def colab_url(notebook: str) -> str:
    """Where Colab opens ``notebook`` (``NN_topic.ipynb``) straight from the repository."""
    return f"https://colab.research.google.com/github/{COURSE_REPO}/blob/main/notebooks/{notebook}"


def colab_badge(notebook: str) -> str:
    """The markdown "Open in Colab" badge of ``notebook``."""
    return f"[![Open In Colab]({COLAB_BADGE_SVG})]({colab_url(notebook)})"


def binder_url() -> str:
    """mybinder.org's launch of the repository, opening JupyterLab on the course."""
    return f"https://mybinder.org/v2/gh/{COURSE_REPO}/main?urlpath=lab/tree/notebooks"


def repo_is_set() -> bool:
    """Whether `COURSE_REPO` names a real repository (not the ``OWNER/`` placeholder)."""
    return not COURSE_REPO.startswith("OWNER/")


def _check_links(nb: nbformat.NotebookNode, path: Path) -> None:
    """The source opens with its Colab badge (once the repository is set) and names no other
    repository of the course."""
    notebook = f"{path.stem}.ipynb"
    first = nb.cells[0].source.lstrip() if nb.cells else ""
    if repo_is_set() and not (nb.cells and nb.cells[0].cell_type == "markdown" and first.startswith(colab_badge(notebook))):
        raise SourceError(f"{path.name}: the first cell must open with its Colab badge; make its "
                          f"first line `# {colab_badge(notebook)}`")
    for i, cell in enumerate(nb.cells):
        for m in REPO_MENTION.finditer(cell.source):
            if m.group(1) != COURSE_REPO:
                raise SourceError(f"{path.name}, cell {i + 1}: names the course's repository as "
                                  f"{m.group(1)}; COURSE_REPO in tools/build_notebooks.py says "
                                  f"{COURSE_REPO}")


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
    _check_links(nb, path)
    return nb


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
            new = nbformat.v4.new_code_cell(cell.source)
        if tags:
            new.metadata["tags"] = tags
        out.append(new)
    return out


def targets(source: Path) -> dict[str, Path]:
    """Where the learner's and the solution notebook of ``source`` go."""
    return {"learner": NOTEBOOKS / f"{source.stem}.ipynb",
            "solution": NOTEBOOKS / "solutions" / f"{source.stem}_solution.ipynb"}


def build(nb: nbformat.NotebookNode, role: str, target: Path) -> str:
    """The text of the ``role`` notebook built from source ``nb``, as it is committed."""
    out = nbformat.v4.new_notebook()
    out.metadata["kernelspec"] = dict(KERNELSPEC)
    out.metadata["language_info"] = {"name": "python"}
    stem = target.stem.replace("_", "-")[:50]
    out.cells = cells_for(nb, role)
    for i, cell in enumerate(out.cells):
        cell["id"] = f"{stem}-{i:02d}"
    nbformat.validate(out)
    text = nbformat.writes(out)
    return text if text.endswith("\n") else text + "\n"


def expected() -> dict[Path, str]:
    """Every built notebook's path and text."""
    want = {}
    for source in sources():
        nb = read_source(source)
        for role, target in targets(source).items():
            want[target] = build(nb, role, target)
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
                    f"{p.stem.removesuffix('_solution')}.py" for p in differ]
        problems += [f"{rel(p)} has no source in notebooks/src/" for p in stale(want)]
        if problems:
            print("\n".join(problems) + "\nrun `python tools/build_notebooks.py` and commit the "
                  "sources and notebooks together", file=sys.stderr)
            return 1
        print(f"{len(want)} notebooks match their sources")
        return 0
    for path in differ:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(want[path], encoding="utf-8")
        print("wrote", rel(path))
    for path in stale(want):
        print(f"note: {rel(path)} has no source; delete it if its notebook is gone", file=sys.stderr)
    print(f"{len(want)} notebooks built, {len(differ)} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
