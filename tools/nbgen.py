"""What the notebook generators share: markdown and code cells, and writing a notebook.

Notebooks are written without outputs, kernelspec python3, with cell ids made from the file
name and the cell's position, so that running a generator again changes only what changed.
"""
from pathlib import Path

import nbformat as nbf

ROOT = Path(__file__).resolve().parents[1] / "notebooks"


def md(text):
    return nbf.v4.new_markdown_cell(text.strip("\n"))


def code(text, tags=()):
    c = nbf.v4.new_code_cell(text.strip("\n"))
    if tags:
        c.metadata["tags"] = list(tags)
    return c


def write(name, cells):
    """Write ``cells`` to ``notebooks/<name>`` (a path under notebooks/, e.g. solutions/x.ipynb)."""
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    stem = Path(name).stem.replace("_", "-")[:50]
    for i, c in enumerate(cells):
        c["id"] = f"{stem}-{i:02d}"
    nb.cells = cells
    path = ROOT / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbf.write(nb, path)
    print("wrote", path)
