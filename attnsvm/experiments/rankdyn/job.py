"""One rankdyn job: all seeds train at once, then per seed the spectrum of K Q^T at every
checkpoint, its stages, and the SVMs at the tokens training selected (nuclear: the limit of
(K, Q); Frobenius: the limit of the merged W, and the feasibility oracle).

    from attnsvm.experiments.rankdyn.job import run_job
    result = run_job(run)     # run.rankdyn: Config; run.seed, run.seeds, run.dtype, ...
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from attnsvm import metrics
from attnsvm.data.dataset_config import DatasetConfig
from attnsvm.data.generators import accepted_seeds, make_instances
from attnsvm.experiments.config_columns import group_columns
from attnsvm.results.contract import JobResult
from attnsvm.results.stack import with_constants
from attnsvm.svm import norms
from attnsvm.svm.status import seed_status
from attnsvm.train.heads import LinearHead
from attnsvm.train.state import on_cpu

from .config import Config
from .dynamics import Record, train_rank
from .stages import detect_stages, effective_rank, half_drop_step, joined


def _plain(value):
    return str(getattr(value, "value", value))


def config_columns(cfg: Config) -> dict:
    """``rankdyn.<key>`` for every key, and the shape's short columns n, T, d."""
    cols = group_columns(cfg, "rankdyn")  # eps: ngd's alone
    cols["rankdyn.m"], cols["rankdyn.lr"] = cfg.width, cfg.step_size  # resolved defaults
    return {"n": cfg.n, "T": cfg.T, "d": cfg.d, **cols}


def solve_selected(inst, selected: np.ndarray, solver) -> list[dict]:
    """Frobenius and nuclear SVMs at each seed's selected tokens: [{"fro": .., "nuc": ..}]."""
    X, Z = inst.X.double().numpy(), inst.Z.double().numpy()
    made = [norms.make_norm("fro", solver), norms.make_norm("nuc", solver)]
    problems = [(X[r], Z[r], selected[r]) for r in range(len(selected))]
    return norms.solve_all(made, problems, solver)


def analyse_seed(cfg: Config, rec: Record, r: int, seed: int, sols: dict) -> tuple[dict, dict]:
    """The runs row and trajectory columns of batch position ``r``."""
    Ws = rec.W[:, r].double().numpy()  # (C, d, d)
    loss = rec.loss[:, r].double().numpy()
    finite = bool(np.isfinite(Ws).all() and np.isfinite(loss).all())
    sv = np.linalg.svd(np.nan_to_num(Ws), compute_uv=False)  # (C, d) descending
    eff = effective_rank(sv, cfg.rank_frac)
    st = detect_stages(rec.steps, eff, loss)
    nuc, fro = sols["nuc"], sols["fro"]
    corr_nuc, corr_fro = metrics.corr(Ws, nuc.W), metrics.corr(Ws, fro.W)  # (C,)
    status, reason = seed_status(finite, {"selected": [fro, nuc]})
    sv_nuc = None if nuc.W is None else np.linalg.svd(nuc.W, compute_uv=False)
    row = {
        "seed": seed,
        "status": status,
        "reason": reason,
        "stage_steps": joined(st.stage_steps),
        "stage_ranks": joined(st.stage_ranks),
        "plateau_losses": joined(st.plateau_losses),
        "n_stages": st.n_stages,
        "first_stage_step": st.stage_steps[0] if st.stage_steps else None,
        "initial_eff_rank": int(eff[0]),
        "lowest_eff_rank": st.lowest_rank,
        "lowest_step": st.lowest_step,
        "final_eff_rank": int(eff[-1]),
        "escape_step": half_drop_step(rec.steps, loss),
        "rank_nuc": nuc.rank,
        "eff_rank_nuc": None if sv_nuc is None else int(effective_rank(sv_nuc, cfg.rank_frac)),
        "corr_nuc": float(corr_nuc[-1]),
        "rank_fro": fro.rank,
        "corr_fro": float(corr_fro[-1]),
        "loss": float(loss[-1]),
        "w_norm": float(np.linalg.norm(Ws[-1])),
        "sv_ratio": float(sv[-1, 1] / sv[-1, 0]) if sv[-1, 0] > 0 else None,
        "softmax_max": float(rec.softmax_max[-1, r]),
        "grad_norm": float(rec.grad_norm[-1, r]),
        "selected": joined(rec.selected[r].tolist()),
    }
    traj = {
        "seed": seed,
        "step": rec.steps,
        "loss": loss,
        **{f"sv{k}": sv[:, k] for k in range(sv.shape[1])},
        "eff_rank": eff,
        "corr_nuc": corr_nuc,
        "corr_fro": corr_fro,
        "grad_norm": rec.grad_norm[:, r].double().numpy(),
        "softmax_max": rec.softmax_max[:, r].double().numpy(),
    }
    return row, traj


def run_job(run, progress=None) -> JobResult:
    """All seeds of ``run`` (seed, seed + 1, ...) trained as one batch, then analysed."""
    t0 = time.perf_counter()
    cfg: Config = run.rankdyn
    dataset = DatasetConfig(n=cfg.n, T=cfg.T, d=cfg.d)
    seeds = accepted_seeds(dataset, run.seed, run.seeds)
    dtype = getattr(torch, _plain(run.dtype))
    inst = make_instances(dataset, seeds, dtype=dtype, device=_plain(run.device))
    rec = on_cpu(train_rank(inst, LinearHead(inst), cfg))
    train_seconds = (time.perf_counter() - t0) / len(seeds)
    inst = on_cpu(inst)
    sols = solve_selected(inst, rec.selected.numpy(), run.solver)
    rows, trajs = [], []
    for r, seed in enumerate(seeds):
        row, traj = analyse_seed(cfg, rec, r, seed, sols[r])
        row["train_seconds"] = train_seconds
        row["svm_seconds"] = sum(s.seconds for s in sols[r].values())
        rows.append(row)
        trajs.append(pd.DataFrame(traj))
    if progress is not None:
        progress(len(seeds), len(seeds))
    cols = config_columns(cfg)
    runs = with_constants(pd.DataFrame(rows), cols)
    trajectory = with_constants(pd.concat(trajs, ignore_index=True), cols)
    return JobResult(runs, trajectory, "", time.perf_counter() - t0)
