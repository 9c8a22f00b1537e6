"""Next-token prediction: does GD find the graph-SVM? Experiment ``nexttoken``
(docs/math.md#next-token-prediction; Li, Huang, Ildiz, Rawat, Oymak, AISTATS 2024;
docs/nexttoken.md).

Per seed: the instance (``attnsvm.data.nexttoken``), its token-priority graphs and SCCs, the
global graph-SVM W^svm (Frobenius for W, nuclear for (K,Q); ``attnsvm.svm.graph``), GD on W or
(K,Q) and on the finite part W^fin (``attnsvm.experiments.nexttoken.train``), then per checkpoint

* ``corr_svm``       corr(W(t), W^svm)
* ``corr_svm_fin``   corr(W(t), W^fin + R W^svm), R by least squares to the final iterate
* ``corr_proj``      corr(W^svm, W(t) - Pi_S W(t)), S = S_fin
* ``fin_dist``       ||Pi_S W(t) - W^fin(t)||
* ``scc_mass``       attention mass on the label's SCC (mean over sequences)
* ``corr_local_svm`` corr(W(t), local graph-SVM), the local graphs drawn from the ids the final
  attention selects (mass > nexttoken.local_threshold).

Each seed records status (ok, infeasible, solver_error, diverged, not_drawn) and reason; no seed
stops the job.

    python -m attnsvm.run experiment=nexttoken dataset=nexttoken dataset.draws=published \\
        seeds=10 optimizer.lr=0.01 optimizer.steps=4000
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from attnsvm.config.checks import flatten, plain
from attnsvm.config.enums import Parameterization
from attnsvm.config.schema import RunBase
from attnsvm.data import token_graph as tg
from attnsvm.data.nexttoken import make_nexttoken
from attnsvm.metrics import corr
from attnsvm.results.stack import with_constants
from attnsvm.svm import graph as gs
from attnsvm.train.divergence import divergence

from .train import problem, train

CURVES = ("corr_svm", "corr_svm_fin", "corr_proj", "fin_dist", "scc_mass", "corr_local_svm")


def _nuclear(cfg: RunBase) -> bool:
    nuc = cfg.nexttoken.nuclear
    return cfg.parameterization.kind == Parameterization.kq if nuc is None else nuc


def _graphs(inst, r: int):
    """Global SCC table (K, K), the finite part's mask (n, T) and rows (n,) of seed r."""
    ids, labels = inst.ids[r], inst.labels[r]
    scc = tg.scc_table(ids, ids == labels[:, None], inst.E.shape[1])
    rows = gs.cyclic_rows(ids, labels, scc)
    mask = np.where(rows[:, None], gs.fin_mask(ids, labels, scc), True)
    return scc, mask, rows


