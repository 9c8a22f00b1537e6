"""The p-model examples' figure parts (gd/plots.py lists them): each draws the runs whose
data set reads its key."""

from __future__ import annotations

from ..parts import FigurePart
from . import digits, maxmargin

MAXMARGIN = FigurePart(
    name="max-margin examples",
    selects=maxmargin.selects,
    figures=maxmargin.figures,
    doc="the path of p in the token plane per example, the losses compared",
)
DIGITS = FigurePart(
    name="digits",
    selects=digits.selects,
    figures=digits.figures,
    doc="the patches GD selected against p^mm, per (n, patch)",
)
PARTS = (MAXMARGIN, DIGITS)
