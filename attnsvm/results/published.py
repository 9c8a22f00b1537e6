"""What an experiment publishes to the README: per sweep, its row of the experiment table (what
it shows, its figures) and optionally a headline row rendered from one of its published tables
in docs/results/. Each experiment declares its own in its registry entry,

    def published() -> list[Published]      # attnsvm/experiments/__init__.py

and ``python -m attnsvm.publish --readme`` renders every built-in experiment's (readme.py); by
convention an experiment keeps them in its readme_rows.py. This module is a leaf: experiments
import it, it imports nothing of attnsvm. The cell helpers below are for the row renderers:
they read the tables' cells as strings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Published:
    """One published sweep (sweeps/<sweep>.yaml).

    Attributes:
        sweep: its name; its tables are docs/results/<sweep>_*.csv, its timing sweeps.json's.
        what: the README experiment table's first cell.
        figures: (label, file in docs/figures/) links of its figure cell.
        headline: (published table, renderer of its rows -> one README headline row), or None.
    """

    sweep: str
    what: str
    figures: tuple[tuple[str, str], ...] = ()
    headline: tuple[str, Callable[[list[dict]], str]] | None = None


# ---------------------------------------------------------------- cells of published tables
def num(row: dict, key: str) -> float:
    return float(row[key])


def joined(values) -> str:
    """The distinct values, one if all agree, else 'a / b'."""
    values = sorted(set(values))
    return values[0] if len(values) == 1 else " / ".join(values)


def small(x: float) -> str:
    return f"{x:.3f}" if abs(x) >= 0.01 else f"{x:.2g}"


def ranges(values: list[int]) -> str:
    """[3, 4, 5, 6, 9] -> '3–6, 9'."""
    parts, values = [], sorted(values)
    for v in values:
        if parts and v == parts[-1][1] + 1:
            parts[-1][1] = v
        else:
            parts.append([v, v])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in parts)
