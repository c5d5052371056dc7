"""Run the pending capture-mode cells of notebook 02 in a plain Python process, after the
notebook's own setup they use (its cells 1 and 13, taken from notebooks/02_stream_capture.ipynb).

Run: ``PYTHONPATH=$PWD LABKIT_BACKEND=sim MPLBACKEND=Agg python notebooks/_pending/run_02_capture_modes_cells.py``.
Delete this file with the pending cells once they are spliced into the notebook's source.
"""
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
nb = json.loads((HERE.parent / "02_stream_capture.ipynb").read_text())
setup = ["".join(nb["cells"][i]["source"]) for i in (1, 13)]
assert setup[0].startswith("import labkit") and setup[1].startswith("def usable_again"), \
    "notebook 02's cells moved: pick its setup and usable_again cells again"
pending = (HERE / "02_capture_modes_cells.py").read_text()
code_cells = [c.split("\n", 1)[1] for c in re.split(r"^(?=# %%)", pending, flags=re.M)
              if c.startswith("# %%") and not c.startswith("# %% [markdown]")]
scope = {}
for i, src in enumerate(setup + code_cells):
    exec(compile(src, f"<cell {i}>", "exec"), scope)
print(f"ran {len(code_cells)} pending code cells after the notebook's setup")
