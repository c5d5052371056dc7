"""Without JupyterHub's proxy the hub cannot start: the tools say how to install it."""
from __future__ import annotations

import pytest

from hub.local import HubError, LocalHub, proxy_missing


def test_a_missing_proxy_is_named_with_its_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert proxy_missing().startswith("JupyterHub's proxy, configurable-http-proxy, is not on PATH: "
                                      "install it with `npm install -g configurable-http-proxy`")
    with pytest.raises(HubError, match=r"^JupyterHub's proxy, configurable-http-proxy, is not on PATH"):
        LocalHub(workdir=tmp_path / "hub").start()
