"""``experiment=multitoken``: nonlinear heads select several tokens; GD against the
multi-token SVM-equivalence W^SVMeq, the direction W^dir and the one-token SVM (job.py).

    python -m attnsvm.run -m +sweeps=multitoken
"""

from __future__ import annotations

from attnsvm.experiments.multitoken.config import MultitokenConfig

Config = MultitokenConfig  # the entry's config group (key: NAME)

NAME = "multitoken"
HASH_NEUTRAL = False  # its group was always part of the job hash: old sweeps resume


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.multitoken.readme_rows import SWEEPS

    return SWEEPS


def run_job(run, progress=None):
    from attnsvm.experiments.multitoken.job import run_job as run_multitoken

    return run_multitoken(run, progress)


def summary_text(runs, seconds: float) -> str:
    from attnsvm.experiments.multitoken.job import summary_text as text

    return text(runs, seconds)


def figures(runs, trajectory, out_dir, sweep=None):
    from attnsvm.experiments.multitoken.plots import figures as draw

    return draw(runs, trajectory, out_dir, sweep)
