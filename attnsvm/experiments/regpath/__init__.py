"""``experiment=regpath``: the regularization path, min L s.t. ||W|| <= R on a grid of R, and
its direction against W^mm (and W^mm_* for (K,Q)) as R grows (job.py).

    python -m attnsvm.run -m +sweeps=regpath
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.results.columns import Columns

from .config import Config, RegpathRun

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


EXPERIMENT = Experiment(
    name="regpath",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    Run=RegpathRun,
    Config=Config,  # its config group (key: name)
    columns=_COLUMNS,
    fused_unfit="its projected GD runs in torch",
    doc=__doc__,
)
