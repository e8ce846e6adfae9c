"""What a spreadsheet would read as a formula in a CSV file, whatever separator its locale splits on.

Shared by tests/test_attacks_collect.py (the export alone) and tests/test_attacks_batch.py (the export
of a batch with every attack in it).
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

__all__ = ["DELIMITERS", "formula_cells"]

DELIMITERS = [",", ";", "\t", "|"]


def formula_cells(path: Path) -> dict[str, list[str]]:
    """delimiter -> every cell that starts like a formula (after spaces and double quotes) when the
    file is read with that delimiter; plain numbers are not formulas."""
    text = path.read_text(encoding="utf-8")
    found = {}
    for delimiter in DELIMITERS:
        cells = [c for row in csv.reader(text.splitlines(), delimiter=delimiter) for c in row]
        found[delimiter] = [c for c in cells if c.lstrip(' "')[:1] in ("=", "+", "-", "@", "\t", "\r", "\n")
                            and not re.fullmatch(r"\s*-?[0-9.]+\s*", c)]
    return found
