"""Experiment ``icl``: in-context linear regression, does linear self-attention learn
one step of GD preconditioned by Gamma^{-1}? (Zhang, Frei, Bartlett 2024; Ahn et al. 2023;
docs/icl.md.)

Prompts x_1..x_N, x_q ~ N(0, Lam), w ~ N(0, I_d), y_i = w^T x_i (+ noise); one or L layers of
linear self-attention trained on fresh prompts; the learned A (y_hat = x_q^T A h) against
Gamma^{-1}, Gamma = (1 + 1/N) Lam + (tr Lam / N) I.

    python -m attnsvm.run experiment=icl icl.spectrum=linear icl.parameterization=structured
    python -m attnsvm.run -m +sweeps=icl_N
"""

from __future__ import annotations

from attnsvm.experiments.experiment import Experiment
from attnsvm.results.columns import Columns

from .config import Config, IclRun

# its summary, console table and report: the learned A against Gamma^-1 and the test losses
# (no n, T, d: icl.d, icl.N and the swept keys name a point; no SVM, so no feasible seeds)
_COLUMNS = Columns(
    axes=(),
    counts={},
    metrics=("corr_limit", "rel_err_limit", "icl_loss", "icl_loss_limit", "icl_loss_gd1")
    + ("icl_loss_pgd", "pop_loss", "pop_loss_limit", "pop_loss_gd1", "gd1_step", "seconds"),
    console=("corr_limit_mean", "rel_err_limit_mean", "icl_loss_mean", "icl_loss_limit_mean")
    + ("icl_loss_gd1_mean",),
    labels={
        "corr_limit": "corr(A, Γ⁻¹)",
        "rel_err_limit": "‖A − Γ⁻¹‖/‖Γ⁻¹‖",
        "icl_loss_limit": "icl_loss at Γ⁻¹",
        "icl_loss_gd1": "icl_loss, one GD step",
        "icl_loss_pgd": "icl_loss, L-step preconditioned GD",
        "pop_loss_limit": "pop_loss at Γ⁻¹",
        "pop_loss_gd1": "pop_loss, one GD step",
    },
)


EXPERIMENT = Experiment(
    name="icl",
    package=__name__,  # its functions: job.py's run_job, summary.py's, plots.py's, ...
    Run=IclRun,
    Config=Config,
    config_group="icl",
    columns=_COLUMNS,
    fused_unfit="linear attention on regression prompts trains in its own loop",
    instead={"dataset.T": "icl.N"},  # the context length
    doc=__doc__,
)


__all__ = ["EXPERIMENT", "Config"]
