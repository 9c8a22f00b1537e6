"""One job = one config point x R seeds: data -> GD -> SVMs -> metrics -> tidy tables.

Plain functions over a validated RunConfig; Hydra is only in run.py.

    from attnsvm.composition import RunConfig
    result = run_job(RunConfig(seeds=4))
    result.runs        # one row per seed
    result.trajectory  # one row per seed x checkpoint
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from attnsvm import metrics
from attnsvm.config.enums import Init, Optimizer, Parameterization
from attnsvm.config.schema import RunBase
from attnsvm.data import sets
from attnsvm.data.generators import Instances, accepted_seeds, make_instances
from attnsvm.experiments import data_set_hook
from attnsvm.experiments.config_columns import job_columns
from attnsvm.experiments.engine import train_engine
from attnsvm.parallel import shares_of, spread, worth_forking
from attnsvm.progress import Progress, reporter
from attnsvm.results.contract import JobResult
from attnsvm.results.stack import stack, with_constants
from attnsvm.svm import norms
from attnsvm.svm import solve as svm
from attnsvm.svm.status import seed_status
from attnsvm.train.divergence import divergence
from attnsvm.train.heads import make_head
from attnsvm.train.loop import Trajectory, train
from attnsvm.train.state import on_cpu

from . import limits
from .artifacts import batch_arrays, join_batches
from .diverged import diverged_tables
from .examples.maxmargin_data import key_query
from .kkt import kkt_curves
from .limits import classify
from .svms import (
    opt_svm_columns,
    seed_mask,
    solve_svm_sets,
    solve_svms,
)


def analyse_seed(
    cfg: RunBase, inst: Instances, traj: Trajectory, r: int, svms: tuple, kkt: dict | None = None
):
    """Every metric of seed ``r`` against its SVMs at alpha = opt and alpha = GD-selected tokens.

    ``svms`` = (SVMs at opt, SVMs at the selected tokens or None where they are opt), solved
    for the whole batch in one call beforehand (``solve_svm_sets``); ``kkt``: the batch's (C, R)
    KKT curves where the step rule's limit is a KKT point (gd/kkt.py)."""
    mcfg = cfg.metrics
    opt = inst.opt[r].cpu().numpy()
    Ws = traj.W[:, r].cpu().double().numpy()  # (C, d, d)
    v = None if traj.v is None else traj.v[:, r]
    why = divergence(traj.steps, loss=traj.loss[:, r], grad_norm=traj.grad_norm[:, r], W=Ws, v=v)
    sel = traj.selected[-1, r].cpu().numpy()
    same = bool(np.array_equal(sel, opt))
    at_opt = svms[0]
    if why is not None:  # no metric of W: they would be NaN or crash (an SVD of inf)
        cols = opt_svm_columns(cfg, at_opt)
        return diverged_tables(inst.seeds[r], traj, r, Ws, why, opt, at_opt, cols)
    at_sel = at_opt if same else svms[1]
    unique = {id(s): s for sols in svms if sols for s in sols.values()}
    svm_seconds = sum(s.seconds for s in unique.values())

    columns = {norms.column(name): name for name in at_opt}
    curves, fixed = seed_curves(cfg, inst, traj, r, Ws, (at_opt, at_sel))
    curves.update({k: c[:, r] for k, c in (kkt or {}).items()})
    fro_sel = at_sel["fro"]
    grad_final = float(traj.grad_norm[-1, r])
    smin = float(traj.softmax_min_max[-1, r])
    status, reason = seed_status(
        True, {"opt": list(at_opt.values()), "selected": list(at_sel.values())}
    )
    row = {
        "seed": inst.seeds[r],
        "status": status,
        "reason": reason,
        **opt_svm_columns(cfg, at_opt),
        **{f"rank_{c}_sel": at_sel[name].rank for c, name in columns.items()},
        **{f"svm_path_{c}_sel": at_sel[name].path for c, name in columns.items()},
        **{k: float(v[-1]) for k, v in curves.items()},
        **{f"rate_{c}": metrics.rate(traj.steps, curves[f"corr_{c}"]) for c in columns},
        "softmax_max": float(traj.softmax_max[-1, r]),
        "softmax_min": smin,
        "saturated": smin >= 1 - mcfg.delta,
        "n_support": int(svm.support_tokens(fro_sel, cfg.solver).sum()) if fro_sel.ok else None,
        **classify(cfg, inst, traj, r, curves, at_sel),
        "w_norm": float(np.linalg.norm(Ws[-1])),
        "loss": float(traj.loss[-1, r]),
        "grad_norm": grad_final,
        "selected": ",".join(map(str, sel)),
        "opt": ",".join(map(str, opt)),
        "svm_seconds": svm_seconds,
        **{k: float(x) for k, x in fixed.items()},  # the relaxed p-SVM, for the path pictures
    }
    return row, trajectory_columns(cfg, inst, traj, r, Ws, curves, row, fro_sel)


