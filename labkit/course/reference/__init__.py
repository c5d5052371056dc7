"""A real GPU's reference figures for the notebooks: one labelled note per notebook.

The figures live as data, ``labkit/course/reference/nbNN.json``, one file per notebook::

    {"gpu": "NVIDIA H200",
     "source": "what produced them (a labkit command and its JSON key), for maintainers",
     "figures": [{"label": "eager launch, per kernel", "value": 16.0, "unit": "µs"},
                 {"label": "graph replay, per kernel", "from": "h200-bench.json#graph_us_per_kernel",
                  "unit": "µs"}, ...],
     "text": "one optional sentence on how to read them"}

A figure the GPU's calibration files hold (``labkit/calibration/``) is not typed again: its
``"from"`` names the file and the key path (dots between keys), and `load` reads the value
there. A figure from elsewhere (a C++ program, a framework) carries its ``"value"``.
`note("01")` renders the file as the notebook's one reference note, so a figure is typed once,
never in prose. The note names the GPU; dates and run counts stay out of it (they belong
to the maintainers' measurements document).
"""
from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources

from labkit._calibration import DIR as CALIBRATION_DIR

__all__ = ["note", "load", "figure"]


@cache
def _calibration_file(name: str) -> dict:
    return json.loads((CALIBRATION_DIR / name).read_text(encoding="utf-8"))


def resolve(source: str) -> float:
    """The value at ``"file.json#key.path"`` in ``labkit/calibration/``.

    Raises
    ------
    KeyError
        Naming the file and the key that is missing there.
    """
    name, _, keys = source.partition("#")
    if not (CALIBRATION_DIR / name).is_file():
        raise KeyError(f"{source!r}: labkit/calibration/ has no {name}")
    value = _calibration_file(name)
    for key in keys.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(f"{source!r}: labkit/calibration/{name} has no {keys!r} (no {key!r})")
        value = value[key]
    return value


def load(notebook: str) -> dict:
    """The reference data of notebook ``notebook`` ("01", "07" …) as a dict, each ``"from"``
    replaced by the value it names."""
    name = f"nb{notebook}.json"
    path = resources.files(__package__) / name
    if not path.is_file():
        raise FileNotFoundError(f"no reference figures for notebook {notebook}: "
                                f"add labkit/course/reference/{name}")
    data = json.loads(path.read_text(encoding="utf-8"))
    for row in data["figures"]:
        if "from" in row:
            row["value"] = resolve(row["from"])
    return data


def figure(notebook: str, label: str) -> float:
    """One reference figure's value, by its label."""
    for row in load(notebook)["figures"]:
        if row["label"] == label:
            return row["value"]
    raise KeyError(f"notebook {notebook}'s reference data has no figure {label!r}")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


class _Note:
    def __init__(self, data):
        self.data = data

    def _rows(self):
        return [(r["label"], f"{_fmt(r['value'])} {r.get('unit', '')}".strip())
                for r in self.data["figures"]]

    def __repr__(self):
        head = f"For reference, measured on an {self.data['gpu']}:"
        lines = [head] + [f"  {k}: {v}" for k, v in self._rows()]
        if self.data.get("text"):
            lines.append(self.data["text"])
        return "\n".join(lines)

    def _repr_html_(self):
        rows = "".join(f"<tr><td>{html.escape(k)}</td><td style='text-align:right'>"
                       f"{html.escape(v)}</td></tr>" for k, v in self._rows())
        text = (f"<p style='margin:4px 0'>{html.escape(self.data['text'])}</p>"
                if self.data.get("text") else "")
        return ('<div class="labkit-reference" style="border-left:4px solid #4a7fb5;'
                'background:#eef4fb;color:#222;padding:6px 10px;margin:4px 0">'
                f"<b>For reference, measured on an {html.escape(self.data['gpu'])}</b>"
                f"<table style='margin:4px 0'>{rows}</table>{text}</div>")


def note(notebook: str):
    """The notebook's reference note: display it as a cell's last expression."""
    return _Note(load(notebook))
