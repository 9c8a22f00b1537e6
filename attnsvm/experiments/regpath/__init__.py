"""``experiment=regpath``: the regularization path, min L s.t. ||W|| <= R on a grid of R, and
its direction against W^mm (and W^mm_* for (K,Q)) as R grows (job.py).

    python -m attnsvm.run -m +sweeps=regpath
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.experiments.regpath.config import RegpathConfig, RegpathRun
from attnsvm.results.columns import Columns

# its summary, console table and report: the direction at the largest radius against W^mm (W)
# or W^mm_* ((K,Q)), and from the start
_COLUMNS = Columns(
    metrics=("corr", "corr_fro", "corr_nuc", "corr_init", "loss_gap_init", "r_max", "r_end")
    + ("w_norm", "loss", "softmax_max", "seconds"),
    console=("corr_mean", "corr_init_mean", "r_end_mean"),
    labels={
        "corr": "corr(W̄_R, W^mm or W^mm_*)",
        "corr_init": "corr, init chain alone",
        "r_end": "R at the end",
    },
)


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.regpath.readme_rows import SWEEPS

    return SWEEPS


def run_job(*args, **kwargs):
    """job.py's ``run_job``, imported when called (its imports are heavy)."""
    from .job import run_job

    return run_job(*args, **kwargs)


def summary_text(*args, **kwargs):
    """job.py's ``summary_text``, imported when called (its imports are heavy)."""
    from .job import summary_text

    return summary_text(*args, **kwargs)


def figures(*args, **kwargs):
    """plots.py's ``figures``, imported when called (its imports are heavy)."""
    from .plots import figures

    return figures(*args, **kwargs)


EXPERIMENT = Experiment(
    name="regpath",
    run_job=run_job,
    summary_text=summary_text,
    Run=RegpathRun,
    Config=RegpathConfig,  # its config group (key: name)
    figures=figures,
    columns=_COLUMNS,
    fused_unfit="its projected GD runs in torch",
    published=published,
    doc=__doc__,
)
