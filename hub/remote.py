"""Execute a notebook in a kernel of a running Jupyter server, as a learner's "Run All" does.

The notebook is the one in the server's own files (read through its contents API), its kernel
is started the way JupyterLab starts one (a session for that path, so the kernel runs in the
notebook's folder), and every code cell goes to the kernel over the server's websocket
(``/api/kernels/ID/channels``, Jupyter's messaging protocol in JSON). Behind JupyterHub the
server's URL is ``http://HUB/user/NAME``; the token is one the hub issued for that learner.

A cell tagged ``raises-exception`` may fail, as in nbclient; any other error stops the run with
`NotebookFailed`, naming the cell and the error.
"""
from __future__ import annotations

import datetime
import json
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

import requests
import websocket


class NotebookFailed(RuntimeError):
    """A cell raised, or the kernel did not answer in time."""


@dataclass
class Run:
    """One executed notebook: its cells' outputs, and where the time went (seconds)."""

    path: str
    outputs: list = field(default_factory=list)   # one list of output dicts per code cell
    kernel_start_s: float = 0.0                   # session created until the kernel answers
    total_s: float = 0.0                          # session created until the last cell is done

    def text(self) -> str:
        """Every stream and text/plain output, in order: what a check reads."""
        parts = []
        for cell in self.outputs:
            for out in cell:
                if out["output_type"] == "stream":
                    parts.append(out["text"])
                elif "data" in out and "text/plain" in out["data"]:
                    parts.append(out["data"]["text/plain"])
        return "".join(parts)


def run_notebook(server: str, token: str, path: str, *, timeout: float = 300,
                 cell_timeout: float = 240) -> Run:
    """Run every code cell of the server's notebook ``path`` in a new kernel; return the outputs.

    Parameters
    ----------
    server
        The Jupyter server's base URL, e.g. ``http://127.0.0.1:8000/user/alice``.
    token
        A token the server accepts (behind a hub: one the hub issued for that learner).
    path
        The notebook's path in the server's files, e.g. ``cuda-graphs-lab/notebooks/00_setup.ipynb``.
    """
    server = server.rstrip("/")
    http = requests.Session()
    http.headers["Authorization"] = f"token {token}"
    r = http.get(f"{server}/api/contents/{quote(path)}", params={"content": 1}, timeout=30)
    if r.status_code == 404:
        raise NotebookFailed(f"{server} has no notebook {path!r}: was the course copied into "
                             f"the learner's home?")
    r.raise_for_status()
    cells = r.json()["content"]["cells"]
    t0 = time.monotonic()
    r = http.post(f"{server}/api/sessions", json={
        "path": path, "name": path.rsplit("/", 1)[-1], "type": "notebook",
        "kernel": {"name": "python3"}}, timeout=120)
    r.raise_for_status()
    session = r.json()
    run = Run(path)
    try:
        ws_url = server.replace("http", "ws", 1) + \
            f"/api/kernels/{session['kernel']['id']}/channels?session_id={uuid.uuid4().hex}"
        ws = websocket.create_connection(ws_url, header=[f"Authorization: token {token}"],
                                         timeout=30)
        try:
            kernel = _Kernel(ws, deadline=t0 + timeout)
            kernel.request("kernel_info_request", {}, cell_timeout)
            run.kernel_start_s = time.monotonic() - t0
            for index, cell in enumerate(cells):
                if cell["cell_type"] != "code":
                    continue
                source = "".join(cell["source"]) if isinstance(cell["source"], list) \
                    else cell["source"]
                outputs, reply = kernel.execute(source, cell_timeout)
                run.outputs.append(outputs)
                tags = cell.get("metadata", {}).get("tags", [])
                if reply.get("status") == "error" and "raises-exception" not in tags:
                    tb = "\n".join(reply.get("traceback", [])[-3:])
                    raise NotebookFailed(
                        f"{path}, cell {index}: {reply.get('ename')}: {reply.get('evalue')}\n{tb}")
        finally:
            ws.close()
        run.total_s = time.monotonic() - t0
    finally:
        http.delete(f"{server}/api/sessions/{session['id']}", timeout=60)
    return run


class _Kernel:
    """Jupyter's messaging protocol over a server's kernel websocket (JSON frames)."""

    def __init__(self, ws, deadline: float):
        self.ws = ws
        self.deadline = deadline
        self.session = uuid.uuid4().hex

    def _send(self, msg_type: str, content: dict) -> str:
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "username": "hub-driver",
                       "session": self.session, "version": "5.3",
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "content": content, "channel": "shell",
            "buffers": []}))
        return msg_id

    def _recv(self, until: float) -> dict:
        left = min(until, self.deadline) - time.monotonic()
        if left <= 0:
            raise NotebookFailed("the kernel did not answer in time (a cell ran too long, or "
                                 "the machine is overloaded)")
        self.ws.settimeout(left)
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            raise NotebookFailed("the kernel did not answer in time (a cell ran too long, or "
                                 "the machine is overloaded)") from None

    def request(self, msg_type: str, content: dict, timeout: float) -> dict:
        msg_id = self._send(msg_type, content)
        until = time.monotonic() + timeout
        while True:
            msg = self._recv(until)
            if msg.get("parent_header", {}).get("msg_id") == msg_id and msg["channel"] == "shell":
                return msg["content"]

    def execute(self, code: str, timeout: float) -> tuple[list, dict]:
        msg_id = self._send("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        until = time.monotonic() + timeout
        outputs, reply, idle = [], None, False
        while reply is None or not idle:
            msg = self._recv(until)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if msg["channel"] == "shell" and kind == "execute_reply":
                reply = content
            elif kind == "status":
                idle = content["execution_state"] == "idle"
            elif kind == "stream":
                if outputs and outputs[-1]["output_type"] == "stream" \
                        and outputs[-1]["name"] == content["name"]:
                    outputs[-1]["text"] += content["text"]
                else:
                    outputs.append({"output_type": "stream", **content})
            elif kind in ("display_data", "execute_result", "error"):
                outputs.append({"output_type": kind, **content})
        return outputs, reply
