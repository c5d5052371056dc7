"""A learner's path, in a real browser: JupyterLab's Run All takes each learner notebook to its check.

JupyterLab runs on loopback with a token on a free port, serving copies of the course's learner
notebooks; Playwright drives Debian's ``/usr/bin/chromium`` (never a downloaded browser: this
machine cannot fetch one). For every notebook, Run > Run All Cells must run each cell, draw the
figures, and stop with an error only at the final exercise check, which fails until the learner
solves it. Cells that fail on purpose catch and print their error, so they do not stop Run All.
The test waits on the kernel and the cells' prompts, not on fixed sleeps; the one time limit per
notebook only ends a run that hangs. A screenshot of each notebook goes into the temporary
folder and, when ``LABKIT_SCREENSHOT_DIR`` is set, there.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
LEARNERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
assert LEARNERS, f"no learner notebooks under {ROOT / 'notebooks'}: is ROOT the repository root?"
CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium keeps dialling out, and this machine's
# closed network refuses it, many times a second.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
# Only a hang reaches this: a notebook on the simulator runs in well under a minute.
NOTEBOOK_LIMIT_MS = 600_000


def _need(condition: bool, reason: str) -> None:
    """Skip on a developer's machine, but fail in CI, which must run this test."""
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; .ci/run installs it (apt-get install -y chromium, "
                    'pip install -e ".[test]")')
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _isolated_env(tmp: Path) -> dict[str, str]:
    """Jupyter's config, data and workspaces in ``tmp``, so no user setting changes the page."""
    env = dict(os.environ)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(tmp / name.lower())
    env.pop("MPLBACKEND", None)  # the kernel must draw inline PNGs
    labconfig = tmp / "jupyter_config_dir" / "labconfig"
    labconfig.mkdir(parents=True)
    # The news prompt is a toast that can cover the page; nothing here may fetch news anyway.
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    # A notebook opened before the server has listed its kernels asks which kernel to start (a
    # "Select Kernel" dialog, seen in CI on the first notebook, which stayed after its accept):
    # start the notebook's own kernel without asking, as JupyterLab's setting allows.
    settings = tmp / "lab_settings"
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"autoStartDefaultKernel": True}))
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    return env


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory, browser_tools):
    """A running JupyterLab serving copies of the learner notebooks; yields (base, token, root)."""
    tmp_path = tmp_path_factory.mktemp("jupyterlab")
    root = tmp_path / "root"
    root.mkdir()
    for path in LEARNERS:
        shutil.copy(path, root / path.name)
    port, token = _free_port(), secrets.token_hex(16)
    log = open(tmp_path / "jupyterlab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--ServerApp.allow_root=True", f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=_isolated_env(tmp_path), stdout=log, stderr=subprocess.STDOUT, cwd=root,
        start_new_session=True)  # its own group, so the kernels go down with it
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n"
                            + (tmp_path / "jupyterlab.log").read_text()[-3000:])
            try:   # answering, and its kernels listed (a notebook opened before asks for one)
                with urllib.request.urlopen(f"{base}/api/kernelspecs?token={token}",
                                            timeout=2) as r:
                    if r.status == 200 and "python3" in json.load(r).get("kernelspecs", {}):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("JupyterLab did not answer within 60 s:\n"
                            + (tmp_path / "jupyterlab.log").read_text()[-3000:])
            time.sleep(0.5)
        yield base, token, root
    finally:
        proc.terminate()  # SIGTERM: the server shuts its kernels down itself
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def browser_tools():
    """Checked before JupyterLab starts, so a skip costs nothing."""
    _need(CHROMIUM.exists(), f"{CHROMIUM} is missing (apt-get install -y chromium)")
    _need(importlib.util.find_spec("playwright") is not None,
          "playwright is not installed (pip install playwright)")


@pytest.fixture(scope="module")
def browser(jupyterlab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.mark.parametrize("learner", LEARNERS, ids=lambda p: p.stem)
def test_run_all_runs_the_learner_notebook_to_its_check_which_alone_shows_an_error(
        learner, jupyterlab, browser, tmp_path):
    from playwright.sync_api import expect

    base, token, root = jupyterlab
    shot = tmp_path / f"{learner.stem}.png"
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        # A workspace of its own, reset, so only this notebook opens (no tabs restored).
        url = f"{base}/lab/workspaces/{learner.stem}/tree/{learner.name}?reset&token={token}"
        _run_all(page, expect, url)
        # Decoded images, not broken stubs: what the learner sees of the figures.
        saved_images = page.locator(".jp-OutputArea-output img").evaluate_all(
            "imgs => imgs.filter(i => i.naturalWidth > 100).length")
        saved = _save_and_read(page, root / learner.name)
    finally:
        # Also on failure: the picture usually shows what went wrong.
        page.screenshot(path=str(shot), full_page=True)
        page.close()
        _shut_down_kernels(base, token)
        if os.environ.get("LABKIT_SCREENSHOT_DIR"):
            target = Path(os.environ["LABKIT_SCREENSHOT_DIR"])
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, target / shot.name)

    code = [(i, c) for i, c in enumerate(saved.cells) if c.cell_type == "code"]
    not_run = [i for i, c in code if c.execution_count is None]
    errors = {i: f"{o.ename}: {o.evalue}" for i, c in code for o in c.outputs
              if o.output_type == "error"}
    check = code[-1][0]
    assert set(errors) == {check}, (
        f"Run All stopped at or showed errors in cells {errors} (not run: {not_run}); only the "
        f"final check, cell {check}, may fail")
    assert "check" in saved.cells[check].metadata.get("tags", []), "the last code cell is the check"
    assert not not_run, f"cells {not_run} never ran"
    assert errors[check].startswith("NotSolvedYet"), errors[check]   # shown as a short note
    figures = sum("image/png" in o.get("data", {}) for _, c in code for o in c.outputs)
    assert saved_images == figures, f"the page drew {saved_images} of the {figures} figures"


