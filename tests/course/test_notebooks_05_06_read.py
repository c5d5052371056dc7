"""Notebooks 05 and 06 read as a course: no dates, no claim plumbing in code, a GPU named at most
twice, one reference note each, and every claim they call exists with its words in the course."""
import re

import labkit  # noqa: F401  (before numba.cuda)
import pytest

from labkit.course import reference
from labkit.course.claims import nb05 as claims05, nb06 as claims06
from labkit.measure.claims import ClaimFailed
from tests.notebook_sources import build_tool, source_path

NOTEBOOKS = {"05": claims05, "06": claims06}


def _cells(prefix):
    return build_tool().read_source(source_path(prefix)).cells


@pytest.mark.parametrize("prefix", NOTEBOOKS)
def test_no_dates_no_placeholder_address_and_no_why_or_look_in_code(prefix):
    for cell in _cells(prefix):
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b", cell.source), cell.source[:200]
        assert "OWNER/" not in cell.source
        if cell.cell_type == "code":
            assert not re.search(r"\b(why|look)\s*=", cell.source), cell.source[:200]
            assert "labkit.expect(" not in cell.source


@pytest.mark.parametrize("prefix", NOTEBOOKS)
def test_the_prose_names_no_particular_gpu_and_one_reference_note_does(prefix):
    prose = "\n".join(c.source for c in _cells(prefix) if c.cell_type == "markdown")
    assert "H200" not in prose
    calls = [c.source for c in _cells(prefix) if f'reference.note("{prefix}")' in c.source]
    assert len(calls) == 1
    assert repr(reference.note(prefix)).startswith("For reference, measured on an NVIDIA H200:")


@pytest.mark.parametrize("prefix", NOTEBOOKS)
def test_every_reference_figure_says_where_it_came_from(prefix):
    data = reference.load(prefix)
    assert data["source"] and all(row.get("source") for row in data["figures"])
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", data.get("text", ""))


@pytest.mark.parametrize("prefix, module", NOTEBOOKS.items())
def test_every_claim_the_notebook_calls_is_in_its_module_with_its_words(prefix, module):
    code = "\n".join(c.source for c in _cells(prefix) if c.cell_type == "code")
    called = set(re.findall(r"\bclaims\.(\w+)\(", code))
    assert called and called <= set(module.__all__), called - set(module.__all__)
    for name in module.__all__:
        words = getattr(module, name).words
        assert words["claim"] and words["why"] and words["look"]


def test_a_claim_returns_nothing_when_it_holds_and_fails_strictly_when_not(monkeypatch):
    monkeypatch.setenv("LABKIT_CLAIMS", "strict")
    assert claims05.rule_beats_recapturing_every_step(130.0, 160.0, 128.0) is None
    with pytest.raises(ClaimFailed, match=r"^expected: on a step that changes every time, "
                                          r"llama.cpp's rule costs less than re-capturing"):
        claims05.rule_beats_recapturing_every_step(170.0, 160.0, 128.0)
    with pytest.raises(ClaimFailed, match=r"^expected: at the same load, the graph server serves "
                                          r"over twice"):
        claims06.graph_serves_more_at_equal_load(1500.0, 1000.0)
