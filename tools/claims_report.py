"""Which of the course's timing claims held, and which flipped, from a ``LABKIT_CLAIMS_LOG`` file.

``labkit.expect`` appends one JSON line per claim checked when ``LABKIT_CLAIMS_LOG`` is set; its
``notebook`` field is ``LABKIT_CLAIMS_TAG``, which ``tools/claims_under_load.sh`` sets to
``NOTEBOOK|CONDITION|MODE`` (for example ``01_eager_launches|load|learner``). This prints a
markdown table, one row per claim and one column per condition, then the claims that held under
the baseline condition and failed under another, with what was measured::

    python tools/claims_report.py LOG_DIR/claims.jsonl [--baseline idle]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def read(path: Path) -> tuple[dict, list[str]]:
    """``{(notebook, claim): {condition: (holds, measured)}}`` and the conditions in log order.

    A claim checked more than once under one condition counts as failed if it ever failed.
    """
    table: dict = {}
    conditions: list[str] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{n}: not a JSON line ({exc}); is this a LABKIT_CLAIMS_LOG file?")
        parts = (row.get("notebook") or "?").split("|")
        notebook, condition = parts[0], "|".join(parts[1:]) or "run"
        if condition not in conditions:
            conditions.append(condition)
        cell = table.setdefault((notebook, row["claim"]), {})
        held, _ = cell.get(condition, (True, ""))
        if held:
            cell[condition] = (bool(row["holds"]) and held, row["measured"])
    return table, conditions


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path, help="a LABKIT_CLAIMS_LOG file")
    p.add_argument("--baseline", help="the condition the others are compared with "
                                      "(default: the first one in the log)")
    a = p.parse_args(argv)
    if not a.log.exists():
        p.error(f"{a.log} does not exist: run the notebooks with LABKIT_CLAIMS_LOG={a.log}")
    table, conditions = read(a.log)
    if not table:
        p.error(f"{a.log} holds no claims")
    base = a.baseline or conditions[0]
    if base not in conditions:
        p.error(f"--baseline {base!r} is not in the log; it has {conditions}")
    # a condition is "load|learner": shown as "load, learner", since "|" splits a markdown cell
    print("| notebook | claim | " + " | ".join(c.replace("|", ", ") for c in conditions) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in conditions) + " |")
    for (nb, claim), cell in table.items():
        marks = ["held" if cell[c][0] else "**failed**" if c in cell else "-" for c in conditions]
        print(f"| {nb[:2]} | {claim} | " + " | ".join(marks) + " |")
    flipped = [(nb, claim, c, cell[c][1], cell[base][1]) for (nb, claim), cell in table.items()
               for c in conditions if c != base and c in cell and base in cell
               and cell[base][0] and not cell[c][0]]
    print(f"\n{len(flipped)} claims held under {base!r} and failed under another condition:")
    for nb, claim, c, got, was in flipped:
        print(f"- {nb} [{c}] {claim}: {got} (under {base}: {was})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
