"""Start a real JupyterHub from the one-machine recipe on 127.0.0.1, drive it, stop it all.

`LocalHub` runs ``jupyterhub`` with ``hub/one-machine/jupyterhub_config.py`` (or another recipe) loaded
as is, plus what a try-out needs on top: free loopback ports, its own folder for the hub's
database and the learners' homes, and a service token for the REST API. Learners log in through
the login form (the recipe's authenticator checks the room's password), their servers start
through the REST API, and each runs notebooks in its own kernel (`hub.remote`).

On exit it stops the hub (which stops the proxy, the servers and their kernels) and checks that
every process the hub started is gone; any that is left is ended and reported.
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
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import psutil
import requests

from hub.course import LEARNER_FOLDER
from hub.remote import Run, run_notebook

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "hub" / "one-machine" / "jupyterhub_config.py"
PROXY = "configurable-http-proxy"


class HubError(RuntimeError):
    """The hub, or a learner's server, did not start or stop; the message says why and where."""


def proxy_missing() -> str | None:
    """Why a hub cannot start here (its proxy is not installed), or None when it can."""
    if shutil.which(PROXY):
        return None
    return (f"JupyterHub's proxy, {PROXY}, is not on PATH: install it with "
            f"`npm install -g {PROXY}` (Node.js's npm: `apt-get install -y nodejs npm`)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalHub:
    """A JupyterHub on 127.0.0.1, from a recipe, for as long as the ``with`` block lasts.

    Parameters
    ----------
    course
        The course folder the recipe serves (``COURSE_HUB_COURSE``); the repository by default.
    recipe
        The JupyterHub configuration file to load, unchanged.
    workdir
        Where the hub's database, log and learners' homes go; a new temporary folder by default,
        removed on a clean exit and kept, with the hub's log, after a failure.
    extra_config
        Lines of JupyterHub configuration appended after the recipe's (``c.Spawner...``).
    env
        Extra environment for the hub (and through the recipe, the learners' servers).
    """

    def __init__(self, course: str | os.PathLike | None = ROOT, recipe: Path = RECIPE,
                 workdir: str | os.PathLike | None = None, extra_config: str = "",
                 env: dict | None = None, start_timeout: float = 60):
        self.course = course
        self.recipe = Path(recipe)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="course-hub-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.extra_config = extra_config
        self.env = env or {}
        self.start_timeout = start_timeout
        self.password = secrets.token_urlsafe(12)
        self.token = secrets.token_hex(32)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.workdir / "jupyterhub.log"
        self.proc: subprocess.Popen | None = None
        self._seen: dict[int, psutil.Process] = {}
        self._commands: dict[int, str] = {}
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"token {self.token}"
        self._watching = threading.Event()

    # -- the hub -------------------------------------------------------------------------------
    def start(self) -> "LocalHub":
        why = proxy_missing()
        if why:
            if self._own_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            raise HubError(why)
        config = self.workdir / "try_config.py"
        config.write_text(textwrap.dedent(f"""\
            c = get_config()
            load_subconfig({str(self.recipe)!r})
            # The try-out's own addresses, files and REST token, on top of the recipe.
            c.JupyterHub.ip = "127.0.0.1"
            c.JupyterHub.port = {self.port}
            c.JupyterHub.hub_ip = "127.0.0.1"
            c.Spawner.ip = "127.0.0.1"
            c.JupyterHub.hub_port = {_free_port()}
            c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{_free_port()}"
            c.JupyterHub.db_url = "sqlite:///{self.workdir / 'jupyterhub.sqlite'}"
            c.JupyterHub.cookie_secret_file = {str(self.workdir / 'cookie_secret')!r}
            c.SimpleLocalProcessSpawner.home_dir_template = {str(self.workdir / 'homes' / '{username}')!r}
            c.JupyterHub.services.append({{"name": "course-driver", "api_token": {self.token!r}}})
            c.JupyterHub.load_roles.append({{
                "name": "course-driver", "services": ["course-driver"],
                "scopes": ["admin:users", "admin:servers", "tokens", "list:services", "read:services"]}})
            """) + self.extra_config + "\n")
        env = {**os.environ, **self.env,
               "COURSE_HUB_PASSWORD": self.password,
               "COURSE_HUB_HOMES": str(self.workdir / "homes")}
        if self.course is not None:
            env["COURSE_HUB_COURSE"] = str(self.course)
        else:
            env.pop("COURSE_HUB_COURSE", None)
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=self.workdir, env=env,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + self.start_timeout
        while True:
            self._note_processes()
            if self.proc.poll() is not None:
                code, reason = self.proc.returncode, self._log_reason()
                self.stop(keep=True)
                raise HubError(f"the hub did not start (it exited with code {code}): {reason}")
            try:
                if self.api.get(f"{self.url}/hub/api/", timeout=2).ok:
                    threading.Thread(target=self._watch, daemon=True).start()
                    return self
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                self.stop(keep=True)
                raise HubError(f"the hub did not answer on {self.url} within "
                               f"{self.start_timeout:.0f} s; its log: {self.log_path}")
            time.sleep(0.3)

    def _log_reason(self) -> str:
        """The lines of the hub's log that say why it stopped."""
        lines = self.log_path.read_text(errors="replace").splitlines() \
            if self.log_path.exists() else []
        errors = [ln for ln in lines if "Error" in ln or "error" in ln]
        picked = errors[-3:] or lines[-5:]
        return " | ".join(ln.strip() for ln in picked) + f" (the whole log: {self.log_path})"

    def _note_processes(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            for p in psutil.Process(self.proc.pid).children(recursive=True):
                if p.pid not in self._seen:
                    self._seen[p.pid] = p
                    try:
                        self._commands[p.pid] = " ".join(p.cmdline())
                    except psutil.Error:
                        self._commands[p.pid] = p.name()
        except psutil.NoSuchProcess:
            pass

    def _watch(self) -> None:
        """Note the hub's descendants twice a second, so short-lived kernels are seen too."""
        self._watching.set()
        while self._watching.is_set() and self.proc is not None:
            self._note_processes()
            time.sleep(0.5)

    def started(self) -> dict[psutil.Process, str]:
        """Every process the hub was seen to start, running or not, with its command line."""
        self._note_processes()
        return {p: self._commands[pid] for pid, p in self._seen.items()}

    def processes(self) -> list[psutil.Process]:
        """Every process the hub has started that is still running (proxy, servers, kernels...)."""
        self._note_processes()
        return [p for p in self._seen.values() if p.is_running()]

    def stop(self, timeout: float = 60, keep: bool = False) -> None:
        """Stop the hub and everything it started; raise `HubError` naming any process left.

        The working folder is removed if this object made it, unless ``keep`` (after a failure,
        its log is what the error message points at).
        """
        if self.proc is None:
            return
        self._watching.clear()
        self._note_processes()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)   # JupyterHub stops its servers and proxy
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        gone, alive = psutil.wait_procs([p for p in self._seen.values() if p.is_running()],
                                        timeout=15)
        left = [f"{p.pid} ({self._commands[p.pid][:80]})" for p in alive if p.is_running()]
        for p in alive:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.proc = None
        if self._own_workdir and not keep and not left:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if left:
            raise HubError(f"processes the hub started were still running after it stopped "
                           f"(now ended): {', '.join(left)}")

    def __enter__(self) -> "LocalHub":
        return self.start()

    def __exit__(self, exc_type, *exc) -> None:
        self.stop(keep=exc_type is not None)

    # -- learners -------------------------------------------------------------------------------
    def login(self, name: str, password: str | None = None) -> requests.Session:
        """Log ``name`` in through the hub's login form, as a learner's browser does."""
        s = requests.Session()
        s.get(f"{self.url}/hub/login", timeout=30)
        r = s.post(f"{self.url}/hub/login", timeout=60, allow_redirects=False, data={
            "username": name, "password": self.password if password is None else password,
            "_xsrf": s.cookies.get("_xsrf", "")})
        if r.status_code != 302:
            raise HubError(f"learner {name!r} could not log in (HTTP {r.status_code}): "
                           f"check the name and the room's password")
        return s

    def start_server(self, name: str, timeout: float = 180) -> str:
        """Start ``name``'s server through the REST API; return a token for it once it is ready."""
        r = self.api.post(f"{self.url}/hub/api/users/{name}/server", timeout=timeout)
        if r.status_code == 202:
            self._wait_ready(name, timeout)
        elif r.status_code not in (201, 400):   # 400: already running
            # A start that fails at once answers 500 with no reason; the spawn's progress says it.
            self._wait_ready(name, timeout, fallback=_message(r))
        self._note_processes()
        r = self.api.post(f"{self.url}/hub/api/users/{name}/tokens", timeout=30,
                          json={"note": "course try-out", "expires_in": 86400})
        r.raise_for_status()
        return r.json()["token"]

    def _wait_ready(self, name: str, timeout: float, fallback: str | None = None) -> None:
        with self.api.get(f"{self.url}/hub/api/users/{name}/server/progress", stream=True,
                          timeout=timeout) as r:
            if not r.ok:
                raise HubError(f"learner {name}'s server failed to start: "
                               f"{fallback or _message(r)}; the hub's log: {self.log_path}")
            for line in r.iter_lines(decode_unicode=True):
                self._note_processes()
                if not line or not line.startswith("data:"):
                    continue
                event = json.loads(line[len("data:"):])
                if event.get("ready"):
                    return
                if event.get("failed"):
                    raise HubError(f"learner {name}'s server failed to start: "
                                   f"{event.get('message')}; the hub's log: {self.log_path}")
        raise HubError(f"learner {name}'s server did not report ready; the hub's log: "
                       f"{self.log_path}")

    def stop_server(self, name: str) -> None:
        r = self.api.delete(f"{self.url}/hub/api/users/{name}/server", timeout=120)
        if r.status_code == 202:
            for _ in range(240):
                if not self.api.get(f"{self.url}/hub/api/users/{name}",
                                    timeout=30).json()["servers"]:
                    return
                time.sleep(0.5)

    def server_url(self, name: str) -> str:
        return f"{self.url}/user/{name}"

    def run(self, name: str, token: str, notebook: str, **kw) -> Run:
        """Execute the learner's copy of ``notebook`` (e.g. ``solutions/00_setup_solution``)."""
        path = f"{LEARNER_FOLDER}/notebooks/{notebook}.ipynb"
        return run_notebook(self.server_url(name), token, path, **kw)

    def home(self, name: str) -> Path:
        return self.workdir / "homes" / name

    def services(self) -> list[str]:
        r = self.api.get(f"{self.url}/hub/api/services", timeout=30)
        r.raise_for_status()
        return sorted(r.json())


def _message(r: requests.Response) -> str:
    try:
        return r.json().get("message", r.text)
    except ValueError:
        return f"HTTP {r.status_code} {r.text[:200]}"

