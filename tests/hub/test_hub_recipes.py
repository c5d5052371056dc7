"""The hub recipes read as data: the one-machine config as JupyterHub loads it, and the Zero to
JupyterHub values (profiles, GPU resources, culler) against what the chart and JupyterHub take."""
from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest
import yaml
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parents[2]
VALUES = ROOT / "hub" / "z2jh" / "values.yaml"
LOCAL = ROOT / "hub" / "one-machine" / "jupyterhub_config.py"


def _values() -> dict:
    return yaml.safe_load(VALUES.read_text())


def _profiles() -> dict[str, dict]:
    return {p["slug"]: p for p in _values()["singleuser"]["profileList"]}


def _local(monkeypatch, **env) -> object:
    for key in ("COURSE_HUB_COURSE", "COURSE_HUB_PASSWORD", "COURSE_HUB_IDLE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return PyFileConfigLoader(LOCAL.name, path=str(LOCAL.parent)).load_config()


def test_the_simulator_profile_is_the_default_with_cpu_and_memory_limits():
    sim = _profiles()["sim"]
    assert sim["default"] is True
    override = sim["kubespawner_override"]
    assert override["cpu_limit"] >= override["cpu_guarantee"] > 0
    assert override["mem_limit"].endswith("G") and override["mem_guarantee"].endswith("G")
    assert override["environment"]["LABKIT_BACKEND"] == "sim"


def test_the_gpu_profiles_ask_for_a_whole_gpu_or_a_mig_slice_and_the_cuda_backend():
    whole = _profiles()["gpu"]["kubespawner_override"]
    mig = _profiles()["gpu-mig"]["kubespawner_override"]
    assert whole["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    [(resource, count)] = mig["extra_resource_limits"].items()
    assert resource.startswith("nvidia.com/mig-") and count == "1"
    for gpu in (whole, mig):
        assert gpu["environment"]["LABKIT_BACKEND"] == "cuda"
        assert gpu["image"].startswith(_values()["singleuser"]["image"]["name"] + ":")
        assert gpu["cpu_guarantee"] >= 1, "a GPU learner measures launches on the CPU: a whole core"


def test_both_recipes_stop_idle_servers_after_the_same_hour(monkeypatch):
    cull = _values()["cull"]
    assert cull["enabled"] is True and cull["timeout"] == 3600
    config = _local(monkeypatch, COURSE_HUB_COURSE=str(ROOT), COURSE_HUB_PASSWORD="x" * 8)
    [culler] = config.JupyterHub.services
    assert "--timeout=3600" in culler["command"] and "jupyterhub_idle_culler" in culler["command"]
    [role] = config.JupyterHub.load_roles
    assert role["services"] == ["idle-culler"] and "delete:servers" in role["scopes"]


def test_the_authenticator_and_spawner_the_recipes_name_are_jupyterhubs_own():
    authenticators = {e.name for e in entry_points(group="jupyterhub.authenticators")}
    spawners = {e.name for e in entry_points(group="jupyterhub.spawners")}
    assert _values()["hub"]["config"]["JupyterHub"]["authenticator_class"] in authenticators
    text = LOCAL.read_text()
    assert 'authenticator_class = "shared-password"' in text and "shared-password" in authenticators
    assert 'spawner_class = "simple"' in text and "simple" in spawners


def test_the_local_recipe_serves_this_machine_only_unless_told(monkeypatch):
    config = _local(monkeypatch, COURSE_HUB_COURSE=str(ROOT), COURSE_HUB_PASSWORD="x" * 8)
    assert config.JupyterHub.ip == "127.0.0.1"
    assert config.SharedPasswordAuthenticator.user_password == "x" * 8
    assert config.Spawner.environment["LABKIT_BACKEND"] == "auto"


def test_the_local_recipe_refuses_a_short_or_missing_room_password(monkeypatch):
    with pytest.raises(ValueError, match=r"^COURSE_HUB_PASSWORD is unset or shorter than 8"):
        _local(monkeypatch, COURSE_HUB_COURSE=str(ROOT), COURSE_HUB_PASSWORD="short")


def test_the_local_recipe_refuses_a_missing_course_folder(monkeypatch):
    from hub.course import CourseError
    with pytest.raises(CourseError, match=r"^no course folder given: set COURSE_HUB_COURSE"):
        _local(monkeypatch, COURSE_HUB_PASSWORD="x" * 8)
