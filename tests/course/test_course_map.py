"""The course map is data (notebooks/course_map.json): the README's table is written from it, and
a map that is wrong says which entry and what to do."""
from __future__ import annotations

import json

import pytest

from labkit.course import course_map
from tests.notebook_sources import ROOT


def test_the_readme_table_is_the_maps_and_lists_every_notebook():
    entries = course_map.load(ROOT / "notebooks")
    readme = (ROOT / "notebooks" / "README.md").read_text(encoding="utf-8")
    assert course_map.with_table(readme, entries) == readme, \
        "notebooks/README.md's table is stale: run python tools/build_notebooks.py"
    assert {e.file for e in entries} == {p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}


@pytest.mark.parametrize("change, message", [
    ({"minutes": 0}, r"minutes must be a whole number of 1 or more, got 0"),
    ({"minutes": "45"}, r"minutes must be a whole number of 1 or more, got '45'"),
    ({"goals": None}, r"missing \['goals'\]"),
    ({"time": 3}, r"unknown \['time'\]"),
])
def test_a_wrong_entry_is_named_with_what_to_fix(tmp_path, change, message):
    entry = {"number": "00", "title": "T", "file": "00_t.ipynb", "minutes": 5,
             "prerequisites": "", "goals": "g"}
    entry.update(change)
    entry = {k: v for k, v in entry.items() if v is not None}
    (tmp_path / "course_map.json").write_text(json.dumps({"notebooks": [entry]}))
    with pytest.raises(ValueError, match=r"^course_map.json, notebook 1 \(00_t.ipynb\): " + message):
        course_map.load(tmp_path)


def test_a_readme_without_the_markers_says_where_they_go():
    with pytest.raises(ValueError, match="put both where the table of notebooks goes"):
        course_map.with_table("# Course map\n", [])
