"""``experiment=multitoken``: nonlinear heads select several tokens; GD against the
multi-token SVM-equivalence W^SVMeq, the direction W^dir and the one-token SVM (job.py).

    python -m attnsvm.run -m +sweeps=multitoken
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.results.columns import Columns

from .config import Config, MultitokenRun

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


EXPERIMENT = Experiment(
    name="multitoken",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    Run=MultitokenRun,
    Config=Config,  # its config group (key: name)
    columns=_COLUMNS,
    doc=__doc__,
)
