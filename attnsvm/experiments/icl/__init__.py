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
from attnsvm.experiments.icl.config import Config, IclRun
from attnsvm.results.columns import Columns

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


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.icl.readme_rows import SWEEPS

    return SWEEPS


def bench_cases(quick: bool) -> dict:
    """Its case of ``python -m attnsvm.bench`` (bench.py): the default job (d=5, N=20, one
    layer), R seeds in one job vs one job per seed."""
    from attnsvm.experiments.icl.bench import bench_icl

    return {f"{kind} A, default job": r for kind, r in bench_icl(quick).items()}


def run_job(*args, **kwargs):
    """job.py's ``run_job``, imported when called (its imports are heavy)."""
    from .job import run_job

    return run_job(*args, **kwargs)


def summary_text(*args, **kwargs):
    """summary.py's ``summary_text``, imported when called (its imports are heavy)."""
    from .summary import summary_text

    return summary_text(*args, **kwargs)


def figures(*args, **kwargs):
    """plots.py's ``figures``, imported when called (its imports are heavy)."""
    from .plots import figures

    return figures(*args, **kwargs)


def limit(*args, **kwargs):
    """limits.py's ``limit``, imported when called (its imports are heavy)."""
    from .limits import limit

    return limit(*args, **kwargs)


EXPERIMENT = Experiment(
    name="icl",
    run_job=run_job,
    summary_text=summary_text,
    Run=IclRun,
    Config=Config,
    config_group="icl",
    figures=figures,
    columns=_COLUMNS,
    fused_unfit="linear attention on regression prompts trains in its own loop",
    instead={"dataset.T": "icl.N"},  # the context length
    published=published,
    bench_cases=bench_cases,
    doc=__doc__,
)


__all__ = ["EXPERIMENT", "Config", "figures", "limit", "run_job", "summary_text"]