def seed_curves(cfg: RunBase, inst: Instances, traj: Trajectory, r: int, Ws, svms) -> tuple:
    """Per checkpoint, seed ``r``'s correlations with every SVM at the selected tokens and at
    opt, the geometry's margins and divergences, a trained head's curves; and apart, the
    relaxed p-SVM's fixed coordinates (for the path pictures)."""
    at_opt, at_sel = svms
    sel = traj.selected[-1, r].cpu().numpy()
    columns = {norms.column(name): name for name in at_opt}
    curves = {f"corr_{c}": metrics.corr(Ws, at_sel[name].W) for c, name in columns.items()}
    curves.update(
        {f"corr_{c}_opt": metrics.corr(Ws, at_opt[name].W) for c, name in columns.items()}
    )
    curves.update(geometry_curves(cfg, inst, r, Ws, sel, at_sel))
    if traj.v is not None:
        curves.update(head_curves(cfg, inst, r, traj.v[:, r].cpu().double().numpy(), sel, Ws))
    fixed = {k: curves.pop(k) for k in [k for k in curves if k.startswith("p_relaxed")]}
    if cfg.parameterization.kind == Parameterization.p:
        curves["corr_p_mm"] = curves["corr_fro"]  # W = p e_1^T: corr(W, W^mm) = corr(p, p^mm)
    return curves, fixed


def trajectory_columns(cfg, inst, traj, r: int, Ws, curves: dict, row: dict, fro_sel) -> dict:
    """Seed ``r``'s trajectory table (one entry per checkpoint); the p-model's path and p^mm,
    a trained head's v and its final norm are added to ``row`` and the table."""
    trajectory = {
        "seed": inst.seeds[r],
        "step": traj.steps,
        **curves,
        "softmax_max": traj.softmax_max[:, r].cpu().numpy(),
        "softmax_min": traj.softmax_min_max[:, r].cpu().numpy(),
        "w_norm": np.linalg.norm(Ws, axis=(-2, -1)),
        "loss": traj.loss[:, r].cpu().numpy(),
        "grad_norm": traj.grad_norm[:, r].cpu().numpy(),
        "selected": [",".join(map(str, s)) for s in traj.selected[:, r].cpu().numpy()],
    }
    if cfg.parameterization.kind == Parameterization.p:  # the path of p: column 0 of W
        trajectory.update({f"p{k}": Ws[:, k, 0] for k in range(Ws.shape[-1])})
        if fro_sel.ok:  # p^mm at the selected tokens, for the path pictures
            row.update({f"p_mm{k}": float(fro_sel.W[k, 0]) for k in range(Ws.shape[-1])})
    if traj.v is not None:
        vs = traj.v[:, r].cpu().double().numpy()  # (C, d)
        trajectory.update({f"v{k}": vs[:, k] for k in range(vs.shape[-1])})
        row["v_norm"] = float(np.linalg.norm(vs[-1]))
    return trajectory


