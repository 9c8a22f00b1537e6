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

from attnsvm.experiments.icl.config import Config

NAME = "icl"
CONFIG_GROUP = "icl"
FUSED_UNFIT = "linear attention on regression prompts trains in its own loop"


def published() -> list:
    """Its sweeps' rows of the README's results tables (readme_rows.py)."""
    from attnsvm.experiments.icl.readme_rows import SWEEPS

    return SWEEPS


def bench_cases(quick: bool) -> dict:
    """Its case of ``python -m attnsvm.bench`` (bench.py): the default job (d=5, N=20, one
    layer), R seeds in one job vs one job per seed."""
    from attnsvm.experiments.icl.bench import bench_icl

    return {f"{kind} A, default job": r for kind, r in bench_icl(quick).items()}


def run_job(run, progress=None):
    from attnsvm.experiments.icl.job import run_job as run_icl

    return run_icl(run, progress)


def summary_text(runs, seconds: float) -> str:
    from attnsvm.experiments.icl.summary import summary_text as text

    return text(runs, seconds)


def figures(runs, trajectory, out_dir, sweep=None):
    from attnsvm.experiments.icl.plots import figures as draw

    return draw(runs, trajectory, out_dir)


def limit(*args, **kwargs):
    """Gamma^{-1} (attnsvm/experiments/icl/limits.py): the limit object of one layer."""
    from attnsvm.experiments.icl.limits import limit as gamma_inv

    return gamma_inv(*args, **kwargs)


__all__ = ["CONFIG_GROUP", "NAME", "Config", "figures", "limit", "run_job", "summary_text"]
