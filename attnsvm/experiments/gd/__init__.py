"""``experiment=gd``: gradient descent against the attention SVMs, the paper's pipeline, and its
follow-ups on the same data flow (the p-model and joint head training, step rules and their
SVM norms). pipeline.py trains and analyses, limits.py names each seed's limit object,
summary.py summarises, figures.py draws what fits the sweep.
"""

from __future__ import annotations

NAME = "gd"
READS = ("*",)  # every optional core option: head.train, optimizer.gradient, loss, norms, p


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.gd.readme_rows import SWEEPS

    return SWEEPS


def run_job(run, progress=None):
    from attnsvm.experiments.gd.pipeline import run_job as run_gd

    return run_gd(run, progress)


def summary_text(runs, seconds: float) -> str:
    from attnsvm.experiments.gd.summary import gd_summary_text

    return gd_summary_text(runs, seconds)


def figures(runs, trajectory, out_dir, sweep=None):
    from attnsvm.experiments.gd.plots import figures as draw

    return draw(runs, trajectory, out_dir, sweep)