def geometry_curves(cfg: RunBase, inst: Instances, r: int, Ws, sel, at_sel: dict) -> dict:
    """Per checkpoint, for every SVM norm N at the selected tokens: the margin ratio
    gamma_N(W) / gamma_N* (``margin_<N>``), and for mirror descent the Bregman divergence of
    its potential (``bregman_<N>``, docs/math.md#mirror-descent-and-lp-svms)."""
    X, Z = (t[r].cpu().double().numpy() for t in (inst.K, inst.Z))
    least = svm.min_margins(Ws, X, Z, sel, seed_mask(inst, r))  # (C,)
    made = {n.name: n for n in norms.make_norms(limits.solver(cfg))}
    md = cfg.optimizer.kind == Optimizer.md
    curves = {}
    for name, sol in at_sel.items():
        c, norm = norms.column(name), made[name]
        best = float(norm.value(sol.W)) if sol.ok else None
        curves[f"margin_{c}"] = metrics.margin_ratio(norms.values(norm, Ws), least, best)
        if md:
            curves[f"bregman_{c}"] = metrics.bregman(sol.W, Ws, cfg.optimizer.p)
    return curves


def head_curves(cfg: RunBase, inst: Instances, r: int, vs: np.ndarray, sel, Ws=None) -> dict:
    """A trained head v (C, d) against the hard-margin classifier of the selected tokens,
    v^mm = argmin ||v|| s.t. Y_i v^T x_{i alpha_i} >= 1 (``corr_v_mm``); the attention
    W(k) (C, d, d) against the relaxed Frobenius SVM, whose margin is 1 only for the support
    vectors of v^mm (``corr_relaxed``, docs/math.md#joint-training-vmm-and-the-relaxed-p-svm);
    for mirror descent also the Bregman divergence to the lp one (``bregman_v``)."""
    X, Y = inst.X[r].cpu().double().numpy(), inst.Y[r].cpu().double().numpy()
    rows = Y[:, None] * X[np.arange(len(sel)), sel]  # (n, d)
    v_mm = svm.v_mm(rows, 2.0, cfg.solver)
    curves = {"corr_v_mm": metrics.corr(vs[:, :, None], None if v_mm is None else v_mm[:, None])}
    if Ws is not None:
        tight = svm.v_mm_support(rows, v_mm, cfg.solver)
        K, Z = (t[r].cpu().double().numpy() for t in (inst.K, inst.Z))
        relaxed = svm.w_mm_relaxed(K, Z, sel, tight, cfg.solver) if tight.any() else None
        W = relaxed.W if relaxed is not None and relaxed.ok else None
        curves["corr_relaxed"] = metrics.corr(Ws, W)
        if W is not None and cfg.parameterization.kind == Parameterization.p:
            curves.update({f"p_relaxed{k}": W[k, 0] for k in range(W.shape[0])})
        curves.update(limits.relaxed_lp_curve(cfg, rows, K, Z, sel, Ws))
    if cfg.optimizer.kind == Optimizer.md:
        v_p = svm.v_mm(rows, cfg.optimizer.p, cfg.solver)
        curves["bregman_v"] = metrics.bregman(v_p, vs[:, :, None], cfg.optimizer.p)
    return curves


def analyse_svm_only(cfg: RunBase, inst: Instances, r: int, at_opt=None) -> dict:
    """Without training: the SVMs at alpha = opt, their feasibility and ranks."""
    opt = inst.opt[r].cpu().numpy()
    at_opt = at_opt or solve_svms(cfg, inst, {r: opt})[r]
    status, reason = seed_status(True, {"opt": list(at_opt.values())})
    seconds = sum(sol.seconds for sol in at_opt.values())
    return {
        "seed": inst.seeds[r],
        "status": status,
        "reason": reason,
        **opt_svm_columns(cfg, at_opt),
        "opt": ",".join(map(str, opt)),
        "svm_seconds": seconds,
        "seconds": seconds,
    }


