"""The maintainers' measurements document is generated from its data, one JSON per GPU run."""
from __future__ import annotations

import json

import pytest

from labkit.toolbox import measurements as tool


def _run(**changes):
    run = {"schema": 1, "title": "A run", "date": "2026-12-01", "gpu": "NVIDIA H200",
           "software": {"numba-cuda": "0.30.4"}, "command": "python -m labkit bench",
           "repeats": 2, "results": [{"what": "graph replay", "value": [0.84, 1.03],
                                      "unit": "µs per kernel"}]}
    run.update(changes)
    return {k: v for k, v in run.items() if v is not None}


def test_the_measurements_document_is_what_its_data_gives():
    assert tool.DOC.read_text(encoding="utf-8") == tool.render(tool.load()), (
        "docs/measurements.md is stale: run python -m labkit measurements")


def test_every_run_file_is_listed_and_rendered_newest_first(tmp_path):
    for name, date in (("old.json", "2026-11-30"), ("new.json", "2026-12-04")):
        (tmp_path / name).write_text(json.dumps(_run(date=date, title=f"run of {date}")))
    text = tool.render(tool.load(tmp_path))
    assert text.index("## run of 2026-12-04") < text.index("## run of 2026-11-30")
    assert "| graph replay | 0.84–1.03 | µs per kernel |  |" in text
    assert "(`measurements/old.json`)" in text and "(2 runs)" in text


def test_a_run_without_a_required_key_is_refused_naming_it():
    with pytest.raises(tool.DataError, match=r"^x.json: no 'gpu'; add it"):
        tool.validate(_run(gpu=None), "x.json")


def test_a_range_whose_low_end_is_above_its_high_end_is_refused():
    bad = _run(results=[{"what": "graph replay", "value": [1.03, 0.84], "unit": "µs"}])
    with pytest.raises(tool.DataError, match=r"^x.json, result 1: value \[1.03, 0.84\] must be"):
        tool.validate(bad, "x.json")


def test_an_unknown_key_is_refused_so_a_typo_is_not_lost():
    with pytest.raises(tool.DataError, match=r"^x.json: unknown keys \['repeat'\]"):
        tool.validate(_run(repeat=3), "x.json")


def test_check_mode_fails_on_a_stale_document(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "measurements.md"
    doc.write_text("hand-edited\n")
    monkeypatch.setattr(tool, "DOC", doc)
    assert tool.main(["--check"]) == 1
    assert "run `python -m labkit measurements`" in capsys.readouterr().err
    assert tool.main([]) == 0 and tool.main(["--check"]) == 0


def _bench(tmp_path, name, backend="cuda", eager=16.2, device="NVIDIA H200"):
    path = tmp_path / name
    line = {"backend": backend, "device": device, "kernels": 200, "eager_us_per_kernel": eager,
            "graph_us_per_kernel": 0.91, "wrapper": {"ratio": 1.02}}
    path.write_text("µs per kernel ...\n" + json.dumps(line) + "\n")
    return path


def test_a_draft_from_gpu_bench_outputs_holds_their_range_and_renders(tmp_path):
    import datetime
    runs = [_bench(tmp_path, "a.json", eager=16.24), _bench(tmp_path, "b.json", eager=22.71)]
    folder = tmp_path / "measurements"
    folder.mkdir()
    path = tool.draft(runs, folder, today=datetime.date(2026, 12, 5))
    assert path.name == "h200-2026-12-05-bench.json"
    run = json.loads(path.read_text())
    assert run["repeats"] == 2 and run["command"] == "python -m labkit bench --json --wrapper"
    results = {r["what"]: r["value"] for r in run["results"]}
    assert results["numba eager launch"] == [16.2, 22.7]
    assert results["graph replay"] == 0.91
    assert "| numba eager launch | 16.2–22.7 | µs per kernel |" in tool.render(tool.load(folder))
    with pytest.raises(tool.DataError, match=r"^h200-2026-12-05-bench.json exists already"):
        tool.draft(runs, folder, today=datetime.date(2026, 12, 5))


def test_a_draft_refuses_the_simulators_figures(tmp_path):
    sim = _bench(tmp_path, "sim.json", backend="sim", device="simulated NVIDIA H200")
    with pytest.raises(tool.DataError, match=r"sim.json: measured on the 'sim' backend; only a "
                                             r"real GPU's figures are measurements"):
        tool.draft([sim], tmp_path)
