"""The command line: ``python -m labkit`` dispatch, ``run`` (the main job) and ``doctor``.

The run tests use tiny notebooks written into a temporary folder, not the course, so they are
fast and test the command rather than the lessons.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import types

import nbformat
import pytest

from labkit.cli import doctor, run
from labkit.backends import BackendError

TINY_FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()"


def _write_notebook(path, *sources, title="Tiny"):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}")]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in sources]
    nbformat.write(nb, path)
    return path


def _run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run.main(argv)
    return code, err.getvalue()


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    """One run over a failing notebook followed by a passing one."""
    src = tmp_path_factory.mktemp("notebooks")
    out = tmp_path_factory.mktemp("site")
    bad = _write_notebook(src / "01_bad.ipynb", "x = 1", "raise ValueError('boom in cell three')",
                          "print('never reached')", title="Breaks")
    good = _write_notebook(src / "02_good.ipynb", TINY_FIGURE, title="Draws")
    code, stderr = _run([str(bad), str(good), "--out", str(out), "--backend", "sim"])
    index = (out / "index.html").read_text()
    report = (out / "report.html").read_text()
    table = report[report.index('<table class="labkit-run">'):]
    return types.SimpleNamespace(code=code, stderr=stderr, out=out, index=index, report=report,
                                 table=table[:table.index("</table>")])


def test_run_exits_nonzero_when_a_notebook_fails(mixed_run):
    assert mixed_run.code == 1


def test_run_names_the_failing_notebook_cell_and_error(mixed_run):
    assert "FAILED 01_bad.ipynb, cell 3" in mixed_run.stderr
    assert "ValueError: boom in cell three" in mixed_run.stderr


def test_run_report_marks_the_failed_notebook_with_its_cell(mixed_run):
    bad_row = next(r for r in mixed_run.table.split("<tr>") if "01_bad" in r)
    assert "failed at cell 3" in bad_row
    assert "ValueError: boom in cell three" in bad_row


def test_run_finishes_the_other_notebooks_after_a_failure(mixed_run):
    good_row = next(r for r in mixed_run.table.split("<tr>") if "02_good" in r)
    assert '<span class="ok">ok</span>' in good_row
    assert "sim /" in good_row                    # the backend it ran on


def test_run_landing_page_is_for_learners_and_the_build_report_is_its_own_page(mixed_run):
    for stem in ("01_bad", "02_good"):
        assert f'href="{stem}.html"' in mixed_run.index
    assert 'class="labkit-key-figure"' in mixed_run.index   # 02_good's figure, full width
    assert "labkit-run" not in mixed_run.index and "failed at cell" not in mixed_run.index
    assert 'href="report.html"' in mixed_run.index          # in the sidebar
    assert "1 of 2 notebooks ran through, 1 failed" in mixed_run.report


def test_run_writes_executed_notebook_and_page_for_each_also_the_failed(mixed_run):
    for stem in ("01_bad", "02_good"):
        assert (mixed_run.out / f"{stem}.html").is_file()
        assert (mixed_run.out / f"{stem}.ipynb").is_file()
    executed = nbformat.read(mixed_run.out / "01_bad.ipynb", as_version=4)
    assert executed.cells[2].outputs[0].output_type == "error"
    assert "boom in cell three" in (mixed_run.out / "01_bad.html").read_text()


def test_run_site_pages_have_the_sidebar_toc_and_prev_next_links(mixed_run):
    page = (mixed_run.out / "01_bad.html").read_text()
    assert "bd-sidebar-primary" in page
    for stem in ("index", "02_good", "report"):   # the sidebar lists the course in order
        assert f'<a class="reference internal" href="{stem}.html"' in page
    prev_next = page[page.index('class="prev-next-area"'):]
    assert re.search(r'class="left-prev"\s+href="index.html"', prev_next)
    assert re.search(r'class="right-next"\s+href="02_good.html"', prev_next)


def test_run_site_has_a_search_page_and_index(mixed_run):
    assert (mixed_run.out / "search.html").is_file()
    assert "02_good" in (mixed_run.out / "searchindex.js").read_text()


def test_run_site_page_shows_the_notebooks_figure(mixed_run):
    page = (mixed_run.out / "02_good.html").read_text()
    image = re.search(r'<img alt="[^"]*" src="(_images/[^"]+\.png)"', page)
    assert image and (mixed_run.out / image.group(1)).stat().st_size > 1000


def test_run_landing_page_is_the_course_map_beside_the_notebooks(tmp_path):
    src = tmp_path / "notebooks"
    src.mkdir()
    from labkit.course import course_map
    (src / "README.md").write_text(f"# Course map\n\n{course_map.BEGIN}\n{course_map.END}\n\n"
                                   "Solutions are in [`solutions/`](solutions/).\n")
    entry = {"minutes": 5, "prerequisites": "", "goals": "run"}
    (src / "course_map.json").write_text(json.dumps({"notebooks": [
        {"number": "00", "title": "The only one", "file": "00_only.ipynb", **entry},
        {"number": "01", "title": "Not run", "file": "01_other.ipynb", **entry}]}))
    good = _write_notebook(src / "00_only.ipynb", "print('done')")
    out = tmp_path / "site"
    code, _ = _run([str(good), "--out", str(out)])
    index = (out / "index.html").read_text()
    assert code == 0 and "Course map" in index
    assert 'href="00_only.html"' in index
    assert "Not run" in index and "01_other" not in index   # no page, so no link
    assert "solutions/" in index and 'href="solutions/"' not in index


def test_run_rejects_a_notebook_name_that_matches_nothing_and_lists_the_course():
    with pytest.raises(SystemExit, match=r"^labkit run: 'no_such_lesson' names 0 notebooks"):
        run.resolve(["no_such_lesson"])


def test_run_kernel_env_for_cuda_drops_the_simulator_switch(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    env = run.kernel_env("cuda")
    assert env["LABKIT_BACKEND"] == "cuda"
    assert "NUMBA_ENABLE_CUDASIM" not in env and "MPLBACKEND" not in env


def test_run_finds_the_key_figure_as_the_last_image():
    nb = nbformat.v4.new_notebook()
    first, last = nbformat.v4.new_code_cell("a"), nbformat.v4.new_code_cell("b")
    first.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "Rmlyc3Q="})]
    last.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "TGFz\ndA=="})]
    nb.cells = [first, last, nbformat.v4.new_code_cell("c")]
    assert run.last_figure(nb) == "TGFzdA=="


# --- python -m labkit ------------------------------------------------------------------------

def _labkit_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "labkit", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_help_lists_every_verb_without_importing_them():
    code = ("import sys\nfrom labkit.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "print(sorted(m for m in sys.modules if m in "
            "('labkit.cli.doctor', 'labkit.cli.run', 'labkit.cli.bench', 'labkit.cli.calibrate', 'nbclient')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "doctor" in done.stdout and "calibrate" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_verb_gets_the_rest_of_the_arguments():
    done = _labkit_cli("run", "--help")
    assert done.returncode == 0
    assert "usage: python -m labkit run" in done.stdout and "--backend" in done.stdout


def test_an_unknown_verb_is_a_usage_error():
    done = _labkit_cli("frobnicate")
    assert done.returncode == 2 and "invalid choice: 'frobnicate'" in done.stderr


# --- doctor ----------------------------------------------------------------------------------

def _stand_in(**attrs):
    return types.SimpleNamespace(**{"backend": "sim", "backend_reason": "LABKIT_BACKEND=sim",
                                    **attrs})


@pytest.mark.parametrize("version, broken", [
    ("2.4.6", False), ("1.26.4", False), ("2.5.0", True), ("2.5.0rc1", True), ("3.0.0", True)])
def test_doctor_flags_numpy_from_2_5_on(version, broken):
    found = doctor.numpy_problem(version)
    assert (found is not None) is broken
    if broken:
        assert found[1] == 'pip install "numpy>=1.24,<2.5"'


def test_doctor_reports_a_backend_error_as_a_problem_with_its_message():
    error = BackendError("LABKIT_BACKEND='gpu' is not one of auto, cuda, sim; set it to auto")
    report = doctor.diagnose(types.SimpleNamespace(backend_error=error))
    assert any("LABKIT_BACKEND='gpu' is not one of" in text for text, _ in report.problems)
    assert ("backend", "none chosen") in report.rows


def test_doctor_cli_reports_a_bad_labkit_backend_without_a_traceback():
    done = _labkit_cli("doctor", env={"LABKIT_BACKEND": "bogus"})
    assert done.returncode == 1
    assert "is not one of" in done.stdout and "fix:" in done.stdout
    assert "Traceback" not in done.stderr


def test_doctor_reads_the_gpus_name_and_compute_capability():
    ok = type("Ok", (), {"__int__": lambda self: 0})()
    props = types.SimpleNamespace(name=b"NVIDIA H200\x00\x00", major=9, minor=0)
    rt = types.SimpleNamespace(cudaGetDeviceProperties=lambda dev: (ok, props))
    report = doctor.Report()
    doctor.check_gpu(_stand_in(backend="cuda", rt=rt), report)
    assert dict(report.rows)["gpu"] == "NVIDIA H200 (compute capability 9.0)"
    assert not report.problems


def test_doctor_shows_the_calibration_and_flags_a_missing_one(monkeypatch):
    calibration = {"gpu": "NVIDIA H200", "driver": "580", "cuda_runtime": "13.0",
                   "numba_cuda": "0.30.4", "date": "2026-01-01", "source": "calibrate"}
    monkeypatch.setitem(sys.modules, "labkit._calibration",
                        types.SimpleNamespace(load=lambda: calibration))
    report = doctor.Report()
    doctor.check_calibration(_stand_in(), report)
    assert "gpu=NVIDIA H200" in dict(report.rows)["calibration"] and not report.problems

    def broken():
        raise FileNotFoundError("labkit/calibration/default.json")
    monkeypatch.setitem(sys.modules, "labkit._calibration", types.SimpleNamespace(load=broken))
    report = doctor.Report()
    doctor.check_calibration(_stand_in(), report)
    assert "python -m labkit calibrate" in report.problems[0][1]


def test_doctor_exit_code_follows_the_problems(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "diagnose", lambda lk: doctor.Report())
    assert doctor.main([]) == 0
    with_problem = doctor.Report()
    with_problem.problem("something is off", "do this")
    monkeypatch.setattr(doctor, "diagnose", lambda lk: with_problem)
    assert doctor.main([]) == 1
    assert "fix: do this" in capsys.readouterr().out
