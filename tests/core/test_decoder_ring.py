"""The decoder ring (error -> likely cause -> fix) is made from labkit's hints, and stays so."""
from html import escape

import pytest

import labkit
from labkit import _errors


def test_every_hint_reads_likely_cause_then_fix():
    for code in _errors._HINTS:
        cause, fix = _errors._cause_and_fix(_errors.hint_for(code))
        assert cause and fix, code


def test_each_row_of_the_ring_is_its_errors_hint_and_name():
    ring = labkit.decoder_ring()
    assert [r[0] for r in ring.rows] == sorted(_errors._HINTS)
    for code, name, cause, fix in ring.rows:
        assert f"{cause}: {fix}" == _errors.hint_for(code)
        assert name == labkit.CudaError(code).name
        assert f"| `{name}` ({code}) | {cause} | {fix} |" in str(ring)
    assert ring._repr_markdown_() == str(ring)
    html = ring._repr_html_()
    for code, name, cause, fix in ring.rows:
        assert f">{name}</code> ({code})</td>" in html
        assert f">{escape(cause)}</td>" in html and f">{escape(fix)}</td></tr>" in html


def test_the_ring_keeps_the_order_asked_for_and_refuses_a_code_without_a_hint():
    assert [r[0] for r in labkit.decoder_ring([904, 900]).rows] == [904, 900]
    with pytest.raises(ValueError, match=r"^labkit has no hint for error 999"):
        labkit.decoder_ring([999])


def test_a_hint_without_a_cause_and_a_fix_is_refused():
    with pytest.raises(ValueError, match=r"^a hint must read 'likely cause: fix'"):
        _errors._cause_and_fix("no colon here")
