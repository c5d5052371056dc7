"""labkit.measure.claims.expect: strict mode raises, learner mode shows a note and goes on."""
import json

import pytest

from labkit.measure import claims
from labkit.measure.claims import expect


def test_a_claim_that_holds_passes_in_both_modes(monkeypatch):
    for m in ("strict", "learner"):
        monkeypatch.setenv("LABKIT_CLAIMS", m)
        assert expect(True, "graphs are cheaper", measured="1 µs vs 20 µs", why="-")


def test_strict_mode_raises_an_assertion_naming_claim_and_measurement(monkeypatch):
    monkeypatch.setenv("LABKIT_CLAIMS", "strict")
    with pytest.raises(AssertionError, match=r"^expected: graphs are cheaper; measured here: 30 µs"):
        expect(False, "graphs are cheaper", measured="30 µs", why="a slow GPU")


def test_learner_mode_prints_a_note_and_goes_on(monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_CLAIMS", "learner")
    assert expect(False, "graphs are cheaper", measured="30 µs", why="a slow GPU",
                         look="the timeline above") is False
    out = capsys.readouterr().out
    for part in ("graphs are cheaper", "30 µs", "a slow GPU", "the timeline above", "nothing is broken"):
        assert part in out


def test_the_note_renders_as_html_in_jupyter():
    note = claims._Note([("The course expected", "a < b")], "simulated")
    assert "a &lt; b" in note._repr_html_() and "a < b" in repr(note)


def test_ci_means_strict_and_a_bad_mode_is_refused(monkeypatch):
    monkeypatch.delenv("LABKIT_CLAIMS", raising=False)
    monkeypatch.setenv("CI", "true")
    assert claims.mode() == "strict"
    monkeypatch.delenv("CI")
    assert claims.mode() == "learner"
    monkeypatch.setenv("LABKIT_CLAIMS", "loud")
    with pytest.raises(ValueError, match=r"LABKIT_CLAIMS='loud': use 'strict'"):
        claims.mode()


def test_the_suite_itself_runs_strict():
    import os
    assert os.environ["LABKIT_CLAIMS"] == "strict"


def test_the_log_gets_one_json_line_per_claim_held_or_not(monkeypatch, tmp_path, capsys):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv("LABKIT_CLAIMS", "learner")
    monkeypatch.setenv("LABKIT_CLAIMS_LOG", str(log))
    monkeypatch.setenv("LABKIT_CLAIMS_TAG", "01|load")
    expect(True, "graphs are cheaper", measured="1 µs vs 20 µs", why="-")
    expect(False, "graphs are cheaper", measured="30 µs", why="a slow GPU")
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["holds"], r["measured"], r["notebook"], r["mode"]) for r in rows] == [
        (True, "1 µs vs 20 µs", "01|load", "learner"), (False, "30 µs", "01|load", "learner")]


def test_without_the_log_variable_nothing_is_written(monkeypatch, tmp_path):
    monkeypatch.delenv("LABKIT_CLAIMS_LOG", raising=False)
    monkeypatch.chdir(tmp_path)
    expect(True, "graphs are cheaper", measured="1 µs", why="-")
    assert list(tmp_path.iterdir()) == []
