"""gd's optimizer-geometry studies: step rules against SVM norms (``+sweeps=geometry``,
``geometry_d``), variants of one rule (``geometry_adam``) and mirror descent's Bregman paths
(``+sweeps=mirror``); figures.py draws them, variants.py the variants' table and figure."""

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
