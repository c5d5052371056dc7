"""A learner's Jupyter server without the hub: the course copied into a home, notebook 00 run in
the server's kernel over its REST API and websocket, and no process left when it stops.

This is what the hub's tests do minus JupyterHub and its proxy, so it runs wherever those cannot
be installed (tests/hub/test_hub_local.py skips there).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psutil
import pytest
import requests

from hub.course import copy_course
from hub.links import nbgitpuller_link
from hub.remote import NotebookFailed, run_notebook

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Jupyter server on 127.0.0.1 whose files are a learner's home with the course in it."""
    home = tmp_path_factory.mktemp("home")
    copy_course(ROOT, home)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = {**os.environ, "LABKIT_BACKEND": "sim", "HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
         "--ServerApp.open_browser=False", "--ServerApp.allow_root=True"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    seen: dict[int, psutil.Process] = {}
    for _ in range(120):
        try:
            if requests.get(f"{url}/api/status", headers={"Authorization": f"token {token}"},
                            timeout=2).ok:
                break
        except requests.ConnectionError:
            pass
        time.sleep(0.5)
    else:
        proc.kill()
        proc.wait(10)
        pytest.fail("the Jupyter server did not answer within a minute")
    info = {"url": url, "token": token, "home": home, "proc": proc, "seen": seen}
    yield info
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    # A kernel a failed test left running is ended here, not left to outlive the test run
    # (whether any was left is the last test's question).
    for p in seen.values():
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def _watching(server, fn):
    """Run ``fn`` while noting every process the server starts (its kernels)."""
    import threading
    done = threading.Event()

    def watch():
        while not done.is_set():
            for p in psutil.Process(server["proc"].pid).children(recursive=True):
                server["seen"].setdefault(p.pid, p)
            time.sleep(0.2)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        return fn()
    finally:
        done.set()
        t.join()


def test_notebook_00_runs_in_the_servers_kernel_with_the_course_checks_passing(server):
    run = _watching(server, lambda: run_notebook(
        server["url"], server["token"], "cuda-graphs-lab/notebooks/solutions/00_setup_solution.ipynb"))
    text = run.text()
    assert "backend : sim" in text
    assert "correct: every element is 3·x + 1" in text
    assert 0 < run.kernel_start_s < run.total_s
    assert server["seen"], "no kernel process was seen"


def test_a_learner_notebook_whose_check_fails_on_purpose_still_runs_to_the_end(server):
    # The learner's 00 has its exercise unsolved: the check cell raises, tagged raises-exception.
    run = run_notebook(server["url"], server["token"], "cuda-graphs-lab/notebooks/00_setup.ipynb")
    assert any(o["output_type"] == "error" for o in run.outputs[-1])


def test_a_failing_cell_names_the_notebook_the_cell_and_the_error(server):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "print('first')"},
        {"cell_type": "code", "id": "b", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "1 / 0"}]}
    (server["home"] / "broken.ipynb").write_text(json.dumps(nb))
    with pytest.raises(NotebookFailed, match=r"^broken\.ipynb, cell 1: ZeroDivisionError: division by zero"):
        run_notebook(server["url"], server["token"], "broken.ipynb")


def test_a_notebook_missing_from_the_learners_home_asks_whether_the_course_was_copied(server):
    with pytest.raises(NotebookFailed, match=r"has no notebook 'nowhere/00_setup\.ipynb': was the "
                                             r"course copied"):
        run_notebook(server["url"], server["token"], "nowhere/00_setup.ipynb")


def test_an_nbgitpuller_link_pulls_the_course_and_opens_a_notebook_that_is_there(server, tmp_path):
    # A course repository on this machine (file://), cloned by the learner's nbgitpuller.
    repo = tmp_path / "course-repo"
    shutil.copytree(ROOT / "notebooks", repo / "notebooks",
                    ignore=shutil.ignore_patterns("src", "__pycache__", ".ipynb_checkpoints"))
    git = ["git", "-C", str(repo), "-c", "user.name=course", "-c", "user.email=course@localhost"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "the course"], check=True)
    link = nbgitpuller_link("https://hub.invalid", f"file://{repo}", "01_eager_launches")
    query = {k: v[0] for k, v in parse_qs(urlparse(link).query).items()}
    assert urlparse(link).path == "/hub/user-redirect/git-pull"
    with requests.get(f"{server['url']}/git-pull/api", stream=True, timeout=120,
                      params={"repo": query["repo"], "branch": query["branch"]},
                      headers={"Authorization": f"token {server['token']}"}) as r:
        events = [json.loads(line[len("data:"):]) for line in r.iter_lines(decode_unicode=True)
                  if line and line.startswith("data:")]
    assert events and events[-1]["phase"] == "finished", events[-3:]
    opened = query["urlpath"].removeprefix("lab/tree/")
    assert opened == "course-repo/notebooks/01_eager_launches.ipynb"
    assert (server["home"] / opened).is_file()


def test_the_server_leaves_no_kernel_running_once_stopped(server):
    # Last in this file (pytest keeps a module's order): it stops the module's server.
    assert server["seen"]
    proc = server["proc"]
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    gone, alive = psutil.wait_procs(list(server["seen"].values()), timeout=15)
    assert not alive, f"still running after the server stopped: {alive}"
