"""A real GPU's reference figures for the notebooks: one labelled note per notebook.

The figures live as data, ``labkit/course/reference/nbNN.json``, one file per notebook::

    {"gpu": "NVIDIA H200",
     "source": "what produced them (a labkit command and its JSON key), for maintainers",
     "figures": [{"label": "eager launch, per kernel", "value": 16.0, "unit": "µs"}, ...],
     "text": "one optional sentence on how to read them"}

`note("01")` renders that file as the notebook's one reference note, so a figure is typed
once, never in prose. The note names the GPU; dates and run counts stay out of it (they belong
to the maintainers' measurements document).
"""
from __future__ import annotations

import html
import json
from importlib import resources

__all__ = ["note", "load", "figure"]


def load(notebook: str) -> dict:
    """The reference data of notebook ``notebook`` ("01", "07" …) as a dict."""
    name = f"nb{notebook}.json"
    path = resources.files(__package__) / name
    if not path.is_file():
        raise FileNotFoundError(f"no reference figures for notebook {notebook}: "
                                f"add labkit/course/reference/{name}")
    return json.loads(path.read_text(encoding="utf-8"))


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
