"""``python -m labkit measurements``: write the maintainers' measurements document.

The procedure is `labkit.toolbox.measurements` (``--check``, ``--draft BENCH.json``); this verb
only calls it.
"""
from labkit.toolbox.measurements import main

__all__ = ["main"]
