"""The course served by JupyterHub: recipes, and the instructor's tools that try them for real.

Recipes (files beside this one): ``Dockerfile`` (the course image),
``one-machine/jupyterhub_config.py`` (one machine), ``z2jh/values.yaml`` (Zero to JupyterHub on
Kubernetes). The instructor's notes,
``docs/instructors.md``, say which to choose when.

Tools (``python -m hub --help``, from the repository root):

- ``course``: find the course folder and copy its notebooks into a learner's home, with an error
  that names the fix when the folder is missing or is not the course;
- ``remote``: execute a notebook in a kernel of a running Jupyter server (REST + websocket), as
  a learner's "Run All" does;
- ``local``: start a real JupyterHub from the one-machine recipe on 127.0.0.1, log learners in,
  start their servers, and stop every process it started;
- ``bench``: the capacity benchmark, learners per core on the simulator;
- ``links``: nbgitpuller links that open a notebook.

This package is not part of ``labkit`` on purpose: ``import labkit`` chooses the backend (it
imports numba and may probe a GPU), which the hub's own process must not do.
"""
