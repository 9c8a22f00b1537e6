"""``experiment=gd``: gradient descent against the attention SVMs, the paper's pipeline, and its
follow-ups on the same data flow (the p-model and joint head training, step rules and their
SVM norms). job.py trains and analyses, limits.py names each seed's limit object,
summary.py summarises, plots.py draws what fits the sweep.
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.experiments.legacy import LEGACY_GROUPS

from .columns import columns
from .config import RunConfig
from .examples import DATA_SET_CODE
from .memory import check_memory

EXPERIMENT = Experiment(
    name="gd",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    default=True,  # the paper's pipeline: the experiment of a config that names none
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
    datasets=tuple(DATA_SET_CODE),  # its own data (the digits): drawn by its examples
    data_set_code=DATA_SET_CODE,
    columns=columns,  # its summary's columns per config point: the p-model's or W's (columns.py)
    doc=__doc__,
)
