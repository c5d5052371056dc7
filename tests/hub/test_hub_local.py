"""A real JupyterHub from the one-machine recipe, on 127.0.0.1: learners log in, their servers
start, each runs notebook 00 in its own kernel, and every process the hub started is gone after.

Needs JupyterHub's proxy (`npm install -g configurable-http-proxy`; .ci/run installs it); without
it these tests skip with that reason, and tests/hub/test_hub_single_server.py still runs the
notebook in a learner's Jupyter server without the hub.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlparse

import pytest

from hub.links import nbgitpuller_link
from hub.local import HubError, LocalHub, proxy_missing

pytestmark = pytest.mark.skipif(proxy_missing() is not None, reason=str(proxy_missing()))

NOTEBOOK = "solutions/00_setup_solution"
LEARNERS = ["ada", "grace", "linus"]


def test_three_learners_run_notebook_00_in_their_own_kernels_and_nothing_is_left_running():
    hub = LocalHub(env={"LABKIT_BACKEND": "sim"})
    (hub.workdir / "homes").mkdir()
    (hub.workdir / "homes" / "broken").write_text("a file where this learner's home should be")
    with hub:
        assert hub.url.startswith("http://127.0.0.1:")
        assert hub.services() == ["course-driver", "idle-culler"]
        with pytest.raises(HubError, match=r"^learner 'ada' could not log in \(HTTP 403\)"):
            hub.login("ada", password="not the room's password")
        browsers = {name: hub.login(name) for name in LEARNERS + ["broken"]}
        with ThreadPoolExecutor(len(LEARNERS)) as pool:
            tokens = dict(zip(LEARNERS, pool.map(hub.start_server, LEARNERS)))
        with pytest.raises(HubError, match=r"^learner broken's server failed to start: .*"
                                           r"could not copy the course's notebooks into"):
            hub.start_server("broken")
        with ThreadPoolExecutor(len(LEARNERS)) as pool:
            runs = dict(zip(LEARNERS, pool.map(
                lambda n: hub.run(n, tokens[n], NOTEBOOK), LEARNERS)))
        # An nbgitpuller link leads a logged-in learner to their own server's git-pull.
        link = nbgitpuller_link(hub.url, "https://example.org/cuda-graphs-lab", "00_setup")
        r = browsers["ada"].get(link, allow_redirects=False, timeout=30)
        assert r.status_code == 302, r.status_code
        where = urlparse(r.headers["Location"])
        if where.path.startswith("/hub/spawn/"):    # the hub starts the server first, then goes on
            where = urlparse(parse_qs(where.query)["next"][0])
        assert where.path.endswith("/user/ada/git-pull"), where
        assert parse_qs(where.query)["urlpath"] == ["lab/tree/cuda-graphs-lab/notebooks/00_setup.ipynb"]
        for name in LEARNERS:
            assert (hub.home(name) / "cuda-graphs-lab/notebooks/00_setup.ipynb").is_file()
            text = runs[name].text()
            assert "backend : sim" in text, text[:500]
            assert "correct: every element is 3·x + 1" in text, text[-500:]
        started = hub.started()
    commands = list(started.values())
    assert sum("configurable-http-proxy" in c for c in commands) == 1, commands
    assert sum("jupyterhub_idle_culler" in c for c in commands) == 1, commands
    assert sum("jupyterhub.singleuser" in c for c in commands) == len(LEARNERS), commands
    assert sum("ipykernel" in c for c in commands) >= len(LEARNERS), commands
    assert not [c for p, c in started.items() if p.is_running()]


def test_a_wrong_course_path_stops_the_hub_with_the_fix(tmp_path):
    with pytest.raises(HubError, match=r"^the hub did not start .*COURSE_HUB_COURSE='.*/nowhere' "
                                       r"does not exist"):
        LocalHub(course=tmp_path / "nowhere", workdir=tmp_path / "hub").start()


def test_a_course_path_that_is_not_the_course_stops_the_hub_naming_what_it_lacks(tmp_path):
    with pytest.raises(HubError, match=r"^the hub did not start .*is not the course: it has no "
                                       r"notebooks/00_setup\.ipynb"):
        LocalHub(course=tmp_path, workdir=tmp_path / "hub").start()


def test_a_learner_server_that_cannot_start_is_reported_with_the_hubs_reason():
    with LocalHub(extra_config='c.Spawner.cmd = ["/nonexistent/jupyterhub-singleuser"]') as hub:
        hub.login("ada")
        with pytest.raises(HubError, match=r"^learner ada's server failed to start: .*"
                                           r"/nonexistent/jupyterhub-singleuser"):
            hub.start_server("ada")


def test_the_capacity_benchmark_prints_learners_per_core_and_a_rooms_size():
    import io

    from hub.bench import bench

    out = io.StringIO()
    result = bench(max_learners=1, notebook=NOTEBOOK, out=out)
    text = out.getvalue()
    assert [r["learners"] for r in result["rounds"]] == [1]
    assert result["learners_per_core"] == 1 / result["cores"]
    assert "learners per core: " in text and "a room of 30: " in text, text
    assert 100 < result["mib_per_learner"] < 4096, result


def test_the_instructors_check_names_a_wrong_course_path_and_exits_non_zero(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    import os
    run = subprocess.run([sys.executable, "-m", "hub", "check", "--course", str(tmp_path / "nowhere")],
                         cwd=root, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    assert run.returncode == 1
    assert run.stderr.startswith("hub check failed: the hub did not start"), run.stderr
    assert f"COURSE_HUB_COURSE='{tmp_path / 'nowhere'}' does not exist" in run.stderr
    # The hub's log, which the message points at, is kept.
    [log] = tmp_path.glob("course-hub-*/jupyterhub.log")
    assert str(log) in run.stderr
