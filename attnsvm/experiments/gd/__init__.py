"""``experiment=gd``: gradient descent against the attention SVMs, the paper's pipeline, and its
follow-ups on the same data flow (the p-model and joint head training, step rules and their
SVM norms). pipeline.py trains and analyses, limits.py names each seed's limit object,
summary.py summarises, plots.py draws what fits the sweep.
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.experiments.gd.columns import columns
from attnsvm.experiments.gd.config import RunConfig
from attnsvm.experiments.gd.memory import check_memory
from attnsvm.experiments.legacy import LEGACY_GROUPS


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.gd.readme_rows import SWEEPS

    return SWEEPS


def run_job(*args, **kwargs):
    """pipeline.py's ``run_job``, imported when called (its imports are heavy)."""
    from .pipeline import run_job

    return run_job(*args, **kwargs)


def summary_text(*args, **kwargs):
    """summary.py's ``gd_summary_text``, imported when called (its imports are heavy)."""
    from .summary import gd_summary_text

    return gd_summary_text(*args, **kwargs)


def figures(*args, **kwargs):
    """plots.py's ``figures``, imported when called (its imports are heavy)."""
    from .plots import figures

    return figures(*args, **kwargs)


def reanalyse(*args, **kwargs):
    """reanalysis.py's ``reanalyse``, imported when called (its imports are heavy)."""
    from .reanalysis import reanalyse

    return reanalyse(*args, **kwargs)


EXPERIMENT = Experiment(
    name="gd",
    default=True,  # the paper's pipeline: the experiment of a config that names none
    run_job=run_job,
    summary_text=summary_text,
    figures=figures,
    Run=RunConfig,
    check=check_memory,  # a batch that cannot fit is refused at composition (memory.py)
    # the options of the shared groups only it reads (attnsvm/composition/rules.py)
    reads=(
        "head.train",
        "optimizer.gradient",
        "optimizer.schedule",
        "optimizer.minibatch",
        "solver.norms",
        "parameterization.p",
    ),
    # its job hash held multitoken's and regpath's groups at their defaults from before each
    # experiment had its own job config: kept, so every gd sweep keeps its identity (resume)
    hash_legacy=LEGACY_GROUPS,
    columns=columns,  # its summary's columns per config point: the p-model's or W's (columns.py)
    published=published,
    reanalyse=reanalyse,  # new SVMs and metrics from arrays.npz, nothing trained
    doc=__doc__,
)
