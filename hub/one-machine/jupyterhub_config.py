# The course on one machine: JupyterHub with a local process spawner, for a rehearsal on the
# instructor's machine or a small room that trusts itself.
#
#   pip install -e ".[hub]"                       # the course and JupyterHub, once for all
#   npm install -g configurable-http-proxy        # JupyterHub's proxy (Node.js)
#   COURSE_HUB_COURSE=$PWD COURSE_HUB_PASSWORD='a room password' \
#       jupyterhub -f hub/one-machine/jupyterhub_config.py
#
# Learners open http://THIS-MACHINE:8000, type any name and the room's password, and find the
# course in cuda-graphs-lab/notebooks/. Every learner's server runs as the Unix user that runs
# the hub (SimpleLocalProcessSpawner): learners can read each other's files and nothing caps
# their CPU or memory. For a room of strangers use The Littlest JupyterHub instead (one Unix
# user per learner, limits, the same culler); docs/instructors.md has its recipe.
#
# Settings, from the environment:
#   COURSE_HUB_COURSE    the course folder (holds notebooks/00_setup.ipynb); required
#   COURSE_HUB_PASSWORD  the room's shared password, 8 characters or more; required
#   COURSE_HUB_HOMES     where learners' homes go (default /srv/course-hub/homes)
#   COURSE_HUB_IP        the address to serve on (default 127.0.0.1: this machine only;
#                        0.0.0.0 for the room's network)
#   COURSE_HUB_PORT      default 8000
#   COURSE_HUB_IDLE      seconds of inactivity before a learner's server is stopped (default 3600)
#   LABKIT_BACKEND       the learners' backend: auto (default), sim or cuda
import os
import sys
from pathlib import Path

# The course's hub tools (hub/course.py) live beside this file, outside the labkit package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from hub.course import find_course, pre_spawn_hook  # noqa: E402

c = get_config()  # noqa: F821 (JupyterHub provides it)

# A missing or wrong course folder stops the hub here, with the fix in the message.
course = find_course(os.environ.get("COURSE_HUB_COURSE"))

c.JupyterHub.ip = os.environ.get("COURSE_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("COURSE_HUB_PORT", "8000"))

# Any name and the room's password (JupyterHub's SharedPasswordAuthenticator).
c.JupyterHub.authenticator_class = "shared-password"
password = os.environ.get("COURSE_HUB_PASSWORD", "")
if len(password) < 8:
    raise ValueError("COURSE_HUB_PASSWORD is unset or shorter than 8 characters: set it to the "
                     "password you will give the room")
c.SharedPasswordAuthenticator.user_password = password
c.Authenticator.allow_all = True

# Every learner's server is this Python's jupyterhub-singleuser, with the course installed.
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = os.path.join(
    os.environ.get("COURSE_HUB_HOMES", "/srv/course-hub/homes"), "{username}")
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab/tree/cuda-graphs-lab/notebooks/00_setup.ipynb"
c.Spawner.environment = {"LABKIT_BACKEND": os.environ.get("LABKIT_BACKEND", "auto")}
if os.geteuid() == 0:
    # Jupyter refuses to run as root unless told; the hub's user is every learner's here.
    c.Spawner.args = ["--ServerApp.allow_root=True"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 60
c.Spawner.pre_spawn_hook = pre_spawn_hook(course)

# Stop a learner's server after COURSE_HUB_IDLE seconds without activity (jupyterhub-idle-culler).
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                f"--timeout={int(os.environ.get('COURSE_HUB_IDLE', '3600'))}", "--cull-every=60"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
