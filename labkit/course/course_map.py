"""The course map as data: ``notebooks/course_map.json``, one entry per notebook.

Two things are made from it: the table of ``notebooks/README.md`` (between `BEGIN` and `END`,
written by ``tools/build_notebooks.py``, checked by its ``--check``) and the cards of the site's
index (``python -m labkit run``). So a notebook's title, minutes, prerequisites and goals are
typed once, here, and nothing parses the README's markdown.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Entry", "load", "table", "with_table", "FILE", "BEGIN", "END"]

FILE = "course_map.json"
BEGIN = "<!-- course map: written from course_map.json by tools/build_notebooks.py -->"
END = "<!-- end of the course map -->"
FIELDS = ("number", "title", "file", "minutes", "prerequisites", "goals")


@dataclass(frozen=True)
class Entry:
    """One notebook on the map: ``number`` ("07"), ``title``, ``file`` (beside the map),
    ``minutes`` for a careful first reading, ``prerequisites`` and ``goals`` ("you will be able
    to …", without the leading words)."""
    number: str
    title: str
    file: str
    minutes: int
    prerequisites: str
    goals: str


def load(folder: Path) -> list[Entry] | None:
    """The entries of ``folder/course_map.json``, in order; None when there is no such file.

    Raises
    ------
    ValueError
        Naming the entry and the field, when an entry lacks a field, has one it should not, or
        its minutes are not a positive whole number.
    """
    path = Path(folder) / FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); fix the file") from None
    entries = []
    for i, raw in enumerate(data.get("notebooks", []), 1):
        where = f"{path.name}, notebook {i} ({raw.get('file', '?')})"
        missing = [f for f in FIELDS if f not in raw]
        extra = sorted(set(raw) - set(FIELDS))
        if missing or extra:
            raise ValueError(f"{where}: " + "; ".join(
                ([f"missing {missing}"] if missing else []) + ([f"unknown {extra}"] if extra else []))
                + f"; each entry has exactly {list(FIELDS)}")
        if not isinstance(raw["minutes"], int) or raw["minutes"] < 1:
            raise ValueError(f"{where}: minutes must be a whole number of 1 or more, got "
                             f"{raw['minutes']!r}")
        entries.append(Entry(**raw))
    return entries


def table(entries: list[Entry]) -> str:
    """The README's markdown table of ``entries``."""
    rows = ["| # | notebook | minutes | prerequisites | you will be able to |",
            "| --- | --- | --- | --- | --- |"]
    rows += [f"| {e.number} | [{e.title}]({e.file}) | {e.minutes} | {e.prerequisites} | "
             f"{e.goals} |" for e in entries]
    return "\n".join(rows)


def with_table(readme: str, entries: list[Entry]) -> str:
    """``readme`` with the text between `BEGIN` and `END` replaced by the table of ``entries``.

    Raises
    ------
    ValueError
        When the README lacks either marker: add both lines where the table goes.
    """
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"the course map's README has no {BEGIN!r} … {END!r} lines; put both "
                         "where the table of notebooks goes")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table(entries)}\n{END}{tail}"
