"""experiment=rankdyn: how (K, Q) reaches low rank from a small start (incremental rank).

K, Q ~ alpha N(0, 1) (or the merged W(0) = K(0) Q(0)^T as the control) are trained by plain GD
or normalized GD on attnsvm's random instances with the fixed linear head and the logistic
loss. At log-spaced checkpoints every singular value of K Q^T is recorded, with the effective
rank (count above ``rank_frac`` x sigma_max); per seed the rises of that rank (stages), the
final rank, and the nuclear-norm SVM at the tokens training selected (its rank, and corr_nuc).

    python -m attnsvm.run experiment=rankdyn rankdyn.alpha=1e-3
    python -m attnsvm.run -m +sweeps=rankdyn

docs/rankdyn.md says what was found.
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.results.columns import Columns

from .config import Config, Param, RankdynRun, Rule
from .stages import Stages, detect_stages, effective_rank

# its summary, console table and report: the stages (rises of the effective rank of K Q^T), the
# rank it reached against the nuclear-norm SVM's, corr_nuc; no feasible seeds to count
_COLUMNS = Columns(
    counts={},
    metrics=("n_stages", "first_stage_step", "escape_step", "initial_eff_rank")
    + ("lowest_eff_rank", "final_eff_rank", "eff_rank_nuc", "rank_nuc", "corr_nuc", "rank_fro")
    + ("corr_fro", "sv_ratio", "loss", "w_norm", "seconds"),
    console=("n_stages_mean", "first_stage_step_mean", "lowest_eff_rank_mean")
    + ("final_eff_rank_mean", "eff_rank_nuc_mean", "corr_nuc_mean"),
    labels={
        "n_stages": "stages",
        "first_stage_step": "first stage (step)",
        "escape_step": "escape (step)",
        "initial_eff_rank": "initial rank",
        "lowest_eff_rank": "lowest rank",
        "final_eff_rank": "final rank",
        "eff_rank_nuc": "rank of W^mm_*",
    },
)


EXPERIMENT = Experiment(
    name="rankdyn",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    Run=RankdynRun,
    Config=Config,
    config_group="rankdyn",
    columns=_COLUMNS,
    fused_unfit="its own batched loop records K Q^T at log-spaced checkpoints",
    instead={
        "optimizer.kind": "rankdyn.rule",
        "optimizer.checkpoint_every": "rankdyn.checkpoints",
        "parameterization.init": "rankdyn.alpha",
        "parameterization.init_scale": "rankdyn.alpha",
    },
    doc=__doc__,
)


__all__ = [
    "EXPERIMENT",
    "Config",
    "Param",
    "Rule",
    "Stages",
    "detect_stages",
    "effective_rank",
]
