"""``experiment=regpath``: the regularization path, min L s.t. ||W|| <= R on a grid of R, and
its direction against W^mm (and W^mm_* for (K,Q)) as R grows (job.py).

    python -m attnsvm.run -m +sweeps=regpath
"""

from __future__ import annotations

from attnsvm.config.plugins import later
from attnsvm.experiments.regpath.config import RegpathConfig

Config = RegpathConfig  # the entry's config group (key: NAME)

NAME = "regpath"
READS = ("dtype", "dataset", "parameterization", "head", "solver")  # its GD: regpath.*
HASH_NEUTRAL = False  # its group was always part of the job hash: old sweeps resume
FUSED_UNFIT = "its projected GD runs in torch"


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.regpath.readme_rows import SWEEPS

    return SWEEPS


run_job = later("attnsvm.experiments.regpath.job:run_job")
summary_text = later("attnsvm.experiments.regpath.job:summary_text")
figures = later("attnsvm.experiments.regpath.plots:figures")
