"""The optimizer-geometry studies' figure part (gd/plots.py lists it)."""

from __future__ import annotations

from ..parts import FigurePart
from . import figures

GEOMETRY = FigurePart(
    name="optimizer geometry",
    selects=figures.selects,
    figures=figures.figures,
    doc="the pairing of step rules and SVM norms, variants of one rule, mirror descent",
)
PARTS = (GEOMETRY,)