def path_tables(inst: Instances, traj: Trajectory, r: int, at_opt: dict):
    """The 2-D path picture of seed ``r``: GD path W(k) z_i and SVM rays W^mm z_i, W^mm_* z_i
    from ``at_opt`` = {norm: solution} at alpha = opt (``paths`` rows: seed, i,
    kind, step, c0..c{d-1}), and the tokens (``tokens`` rows)."""
    X, Z = (t[r].cpu().double().numpy() for t in (inst.X, inst.Z))
    opt = inst.opt[r].cpu().numpy()
    Ws = traj.W[:, r].cpu().double().numpy()  # (C, d, d)
    n, T, d = X.shape
    coords = [f"c{k}" for k in range(d)]
    wz = np.einsum("cde,ne->cnd", Ws, Z)  # (C, n, d) W(k) z_i
    frames = [
        pd.DataFrame(wz[:, i], columns=coords).assign(i=i, kind="gd", step=traj.steps)
        for i in range(n)
    ]
    for kind, name in (("w_mm", "fro"), ("w_mm_nuc", "nuc")):
        sol = at_opt.get(name)
        if sol is not None and sol.ok:
            ray = pd.DataFrame(Z @ sol.W.T, columns=coords)  # (n, d) rows W^mm z_i
            frames.append(ray.assign(i=range(n), kind=kind, step=-1))
    paths = pd.concat(frames, ignore_index=True).assign(seed=inst.seeds[r])
    i_idx, t_idx = np.divmod(np.arange(n * T), T)
    tokens = pd.DataFrame(X.reshape(n * T, d), columns=[f"x{k}" for k in range(d)])
    tokens = tokens.assign(
        seed=inst.seeds[r],
        i=i_idx,
        t=t_idx,
        Y=inst.Y[r].cpu().numpy()[i_idx],
        gamma=inst.gamma[r].cpu().numpy().reshape(-1),
        is_opt=t_idx == opt[i_idx],
        **{f"z{k}": Z[i_idx, k] for k in range(d)},
    )
    return paths, tokens


def draw(cfg: RunBase, seeds: list[int], device: str = "cpu") -> Instances:
    """The instances of ``seeds`` in the run's dtype (the p-model's: keys x~ = M x, the one
    query e_1); a data set that is gd's own data is drawn by its examples (data_set_code)."""
    own = data_set_hook(sets.name_of(cfg.dataset), "instances")
    dtype = getattr(torch, cfg.dtype.value)
    inst = make_instances(cfg.dataset, seeds, dtype=dtype, device=device, draw=own)
    if cfg.parameterization.kind == Parameterization.p:
        inst = inst.p_model_view(
            key_query(cfg.parameterization.key_query, cfg.dataset.example, cfg.dataset.d)
        )
    return inst


def run_batch(cfg: RunBase, seeds: list[int], report: Progress | None = None, first: int = 0):
    """Train and analyse one batch of seeds; returns (rows, trajectory tables (dicts of
    columns, for results.stack), extra frames, arrays.npz's arrays of the batch or {}).
    ``report`` hears of its stages; ``first``: the batch's first seed's position in the job."""
    if report is not None:
        report.start_batch(first, first + len(seeds))
    inst = draw(cfg, seeds, cfg.device.value)
    opt = inst.opt.cpu().numpy()
    if not cfg.train:
        at_opt = solve_svms(cfg, inst, dict(enumerate(opt)), report)
        rows = [analyse_svm_only(cfg, inst, r, at_opt[r]) for r in range(len(seeds))]
        return rows, [], {}, batch_arrays(cfg, on_cpu(inst), None, (at_opt, None))
    t0 = time.perf_counter()
    params, cone_info = None, None
    if cfg.parameterization.init == Init.cone:  # start near a local, non-global SVM direction
        from attnsvm.svm.cone import cone_params

        params, cone_info = cone_params(cfg, inst)
    if report is not None:
        report.start_training(cfg.optimizer.steps)
    traj = train(
        inst, make_head(cfg.head, inst), cfg.parameterization, cfg.optimizer, params,
        engine=train_engine(cfg), threads=cfg.threads, train_head=cfg.head.train, loss=cfg.loss,
        on_steps=None if report is None else report.trained,
    )  # fmt: skip
    traj, inst = on_cpu(traj), on_cpu(inst)  # SVMs and metrics run on the CPU, in float64
    train_seconds = (time.perf_counter() - t0) / len(seeds)  # the copy waits for the GPU
    rows, trajs, extra, svms = analyse_batch(cfg, inst, traj, report)
    for r, row in enumerate(rows):
        if cone_info is not None:
            row.update(cone_info[r], cone_converged=row["selected"] == cone_info[r]["cone_alpha"])
        row["train_seconds"] = train_seconds
        row["seconds"] = train_seconds + row["svm_seconds"]
    return rows, trajs, extra, batch_arrays(cfg, inst, traj, svms)


