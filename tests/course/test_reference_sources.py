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
