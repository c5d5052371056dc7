"""``python -m labkit run``: a learner's missteps get labkit's words and exit 2, before any
notebook kernel starts; and what the run shows (terminal, site) carries no noise from the
kernel machinery and no paths of this machine."""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import types

import nbformat
import pytest

import labkit
from labkit.cli import run

ROOT = run.PACKAGE_ROOT
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _notebook(path, *cells, tags=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Tiny")]
    for i, src in enumerate(cells):
        cell = nbformat.v4.new_code_cell(src)
        if tags and tags.get(i):
            cell.metadata["tags"] = tags[i]
        nb.cells.append(cell)
    nbformat.write(nb, path)
    return path


def _main(argv, monkeypatch):
    """run.main in this process, with execution forbidden: a misstep must stop before it."""
    def no_kernel(*a, **k):
        raise AssertionError("a notebook kernel was started")
    monkeypatch.setattr(run, "execute", no_kernel)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run.main(argv)
    return code, err.getvalue()


@pytest.fixture
def tiny(tmp_path):
    return _notebook(tmp_path / "00_tiny.ipynb", "print('hello')")


def test_run_out_that_cannot_be_made_says_so_and_exits_2(tiny, monkeypatch):
    code, err = _main([str(tiny), "--out", "/proc/forbidden"], monkeypatch)
    assert code == 2
    assert err.startswith("labkit run: cannot make the site folder --out /proc/forbidden (")
    assert "give a folder you can write to" in err and "Traceback" not in err


def test_run_out_that_is_an_existing_file_says_it_needs_a_folder_and_exits_2(tiny, monkeypatch):
    readme = ROOT / "README.md"
    before = readme.read_bytes()
    code, err = _main([str(tiny), "--out", str(readme)], monkeypatch)
    assert code == 2
    assert err.startswith(f"labkit run: --out {readme} is a file, not a folder: the site needs "
                          "a folder of its own")
    assert readme.read_bytes() == before


@pytest.mark.skipif(labkit.backend == "cuda", reason="this machine has a GPU")
def test_run_backend_cuda_without_a_gpu_fails_at_once_with_the_backends_reason(tiny, tmp_path,
                                                                              monkeypatch):
    code, err = _main([str(tiny), "--backend", "cuda", "--out", str(tmp_path / "site")],
                      monkeypatch)
    assert code == 2
    assert err.startswith("labkit run: no notebook was started: LABKIT_BACKEND=cuda but no "
                          "usable GPU: ")
    assert "python -m labkit doctor" in err and "Traceback" not in err
    assert not list((tmp_path / "site").glob("*.ipynb"))


def test_key_figure_is_the_tagged_cells_figure_not_the_last_one():
    nb = nbformat.v4.new_notebook()
    cells = [nbformat.v4.new_code_cell(c) for c in "abc"]
    for cell, png in zip(cells, ["Rmlyc3Q=", "S2V5", "TGFzdA=="]):
        cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png})]
    cells[1].metadata["tags"] = ["solution", run.KEY_FIGURE_TAG]
    nb.cells = cells
    assert run.last_figure(nb) == "S2V5"


def test_machine_paths_are_stripped_from_tracebacks_and_warnings():
    import sysconfig
    lib = sysconfig.get_paths()["purelib"]
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("error", ename="ValueError", evalue=f"bad {ROOT}/x.py",
                               traceback=[f"\x1b[0;32mFile \x1b[0;32m{ROOT}/labkit/_capture.py:63\x1b[0m",
                                          f"File {lib}/numba/core/x.py:1, in f()"]),
        nbformat.v4.new_output("stream", name="stderr", text=f"{lib}/numba/a.py:3: NumbaWarning"),
    ]
    nb.cells = [cell]
    run.strip_machine_paths(nb)
    err, warn = cell.outputs
    assert "\x1b[0;32mlabkit/_capture.py:63" in err.traceback[0]
    assert err.traceback[1] == "File site-packages/numba/core/x.py:1, in f()"
    assert err.evalue == "bad x.py"
    assert warn.text == "site-packages/numba/a.py:3: NumbaWarning"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """One real run, as a learner starts it: a notebook whose exercise cell raises inside
    labkit, a figure tagged as the key one, and a later figure."""
    src, out = tmp_path_factory.mktemp("nb"), tmp_path_factory.mktemp("site")
    fig = "import matplotlib.pyplot as plt\nplt.plot({});plt.title({!r})\nplt.show()"
    nb = _notebook(src / "00_paths.ipynb",
                   "import labkit\ns = labkit.Stream()\ns.close()\ns.synchronize()",
                   fig.format([1, 2, 3], "key"), fig.format([3, 2, 1], "later"),
                   tags={0: ["raises-exception"], 1: [run.KEY_FIGURE_TAG]})
    done = subprocess.run([sys.executable, "-m", "labkit", "run", str(nb), "--out", str(out),
                           "--backend", "sim"], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=dict(os.environ))
    executed = nbformat.read(out / "00_paths.ipynb", as_version=4)
    return types.SimpleNamespace(done=done, out=out, nb=executed,
                                 page=(out / "00_paths.html").read_text(),
                                 index=(out / "index.html").read_text())


def test_run_terminal_output_has_no_kernel_transport_warning(site):
    assert site.done.returncode == 0, site.done.stderr
    assert "IPKernelApp" not in site.done.stderr
    assert "without encryption" not in site.done.stderr + site.done.stdout


def test_run_site_traceback_shows_no_machine_paths(site):
    traceback = ANSI.sub("", "\n".join(site.nb.cells[1].outputs[-1].traceback))
    assert "File labkit/_streams.py:" in traceback
    assert "this stream was closed" in traceback
    for machine in (str(ROOT), sys.prefix, os.path.expanduser("~")):
        if len(machine) > 1:            # a home of "/" would be in every path
            assert machine not in traceback and machine not in site.page


def test_run_index_shows_the_tagged_key_figure(site):
    key = site.nb.cells[2].outputs[-1].data["image/png"].replace("\n", "")
    later = site.nb.cells[3].outputs[-1].data["image/png"].replace("\n", "")
    assert key != later
    assert f"data:image/png;base64,{key}" in site.index
    assert later not in site.index