def analyse_batch(cfg: RunBase, inst: Instances, traj: Trajectory, report=None):
    """The SVMs and metrics of a trained batch (on the CPU): (rows, trajectory tables, extra
    frames, (SVMs at opt, SVMs at the selected tokens where they moved)). Training's own
    columns (train_seconds, cone_*) are the caller's."""
    opt = inst.opt.numpy()
    sel = traj.selected[-1].numpy()
    seeds = range(len(inst.seeds))
    moved = {r: sel[r] for r in seeds if not np.array_equal(sel[r], opt[r])}
    at_opt, at_sel = solve_svm_sets(
        cfg, inst, [dict(enumerate(opt)), moved], report, "at opt and at the selected tokens"
    )
    if report is not None:
        report.start_analysis()
    rows, trajs, extra = [], [], {}
    kkt = kkt_curves(cfg, inst, traj)
    planar = sets.entry(sets.name_of(cfg.dataset)).planar_paths

    def analysed(share: list[int]) -> list[tuple]:
        return [analyse_seed(cfg, inst, traj, r, (at_opt[r], at_sel.get(r)), kkt) for r in share]

    shares = shares_of(seeds, cfg.threads)  # forked processes (attnsvm/parallel.py)
    hear = None if report is None else lambda k: report.analysed(len(shares[k]))
    forked = worth_forking(len(seeds), cfg.threads)
    parts = spread(analysed, shares, cfg.threads, processes=forked, done=hear)
    for r, (row, tr) in enumerate(a for part in parts for a in part):
        rows.append(row)
        trajs.append(tr)
        if planar:  # the data set's pictures in the plane: each seed's path in it too
            paths, tokens = path_tables(inst, traj, r, at_opt[r])
            extra.setdefault("paths", []).append(paths)
            extra.setdefault("tokens", []).append(tokens)
    return rows, trajs, extra, (at_opt, at_sel)


def run_job(cfg: RunBase, progress=None) -> JobResult:
    """experiment=gd: all seeds of ``cfg`` in batches of ``cfg.batch_size``; tables carry the
    config columns. ``progress(done, total)`` after each batch; a ``Progress`` also hears of
    training steps, SVMs and metrics as they go (attnsvm/progress.py)."""
    t0 = time.perf_counter()
    seeds = accepted_seeds(cfg.dataset, cfg.seed, cfg.seeds)  # relu: all-positive labels skipped
    rows, trajs, extra, arrays = [], [], {}, []
    report = reporter(progress)
    if report is not None:
        report.start_job(len(seeds))
    for start in range(0, len(seeds), cfg.batch_size):
        r, t, e, a = run_batch(cfg, seeds[start : start + cfg.batch_size], report, start)
        rows += r
        trajs += t
        arrays.append(a)
        for name, frames in e.items():
            extra.setdefault(name, []).extend(frames)
        if progress is not None:
            progress(len(rows), len(seeds))
    return job_result(cfg, rows, trajs, extra, t0, join_batches(cfg, arrays))


def job_result(cfg: RunBase, rows, trajs, extra: dict, t0: float, arrays: dict) -> JobResult:
    """The job's tables from its seeds' rows, trajectories and extra frames, with the config
    columns; ``t0``: when the job started (perf_counter)."""
    cols = job_columns(cfg)
    runs = with_constants(pd.DataFrame(rows), cols)
    trajectory = stack(trajs, empty={"seed": [], "step": []})  # one frame, not one per seed
    trajectory = with_constants(
        trajectory, {k: cols[k] for k in ("n", "T", "d", "parameterization", "head", "config_hash")}
    )
    extra = {
        name: pd.concat(frames, ignore_index=True).assign(config_hash=cols["config_hash"])
        for name, frames in extra.items()
    }  # the core fills in the identity (results/contract.py: finish)
    return JobResult(runs, trajectory, "", time.perf_counter() - t0, extra, arrays)
