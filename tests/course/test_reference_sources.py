"""Every reference note names where its figures come from, and those files are in the tree."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTES = sorted((ROOT / "labkit" / "course" / "reference").glob("nb*.json"))
PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.(?:jsonl|json|md|py)")


def _sources(data):
    yield data["source"]
    yield from (row["source"] for row in data["figures"] if "source" in row)


def test_there_are_reference_notes_to_check():
    assert len(NOTES) >= 9


@pytest.mark.parametrize("note", NOTES, ids=lambda p: p.name)
def test_a_reference_note_cites_files_that_exist(note):
    data = json.loads(note.read_text(encoding="utf-8"))
    cited = [p for text in _sources(data) for p in PATH.findall(text)]
    assert cited, f"{note.name} names no file its figures come from"
    missing = [p for p in cited if not (ROOT / p).is_file()]
    assert not missing, f"{note.name} cites files not in the tree: {missing}"


@pytest.mark.parametrize("note", NOTES, ids=lambda p: p.name)
def test_every_figure_has_a_value_or_names_the_calibration_key_that_holds_it(note):
    from labkit.course import reference
    data = reference.load(note.stem.removeprefix("nb"))
    raw = json.loads(note.read_text(encoding="utf-8"))
    for row, loaded in zip(raw["figures"], data["figures"]):
        assert ("value" in row) != ("from" in row), f"{note.name}: {row['label']!r} needs one of value/from"
        if "from" in row:
            assert isinstance(loaded["value"], (int, float)), (note.name, row["from"])


def test_a_figure_from_a_missing_key_names_the_file_and_the_key():
    from labkit.course import reference
    with pytest.raises(KeyError, match=r"h200-bench.json has no 'no_such_figure'"):
        reference.resolve("h200-bench.json#no_such_figure")
    with pytest.raises(KeyError, match=r"labkit/calibration/ has no nope.json"):
        reference.resolve("nope.json#x")
