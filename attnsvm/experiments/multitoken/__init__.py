"""``experiment=multitoken``: nonlinear heads select several tokens; GD against the
multi-token SVM-equivalence W^SVMeq, the direction W^dir and the one-token SVM (job.py).

    python -m attnsvm.run -m +sweeps=multitoken
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.experiments.multitoken.config import MultitokenConfig, MultitokenRun
from attnsvm.results.columns import Columns

# its summary, console table and report: the seeds tried and accepted (the published
# acceptance filters), 1 - corr against the three SVMs over the accepted seeds
_COLUMNS = Columns(
    counts={"accepted": "accepted"},
    metrics=("one_minus_corr_svmeq", "one_minus_corr_dir", "one_minus_corr_1token")
    + ("corr_svmeq", "corr_dir", "corr_1token", "masked_max", "softmax_max", "w_norm", "loss"),
    subset="accepted",
    subset_only=("corr_", "one_minus_", "masked_max"),
    console=("accepted", "one_minus_corr_svmeq_mean", "one_minus_corr_dir_mean")
    + ("one_minus_corr_1token_mean",),
    labels={
        "seeds": "seeds tried",
        "accepted": "accepted seeds",
        "one_minus_corr_svmeq": "1 - corr(W, W^SVMeq)",
        "one_minus_corr_dir": "1 - corr(W, W^dir)",
        "one_minus_corr_1token": "1 - corr(W, W^1tok)",
        "corr_svmeq": "corr(W, W^SVMeq)",
        "corr_dir": "corr(W, W^dir)",
        "corr_1token": "corr(W, W^1tok)",
    },
)


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.multitoken.readme_rows import SWEEPS

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


def bench_jobs(*args, **kwargs):
    """bench.py's ``bench_jobs``, imported when called (its imports are heavy)."""
    from .bench import bench_jobs

    return bench_jobs(*args, **kwargs)


EXPERIMENT = Experiment(
    name="multitoken",
    run_job=run_job,
    summary_text=summary_text,
    Run=MultitokenRun,
    Config=MultitokenConfig,  # its config group (key: name)
    figures=figures,
    columns=_COLUMNS,
    published=published,
    bench_jobs=bench_jobs,
    doc=__doc__,
)
