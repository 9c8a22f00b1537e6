"""``experiment=multitoken``: nonlinear heads select several tokens; GD against the
multi-token SVM-equivalence W^SVMeq, the direction W^dir and the one-token SVM (job.py).

    python -m attnsvm.run -m +sweeps=multitoken
"""

from __future__ import annotations

from attnsvm.config.plugins import later
from attnsvm.experiments.multitoken.config import MultitokenConfig

Config = MultitokenConfig  # the entry's config group (key: NAME)

NAME = "multitoken"
READS = ("dtype", "dataset", "parameterization", "optimizer", "head", "solver")
HASH_NEUTRAL = False  # its group was always part of the job hash: old sweeps resume


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.multitoken.readme_rows import SWEEPS

    return SWEEPS


run_job = later("attnsvm.experiments.multitoken.job:run_job")
summary_text = later("attnsvm.experiments.multitoken.job:summary_text")
figures = later("attnsvm.experiments.multitoken.plots:figures")
