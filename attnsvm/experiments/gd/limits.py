"""What a gd seed converges to, and whether it got there: its limit object and its label.

The limit object is the SVM the theory (or the conjecture under test) names for the model and
the step rule (docs/math.md): (K,Q) -> the nuclear-norm SVM W^mm_*; a step rule's geometry ->
the SVM of its norm (lp mirror descent -> the lp-SVM, sign descent and Adam -> the max-norm
SVM, spectral descent -> the spectral-norm SVM; GD, NGD, Polyak -> W^mm); a trained head ->
the relaxed SVM (margin 1 only where v^mm is tight). It is measured at the tokens GD selected;
a norm that solver.norms does not solve falls back to W^mm, and the ``limit`` column says
which object was used.

The optimal tokens are the model's own: the fixed head's best token per sequence, or, with a
trained head, the best token under the head GD ended with (the fixed v no longer scores them).
"""

from __future__ import annotations

import numpy as np

from attnsvm import metrics
from attnsvm.config.enums import Optimizer, Parameterization
from attnsvm.svm import norms
from attnsvm.svm import solve as svm
from attnsvm.svm.norm_names import FEASIBILITY
from attnsvm.train.parameterizations import svm_norm
from attnsvm.train.step_rules import limit_norm

LABELS = {"fro": "W^mm", "nuc": "W^mm_*", "max": "max-norm SVM", "spectral": "spectral SVM"}


def label(column: str, cfg) -> str:
    """The limit object's name in the model's own symbols."""
    if column == "relaxed":
        return "relaxed p-SVM" if cfg.parameterization.kind == Parameterization.p else "relaxed SVM"
    if cfg.parameterization.kind == Parameterization.p and column == "fro":
        return "p^mm"
    return LABELS.get(column, f"{column.replace('p', '.', 1) if column[1:2] else column}-SVM")


def limit_column(cfg, solved: set[str]) -> str:
    """The curve suffix of the seed's limit object (``corr_<suffix>``), among the SVMs solved."""
    if cfg.head.train:
        return "relaxed"
    bias = svm_norm(cfg.parameterization.kind)
    if bias != FEASIBILITY:  # the parameterization's own bias first ((K,Q): the nuclear SVM)
        return norms.column(bias)
    own = norms.column(limit_norm(cfg.optimizer))
    return own if own in solved else "fro"


def optimal_tokens(cfg, inst, traj, r: int) -> np.ndarray:
    """(n,) the optimal token of each sequence: by the fixed head's scores (``inst.opt``), or
    by the trained head's final v, Y_i v^T x_it."""
    if not cfg.head.train or traj.v is None:
        return inst.opt[r].cpu().numpy()
    X, Y = inst.X[r].cpu().double().numpy(), inst.Y[r].cpu().double().numpy()
    v = traj.v[-1, r].cpu().double().numpy()
    return np.argmax(Y[:, None] * (X @ v), axis=1)


def classify(cfg, inst, traj, r: int, curves: dict, at_sel: dict) -> dict:
    """The seed's convergence columns against its limit object (metrics.convergence_type)."""
    mcfg = cfg.metrics
    sel = traj.selected[-1, r].cpu().numpy()
    opt = optimal_tokens(cfg, inst, traj, r)
    same = bool(np.array_equal(sel, opt))
    gamma = inst.gamma[r].cpu().double().numpy()
    local_opt = svm.is_locally_optimal(at_sel["fro"], gamma, sel, cfg.solver)
    own = limit_column(cfg, {k.removeprefix("corr_") for k in curves})
    curve = curves[f"corr_{own}"]
    smin = float(traj.softmax_min_max[-1, r])
    start = metrics.window_start(traj.steps, mcfg.window)
    stalled = cfg.optimizer.kind == Optimizer.ngd and traj.grad_norm[-1, r] < cfg.optimizer.eps
    moving = metrics.still_moving(
        traj.selected[:, r].cpu().numpy(), curve, start, mcfg.gap_shrink, bool(stalled)
    )
    conv = metrics.convergence_type(
        smin, curve[-1], same, local_opt, mcfg.delta, mcfg.epsilon, any(moving.values())
    )
    return {
        "selected_is_opt": same,
        "share_selected_opt": float(np.mean(sel == opt)),  # sequences whose selected is opt
        "locally_optimal": local_opt,
        "conv_type": conv,
        "limit": label(own, cfg),
        "corr_limit": float(curve[-1]),
        **moving,
        "gap_shrink": metrics.gap_shrink(curve, start),
        "steps_needed": metrics.steps_needed(traj.steps, curve, start, mcfg.epsilon),
    }