def _softmax_np(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Softmax (C, n, T) of a_it = x_it^T W z_i for checkpoints W (C, d, d)."""
    a = np.einsum("ntd,cde,ne->cnt", X, W, X[:, -1])
    a = a - a.max(-1, keepdims=True)
    e = np.exp(a)
    return e / e.sum(-1, keepdims=True)


def _svm(cfg: RunBase, E, ids, src, scc, nuclear: bool) -> gs.GraphSVM:
    if nuclear:
        return gs.graph_svm_nuc(E, ids, src, scc, cfg.solver)
    return gs.graph_svm_fro(E, ids, src, scc, cfg.solver.feas_tol)


def analyse_seed(cfg: RunBase, inst, r: int, j: int, traj, scc) -> tuple[dict, pd.DataFrame]:
    """Row and trajectory of instance r, trained as batch member j."""
    E, ids, labels = inst.E[r], inst.ids[r], inst.labels[r]
    Ws, Wfs, s = traj.W[:, j], traj.W_fin[:, j], traj.s[j]
    kq_nuc = cfg.parameterization.kind == Parameterization.kq
    row = {"ids": ";".join(",".join(map(str, q)) for q in ids)}
    row.update(labels=",".join(map(str, labels)), scc=tg.scc_text(scc, ids[:, -1]))
    row.update(cyclic=tg.is_cyclic(scc, ids[:, -1]), attempts=int(inst.attempts[r]))
    why = divergence(traj.steps, W=Ws, loss=traj.loss[:, j], grad_norm=traj.grad_norm[:, j])
    if why is not None or not np.isfinite(s).all():
        return {**row, "status": "diverged", "reason": why or "non-finite softmax"}, None
    glob = {"fro": _svm(cfg, E, ids, ids == labels[:, None], scc, False)}
    if _nuclear(cfg):
        glob["nuc"] = _svm(cfg, E, ids, ids == labels[:, None], scc, True)
    W_svm = glob["nuc" if kq_nuc else "fro"].W
    local_src = s > cfg.nexttoken.local_threshold  # ids distinct: mass per id = per position
    local_scc = tg.scc_table(ids, local_src, E.shape[0])
    local = _svm(cfg, E, ids, local_src, local_scc, kq_nuc)
    basis = gs.fin_basis(E, ids, labels, scc)
    X = E[ids]  # (n, T, d)
    proj = gs.project(basis, Ws)
    R = float(np.sum((Ws[-1] - Wfs[-1]) * W_svm) / np.sum(W_svm**2)) if _nonzero(W_svm) else np.nan
    same = scc[ids[:, -1]][np.arange(len(ids))[:, None], ids] == scc[ids[:, -1], labels][:, None]
    S = _softmax_np(Ws, X)
    curves = {
        "corr_svm": corr(Ws, W_svm),
        "corr_svm_fin": corr(Ws, Wfs[-1] + R * W_svm) if W_svm is not None else corr(Ws, None),
        "corr_proj": corr(Ws - proj, W_svm) if _nonzero(W_svm) else corr(Ws, None),
        "fin_dist": np.linalg.norm(proj - Wfs, axis=(-2, -1)),
        "scc_mass": (S * same).sum(-1).mean(-1),
        "corr_local_svm": corr(Ws, local.W),
        **({"corr_svm_fro": corr(Ws, glob["fro"].W)} if kq_nuc else {}),
    }
    eps = cfg.metrics.epsilon
    row.update(
        _status(glob, local),
        R=R,
        **{k: float(v[-1]) for k, v in curves.items()},
        reached_global=bool(np.nan_to_num(curves["corr_svm"][-1]) >= 1 - eps),
        reached_local=bool(np.nan_to_num(curves["corr_local_svm"][-1]) >= 1 - eps),
        selects_global=bool((local_src == same).all()),
        selected=";".join(",".join(map(str, ids[i][local_src[i]])) for i in range(len(ids))),
        svm_status=";".join(f"{k}:{v.status}" for k, v in glob.items()),
        local_svm_status=local.status,
        fin_dim=len(basis),
        w_norm=float(np.linalg.norm(Ws[-1])),
        w_fin_norm=float(np.linalg.norm(Wfs[-1])),
    )
    w_norms = np.linalg.norm(Ws, axis=(1, 2))
    return row, pd.DataFrame({"step": traj.steps, **curves, "w_norm": w_norms})


def _nonzero(W) -> bool:
    return W is not None and bool(np.any(W))


def _status(glob: dict, local: gs.GraphSVM) -> dict:
    """ok unless a solver failed (solver_error) or the global graph-SVM is infeasible."""
    errors = [f"{k} graph-SVM: {v.reason}" for k, v in glob.items() if v.status == "solver_error"]
    if local.status == "solver_error":
        errors.append(f"local graph-SVM: {local.reason}")
    if errors:
        return {"status": "solver_error", "reason": "; ".join(errors)}
    infeasible = [f"{k} graph-SVM infeasible" for k, v in glob.items() if v.status == gs.INFEASIBLE]
    notes = [f"{k} graph-SVM zero ({v.reason})" for k, v in glob.items() if v.status == gs.ZERO]
    if local.status != gs.OK:
        notes.append(f"local graph-SVM {local.status}")
    return {"status": "infeasible" if infeasible else "ok", "reason": "; ".join(infeasible + notes)}


def run_batch(cfg: RunBase, inst, idx: np.ndarray):
    """Train the seeds at positions ``idx`` of ``inst`` together; rows and trajectories."""
    sub = {k: getattr(inst, k)[idx] for k in ("E", "ids", "labels", "W0", "K0")}
    graphs = [_graphs(inst, r) for r in idx]
    W0 = sub["W0"] * (cfg.parameterization.init.value == "torch")
    K0 = sub["K0"] * (cfg.parameterization.init.value == "torch")
    p = problem(sub["E"], sub["ids"], sub["labels"])
    masks = np.stack([g[1] for g in graphs])
    p_fin = problem(sub["E"], sub["ids"], sub["labels"], masks, np.stack([g[2] for g in graphs]))
    t0 = time.perf_counter()
    traj = train(
        p, p_fin, W0, K0, cfg.parameterization.kind, cfg.nexttoken.loss, cfg.optimizer,
        cfg.parameterization.penalty,
    )  # fmt: skip
    train_seconds = (time.perf_counter() - t0) / len(idx)
    rows, curves = [], []
    for j, r in enumerate(idx):
        t1 = time.perf_counter()
        row, curve = analyse_seed(cfg, inst, r, j, traj, graphs[j][0])
        seed = inst.seeds[r]
        row.update(
            seed=seed,
            loss=float(traj.loss[-1, j]),
            grad_norm=float(traj.grad_norm[-1, j]),
            train_seconds=train_seconds,
            svm_seconds=time.perf_counter() - t1,
        )
        rows.append(row)
        if curve is not None:
            curve = curve.assign(seed=seed, loss=traj.loss[:, j], grad_norm=traj.grad_norm[:, j])
            curves.append(curve)
    return rows, curves


def run_job(cfg: RunBase, progress=None):
    """All seeds of one job, trained in batches of ``batch_size``."""
    from attnsvm.experiments.config_columns import job_columns
    from attnsvm.results.contract import JobResult

    t0 = time.perf_counter()
    inst, missing = make_nexttoken(cfg.dataset, cfg.seed_list)
    rows = [{"seed": s, "status": "not_drawn", "reason": why} for s, why in missing.items()]
    curves = []
    order = np.arange(len(inst.seeds))
    for start in range(0, len(order), cfg.batch_size):
        r, c = run_batch(cfg, inst, order[start : start + cfg.batch_size])
        rows, curves = rows + r, curves + c
        if progress is not None:
            progress(len(rows), cfg.seeds)
    own = flatten({"nexttoken": plain(cfg.nexttoken)})  # at its defaults config_columns omits it
    cols = job_columns(cfg, own)  # its config_hash filled in by the core
    runs = with_constants(pd.DataFrame(rows).sort_values("seed", ignore_index=True), cols)
    trajectory = pd.concat(curves or [pd.DataFrame({"seed": [], "step": []})], ignore_index=True)
    keep = ("n", "T", "d", "dataset.K", "parameterization", "nexttoken.loss", "dataset.graphs")
    trajectory = with_constants(trajectory, {k: cols[k] for k in (*keep, "config_hash")})
    return JobResult(runs, trajectory, "", time.perf_counter() - t0)
