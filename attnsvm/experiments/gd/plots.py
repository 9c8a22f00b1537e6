"""What ``python -m attnsvm.aggregate`` draws for gd jobs: the figures of the part of gd the
sweep's runs belong to.

Its parts are declared in their own packages and listed here in order (parts.py): the p-model
examples (examples/: the max-margin examples' paths, the digits' patches) and the optimizer
geometry studies (geometry/: step rules against SVM norms, mirror descent). The first part that
selects any of the runs draws the runs it selects; a sweep no part selects gets the paper's
figures: rank and feasibility, the convergence mix, the softmax and correlation curves
(figures_sweep.py), the 2-D paths (figures_paths.py).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .examples.plots import PARTS as EXAMPLES
from .geometry.plots import PARTS as GEOMETRY
from .parts import chosen

PARTS = (*EXAMPLES, *GEOMETRY)  # in order: the first that selects runs draws


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """The figures of the sweep's gd jobs (``sweep``: the loaded sweep, for the paper's)."""
    part, rows = chosen(PARTS, runs)
    if part is not None:
        return part.figures(runs[rows], traj, out, sweep)
    from .figures_sweep import draw_all

    return draw_all(sweep, sweep.summary, out)
