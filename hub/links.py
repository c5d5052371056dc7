"""nbgitpuller links: one click pulls the course into a learner's home and opens a notebook.

A link has the form ``HUB/hub/user-redirect/git-pull?repo=...&branch=...&urlpath=...``: the hub
logs the learner in, starts their server, and nbgitpuller (installed in the learner's
environment) clones the repository into ``~/NAME`` the first time, or merges the course's new
commits into it without touching the learner's edits. ``urlpath`` is where the browser lands.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode, urlparse


def nbgitpuller_link(hub: str, repo: str, notebook: str, branch: str = "main",
                     interface: str = "lab") -> str:
    """The link that pulls ``repo`` at ``branch`` and opens ``notebooks/NOTEBOOK.ipynb``.

    Parameters
    ----------
    hub
        The hub's address, e.g. ``https://hub.example.org``.
    repo
        The course repository's clone URL, e.g. ``https://github.com/OWNER/cuda-graphs-lab``.
    notebook
        The notebook's name without folder or extension, e.g. ``01_eager_launches``.
    branch
        The branch or tag to hand out: the one the hub's image was built from, so that the
        notebooks and the installed ``labkit`` agree.
    """
    for what, url in (("hub", hub), ("repo", repo)):
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https", "file") or not (parsed.netloc or parsed.path):
            raise ValueError(f"the {what} address {url!r} is not a URL: give it with its scheme, "
                             f"e.g. https://...")
    if not re.fullmatch(r"\d\d_[a-z0-9_]+", notebook):
        raise ValueError(f"{notebook!r} is not a course notebook's name: give it as "
                         f"NN_topic, e.g. 01_eager_launches")
    folder = urlparse(repo).path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    path = f"{folder}/notebooks/{notebook}.ipynb"
    urlpath = f"lab/tree/{path}" if interface == "lab" else f"tree/{path}"
    query = urlencode({"repo": repo, "branch": branch, "urlpath": urlpath})
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def repository_url(pyproject: str | Path) -> str:
    """The course's repository from pyproject.toml's ``[project.urls] Repository``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    urls = tomllib.loads(Path(pyproject).read_text()).get("project", {}).get("urls", {})
    if not urls.get("Repository"):
        raise ValueError("pyproject.toml has no [project.urls] Repository (the course is not "
                         "published yet): pass --repo with the repository's clone URL")
    return urls["Repository"]
