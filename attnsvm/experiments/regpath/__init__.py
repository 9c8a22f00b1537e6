"""``experiment=regpath``: the regularization path, min L s.t. ||W|| <= R on a grid of R, and
its direction against W^mm (and W^mm_* for (K,Q)) as R grows (job.py).

    python -m attnsvm.run -m +sweeps=regpath
"""

from __future__ import annotations

from attnsvm.experiments.regpath.config import RegpathConfig

Config = RegpathConfig  # the entry's config group (key: NAME)

NAME = "regpath"
HASH_NEUTRAL = False  # its group was always part of the job hash: old sweeps resume
FUSED_UNFIT = "its projected GD runs in torch"


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.regpath.readme_rows import SWEEPS

    return SWEEPS


def run_job(run, progress=None):
    from attnsvm.experiments.regpath.job import run_job as run_regpath

    return run_regpath(run, progress)


def summary_text(runs, seconds: float) -> str:
    from attnsvm.experiments.regpath.job import summary_text as text

    return text(runs, seconds)


def figures(runs, trajectory, out_dir, sweep=None):
    from attnsvm.experiments.regpath.plots import figures as draw

    return draw(runs, trajectory, out_dir, sweep)
