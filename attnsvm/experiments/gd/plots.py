"""What ``python -m attnsvm.aggregate`` draws for gd jobs: the figures that fit the sweep.

The published max-margin examples get their path pictures (figures_maxmargin.py), the digits
their curves (figures_digits.py), sweeps over step rules or SVM norms the geometry heatmap or
the Bregman curves (figures_geometry.py); every other gd sweep the shared figures: rank and
feasibility, the convergence mix, the softmax and correlation curves (figures_sweep.py), the
2-D paths (figures_paths.py).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def _column(runs: pd.DataFrame, key: str) -> pd.Series:
    return runs[key] if key in runs else pd.Series(dtype=object)


def figures(runs: pd.DataFrame, traj: pd.DataFrame, out: Path, sweep=None) -> list[Path]:
    """The figures of the sweep's gd jobs (``sweep``: the loaded sweep, for the shared ones)."""
    generators = set(_column(runs, "dataset.generator").dropna())
    if "maxmargin" in generators:
        from attnsvm.experiments.gd.figures_maxmargin import figures as maxmargin

        return maxmargin(runs, traj, out)
    if "digits" in generators:
        from attnsvm.experiments.gd.figures_digits import figures as digits

        return digits(runs, traj, out)
    from attnsvm.experiments.gd.figures_variants import has_variants

    # step rules, mirror descent, or variants of one rule (+sweeps=geometry_adam)
    geometry = runs.optimizer.nunique() > 1 or set(runs.optimizer) == {"md"} or has_variants(runs)
    if geometry and "conv_type" in runs:
        from attnsvm.experiments.gd.figures_geometry import figures as geometry

        return geometry(runs, traj, out, sweep)
    from attnsvm.experiments.gd.figures_sweep import draw_all

    return draw_all(sweep, sweep.summary, out)
