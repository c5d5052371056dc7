"""A learner's path, in a real browser: JupyterLab opens a notebook, Run All draws a figure.

JupyterLab runs on loopback with a token on a free port; Playwright drives Debian's
``/usr/bin/chromium`` (never a downloaded browser: this machine cannot fetch one). The test
saves a screenshot in its temporary folder and, when ``LABKIT_SCREENSHOT_DIR`` is set, there.
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

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium keeps dialling out, and this machine's
# closed network refuses it, many times a second.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
NOTEBOOK = "figure.ipynb"


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


def _write_notebook(root: Path) -> None:
    cells = []
    if importlib.util.find_spec("labkit") is not None:
        cells.append("import labkit\nprint('backend:', getattr(labkit, 'backend', '?'))")
    cells.append("import matplotlib.pyplot as plt\n"
                 "fig, ax = plt.subplots(figsize=(4, 3))\n"
                 "ax.plot([1, 2, 3, 4], [1, 4, 9, 16], marker='o')\n"
                 "ax.set_title('rendered in JupyterLab')\n"
                 "plt.show()")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Browser check")]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / NOTEBOOK)


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
    return env


@pytest.fixture
def jupyterlab(tmp_path):
    """A running JupyterLab serving a folder with one notebook; yields (base_url, token, root)."""
    root = tmp_path / "root"
    root.mkdir()
    _write_notebook(root)
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
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
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


@pytest.fixture
def browser_tools():
    """Checked before JupyterLab starts, so a skip costs nothing."""
    _need(CHROMIUM.exists(), f"{CHROMIUM} is missing (apt-get install -y chromium)")
    _need(importlib.util.find_spec("playwright") is not None,
          "playwright is not installed (pip install playwright)")


def test_run_all_in_jupyterlab_renders_the_figure_without_errors(browser_tools, jupyterlab,
                                                                 tmp_path):
    from playwright.sync_api import expect, sync_playwright

    base, token, root = jupyterlab
    shot = tmp_path / "jupyterlab.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        try:
            _run_all_and_check(page, expect, f"{base}/lab/tree/{NOTEBOOK}?token={token}", root)
        finally:
            # Also on failure: the picture usually shows what went wrong.
            page.screenshot(path=str(shot), full_page=True)
            browser.close()
            if os.environ.get("LABKIT_SCREENSHOT_DIR"):
                target = Path(os.environ["LABKIT_SCREENSHOT_DIR"])
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy(shot, target / shot.name)
    assert shot.stat().st_size > 10_000


def _dismiss_dialogs(page) -> None:
    """Accept any modal JupyterLab dialog (a kernel choice, a notice) that would swallow clicks.

    Seen in CI once: a jp-Dialog intercepted the click on the Run menu for 45 s. Accepting takes
    the dialog's default (for a kernel choice, the notebook's own python3 kernel)."""
    for _ in range(3):
        dialog = page.locator(".jp-Dialog")
        if not dialog.count() or not dialog.first.is_visible():
            return
        accept = dialog.locator(".jp-Dialog-button.jp-mod-accept")
        if accept.count():
            accept.first.click()
        else:
            page.keyboard.press("Escape")
        page.wait_for_timeout(300)


def _run_all_and_check(page, expect, url: str, root: Path) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.set_default_timeout(45_000)
    page.goto(url)
    # The kernel is started and idle once the toolbar's indicator says so.
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_be_visible(
        timeout=45_000)

    # JupyterLab can show the kernel idle a moment before it accepts executions; a Run All sent
    # then is silently dropped (seen here about one time in two). Running this notebook twice
    # is harmless, so ask again until a prompt shows the cells ran or are running.
    started = "() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]" \
              ".some(p => /\\[[\\d*]+\\]/.test(p.textContent))"
    for attempt in range(6):
        _dismiss_dialogs(page)
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-item", has_text=re.compile(r"^Run All Cells")).click()
        try:
            page.wait_for_function(started, timeout=5_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        pytest.fail("Run > Run All Cells never started the cells (6 tries, 5 s each)")

    figure = page.locator(".jp-OutputArea-output img")
    expect(figure).to_be_visible(timeout=45_000)
    # Every code cell has run when no prompt is empty or still busy ("[*]:").
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                 .every(p => /\\[\\d+\\]/.test(p.textContent))""")
    code_cells = [c for c in nbformat.read(root / NOTEBOOK, 4).cells if c.cell_type == "code"]
    assert page.locator(".jp-CodeCell .jp-InputPrompt").count() == len(code_cells)
    assert figure.evaluate("img => img.naturalWidth") > 100  # a decoded image, not a stub
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, f"a cell wrote an error: {errors.all_inner_texts()}"
