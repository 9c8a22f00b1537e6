"""experiment=rankdyn: how (K, Q) reaches low rank from a small start (incremental rank).

K, Q ~ alpha N(0, 1) (or the merged W(0) = K(0) Q(0)^T as the control) are trained by plain GD
or normalized GD on attnsvm's random instances with the fixed linear head and the logistic
loss. At log-spaced checkpoints every singular value of K Q^T is recorded, with the effective
rank (count above ``rank_frac`` x sigma_max); per seed the rises of that rank (stages), the
final rank, and the nuclear-norm SVM at the tokens training selected (its rank, and corr_nuc).

    python -m attnsvm.run experiment=rankdyn rankdyn.alpha=1e-3
    python -m attnsvm.run -m +sweeps=rankdyn
    python -m attnsvm.experiments.rankdyn.grid outputs/rankdyn   # the same grid, no Hydra

docs/rankdyn.md says what was found.
"""

from __future__ import annotations

from .config import Config, Param, Rule
from .figures import figures
from .job import run_job
from .stages import Stages, detect_stages, effective_rank
from .summary import summary_table, summary_text

NAME = "rankdyn"
CONFIG_GROUP = "rankdyn"

__all__ = [
    "CONFIG_GROUP",
    "NAME",
    "Config",
    "Param",
    "Rule",
    "Stages",
    "detect_stages",
    "effective_rank",
    "figures",
    "run_job",
    "summary_table",
    "summary_text",
]
