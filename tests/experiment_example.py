"""A user's own experiment, as the README shows it: does normalized GD select the optimal
token of every sequence, and how saturated is the softmax? Built from attnsvm's parts.

    python -m attnsvm.run experiment=experiment_example seeds=4
"""

import time
from dataclasses import dataclass, field

import pandas as pd

from attnsvm.config.schema import HeadConfig, OptimizerConfig, ParameterizationConfig, RunBase
from attnsvm.data.dataset_config import DatasetConfig
from attnsvm.data.generators import make_instances
from attnsvm.experiments.experiment import Experiment
from attnsvm.results.contract import JobResult
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train


@dataclass
class ExampleRun(RunBase):
    """Its job config: the keys every job has and the groups it reads."""

    experiment: str = "experiment_example"
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    parameterization: ParameterizationConfig = field(default_factory=ParameterizationConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    head: HeadConfig = field(default_factory=HeadConfig)


def run_job(cfg, progress=None):
    t0 = time.perf_counter()
    inst = make_instances(cfg.dataset, cfg.seed_list)
    traj = train(inst, make_head(cfg.head, inst), cfg.parameterization, cfg.optimizer)
    hits = (traj.selected[-1] == inst.opt).double().mean(-1)  # (R,) share of sequences
    runs = pd.DataFrame(
        {
            "seed": inst.seeds,
            "status": "ok",
            "reason": "",
            "selected_opt_share": hits.numpy(),
            "softmax_max": traj.softmax_max[-1].numpy(),
        }
    )  # the config columns and the job's hash: added by the framework
    trajectory = pd.DataFrame({"seed": [], "step": []})
    return JobResult(runs, trajectory, "", time.perf_counter() - t0)


def summary_text(runs, seconds):
    share = runs.selected_opt_share.mean()
    return f"experiment_example: optimal token in {share:.0%} of sequences ({seconds:.2f} s)"


EXPERIMENT = Experiment(
    name="experiment_example", run_job=run_job, summary_text=summary_text, Run=ExampleRun
)