def _dismiss_dialogs(page) -> None:
    """Accept any modal JupyterLab dialog (a kernel choice, a notice) that would swallow clicks.

    Seen in CI once: a jp-Dialog intercepted the click on the Run menu. Accepting takes the
    dialog's default (for a kernel choice, the notebook's own python3 kernel)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(6):
        dialog = page.locator(".jp-Dialog")
        if not dialog.count() or not dialog.first.is_visible():
            return
        accept = dialog.locator(".jp-Dialog-button.jp-mod-accept")
        if accept.count() and attempt < 3:
            accept.first.click()
        else:                   # a dialog that stays after its accept (on a loaded machine)
            page.keyboard.press("Escape")
        try:
            page.wait_for_function("() => !document.querySelector('.jp-Dialog')", timeout=10_000)
            return
        except PlaywrightTimeout:
            continue
    text = page.locator(".jp-Dialog").first.inner_text()[:300]
    pytest.fail(f"a JupyterLab dialog would not close: {text!r}")


# Every code cell has a prompt; "[*]:" while queued or running, "[3]:" once run, "[ ]:" never.
PROMPTS = "[...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')]"
STARTED = f"() => {PROMPTS}.some(p => /\\[[\\d*]+\\]/.test(p.textContent))"
# Run All has finished when the kernel is idle and no cell is queued or running any more.
IDLE = "!!document.querySelector(\".jp-Notebook-ExecutionIndicator[data-status='idle']\")"
FINISHED = (f"() => {PROMPTS}.length > 0 && !{PROMPTS}.some(p => p.textContent.includes('*'))"
            f" && {IDLE}")
# Cells still queued ("[*]") while the kernel is idle: they went to a kernel that is gone (a
# kernel choice accepted late replaces the kernel, seen in CI on a loaded machine).
STALLED = f"() => {PROMPTS}.some(p => p.textContent.includes('*')) && {IDLE}"


def _run_all(page, expect, url: str) -> None:
    """Open the notebook, wait for its kernel, Run All, and wait until the kernel is idle again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.set_default_timeout(NOTEBOOK_LIMIT_MS)
    page.goto(url)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_be_visible(
        timeout=NOTEBOOK_LIMIT_MS)

    _start_run_all(page, PlaywrightTimeout)
    deadline = time.monotonic() + NOTEBOOK_LIMIT_MS / 1000
    for _ in range(3):      # a run whose queued cells were orphaned is started once more
        while True:
            try:
                page.wait_for_function(FINISHED, polling=500, timeout=30_000)
                return
            except PlaywrightTimeout:
                if time.monotonic() > deadline:
                    raise
                _dismiss_dialogs(page)
                if page.evaluate(STALLED):
                    break
                time.sleep(5)       # a quick look again: a cell that has just finished
                if page.evaluate(STALLED):
                    break
        _start_run_all(page, PlaywrightTimeout)
    pytest.fail("Run All's cells were left queued three times (their kernel was replaced)")


def _start_run_all(page, PlaywrightTimeout) -> None:
    """Run > Run All Cells, until a prompt shows the cells queued, running or run."""
    # JupyterLab can show the kernel idle a moment before it accepts executions; a Run All sent
    # then is silently dropped (seen about one time in two). Queued cells show "[*]" at once,
    # so ask again until a prompt shows the cells are queued, running or run.
    for _ in range(6):
        _dismiss_dialogs(page)
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-item", has_text=re.compile(r"^Run All Cells")).click()
        try:
            page.wait_for_function(STARTED, timeout=15_000)
            return
        except PlaywrightTimeout:
            continue
    pytest.fail("Run > Run All Cells never started the cells (6 tries)")


def _save_and_read(page, path: Path) -> nbformat.NotebookNode:
    """Save the notebook from JupyterLab (with its outputs) and read the saved file."""
    before = path.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel .jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 60
    while path.stat().st_mtime_ns == before:
        _dismiss_dialogs(page)
        if time.monotonic() > deadline:
            pytest.fail(f"JupyterLab did not save {path.name} within 60 s of Ctrl+S")
        time.sleep(0.2)
    for _ in range(50):   # the save may still be writing
        try:
            return nbformat.read(path, as_version=4)
        except Exception:
            time.sleep(0.2)
    return nbformat.read(path, as_version=4)


def _shut_down_kernels(base: str, token: str) -> None:
    """End every session's kernel, so the next notebook does not share the machine with it."""
    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{base}/api/sessions", headers=headers),
                                timeout=30) as r:
        sessions = json.load(r)
    for session in sessions:
        request = urllib.request.Request(f"{base}/api/sessions/{session['id']}",
                                         headers=headers, method="DELETE")
        urllib.request.urlopen(request, timeout=60).close()
