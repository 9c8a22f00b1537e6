"""What a gd seed converges to, and whether it got there: its limit object and its label.

The limit object is the SVM the theory (or the conjecture under test) names for the model and
the step rule (docs/math.md): (K,Q) -> the nuclear-norm SVM W^mm_*; a step rule's geometry ->
the SVM of its norm (lp mirror descent -> the lp-SVM, sign descent and Adam -> the max-norm
SVM, spectral descent -> the spectral-norm SVM; GD, NGD, Polyak -> W^mm), as the rule declares
it (``svm_norm`` / ``limit_norm`` in attnsvm/train/step_rules.py); a trained head -> the relaxed
SVM (margin 1 only where the head's SVM is tight) in the rule's entrywise norm (the relaxed
lp-SVM for lp mirror descent, the Frobenius one otherwise). It is measured at the tokens GD
selected. A rule whose limit is a KKT point of a norm-ball problem (AdamW: ``kkt_ball``) is
measured against it instead (gd/kkt.py): ``corr_limit`` is then 1 - kkt_linf, and a seed is
converged when kkt_linf <= metrics.epsilon, saturated or not (the ball bounds the scores).

The limit is resolved, not configured: a trained job solves its step rule's SVM whether
``solver.norms`` lists it or not (``solved_norms``; as (K,Q) always gets the nuclear SVM), so
``optimizer=md3`` is measured against its l3-SVM with the default norms. It is added here, at
the solve, and not to the resolved ``solver.norms``: the job's identity, the hash of the
resolved config, stays what it was (docs/convergence.md#converged-or-not-yet).

The optimal tokens are the model's own: the fixed head's best token per sequence, or, with a
trained head, the best token under the head GD ended with (the fixed v no longer scores them).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnsvm import metrics
from attnsvm.config.enums import Optimizer, Parameterization
from attnsvm.config.schema import SolverConfig
from attnsvm.svm import norms
from attnsvm.svm import solve as svm
from attnsvm.svm.norm_names import FEASIBILITY, lp_exponent, norm_names
from attnsvm.train.parameterizations import svm_norm
from attnsvm.train.step_rules import limit_norm

from .kkt import LABEL as KKT_LABEL

LABELS = {"fro": "W^mm", "nuc": "W^mm_*", "max": "max-norm SVM", "spectral": "spectral SVM"}


def label(column: str, cfg) -> str:
    """The limit object's name in the model's own symbols."""
    p_model = cfg.parameterization.kind == Parameterization.p
    if column == "relaxed":
        return "relaxed p-SVM" if p_model else "relaxed SVM"
    if column.startswith("relaxed_"):
        return f"relaxed {label(column.removeprefix('relaxed_'), cfg)}"
    if cfg.parameterization.kind == Parameterization.p and column == "fro":
        return "p^mm"
    return LABELS.get(column, f"{column.replace('p', '.', 1) if column[1:2] else column}-SVM")


def own_norm(cfg) -> str:
    """The norm of the seed's limit object: the parameterization's implicit bias where it is
    not Frobenius ((K,Q): ``nuc``), else the step rule's declared one (``limit_norm``)."""
    bias = svm_norm(cfg.parameterization.kind)
    return bias if bias != FEASIBILITY else limit_norm(cfg.optimizer)


def solved_norms(cfg) -> list[str]:
    """The SVMs a gd job solves per seed: ``solver.norms`` as resolved (yours or the default
    set, Frobenius first, the parameterization's SVM in it) and, for a trained job, its limit
    norm (``own_norm``) appended where the list omits it."""
    names = norm_names(cfg.solver.norms)
    if cfg.train and _listed(own_norm(cfg), names) is None:
        names.append(own_norm(cfg))
    return names


def _listed(own: str, names: list[str]) -> str | None:
    """The name in ``names`` of norm ``own`` (``l3.0`` is ``l3``), or None."""
    key = lp_exponent(own) or own
    return next((n for n in names if (lp_exponent(n) or n) == key), None)


def solver(cfg) -> SolverConfig:
    """``cfg.solver`` with the norms ``solved_norms`` lists: what gd's SVM stage solves."""
    return replace(cfg.solver, norms=solved_norms(cfg))


def head_norm(cfg):
    """With a trained head and a limit norm that is entrywise and not Frobenius (lp mirror
    descent: lp; sign descent, Adam: max), that norm (svm/norms.py's Entrywise, its ``p``):
    the head v follows the same geometry to the lp-SVM of the selected tokens, W to the
    relaxed lp-SVM. None otherwise (the relaxed Frobenius SVM)."""
    norm = norms.make_norm(own_norm(cfg), cfg.solver)
    return norm if cfg.head.train and isinstance(norm, norms.Entrywise) else None


def relaxed_lp_curve(cfg, rows, X, Z, sel, Ws) -> dict:
    """With a trained head and an entrywise limit norm (``head_norm``): corr(W(k), the relaxed
    lp-SVM) per checkpoint (``corr_relaxed_<N>``), its margins 1 where the head's lp-SVM
    v^mm_p = argmin ||v||_p s.t. rows v >= 1 is tight (``rows`` (n, d) = Y_i x_{i alpha_i}),
    0 elsewhere; NaN where v^mm_p or the relaxed SVM does not exist. {} otherwise."""
    norm = head_norm(cfg)
    if norm is None:
        return {}
    v_p = svm.v_mm(rows, norm.p, cfg.solver)
    tight = svm.v_mm_support(rows, v_p, cfg.solver)
    sol = norms.relaxed_entrywise(norm, X, Z, sel, tight, cfg.solver) if tight.any() else None
    W = sol.W if sol is not None and sol.ok else None
    return {f"corr_relaxed_{norms.column(norm.name)}": metrics.corr(Ws, W)}


def limit_column(cfg, solved: set[str]) -> str:
    """The curve suffix of the seed's limit object (``corr_<suffix>``), among the SVMs solved
    (Frobenius where it is not among them)."""
    if cfg.head.train:
        entrywise = head_norm(cfg)
        return "relaxed" if entrywise is None else f"relaxed_{norms.column(entrywise.name)}"
    own = norms.column(_listed(own_norm(cfg), solved_norms(cfg)) or own_norm(cfg))
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
    name = label(own, cfg)
    if "kkt_linf" in curves:  # a KKT point inside a ball: reached without saturating (kkt.py)
        curve, smin, name = 1 - curves["kkt_linf"], 1.0, KKT_LABEL
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
        "limit": name,
        "corr_limit": float(curve[-1]),
        **moving,
        "gap_shrink": metrics.gap_shrink(curve, start),
        "steps_needed": metrics.steps_needed(traj.steps, curve, start, mcfg.epsilon),
    }
