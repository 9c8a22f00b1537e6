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
from attnsvm.experiments.icl.figures import figures
from attnsvm.experiments.icl.job import run_job
from attnsvm.experiments.icl.limits import limit
from attnsvm.experiments.icl.summary import summary_text

NAME = "icl"
CONFIG_GROUP = "icl"

__all__ = ["CONFIG_GROUP", "NAME", "Config", "figures", "limit", "run_job", "summary_text"]
