"""One benign job: every seed's data drawn from its own streams, all seeds trained at once, then
per seed what was fit (clean and flipped labels), the clean test accuracy, where attention went,
the max-margin interpolator at the selected tokens, and a label: benign / harmful / not
interpolating (at the end and after 1 and 2 steps).

    from attnsvm.experiments.benign.job import run_job
    result = run_job(run)     # run.benign: Config; run.seed, run.seeds, run.dtype, run.device
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from attnsvm.experiments.config_columns import group_columns
from attnsvm.progress import reporter
from attnsvm.results.stack import with_constants

from . import data
from .config import Config, Setting
from .svm import solve_seed
from .train import Record, train_benign

BENIGN, HARMFUL, NOT_INTERPOLATING = "benign", "harmful", "not_interpolating"


def _plain(value):
    return str(getattr(value, "value", value))


def config_columns(cfg: Config) -> dict:
    """``benign.<key>`` for every key (T and lr resolved), the short n, T, d, and the Bayes
    accuracy and signal norm the labels and figures are read against."""
    cols = group_columns(cfg, "benign")
    cols["benign.T"], cols["benign.lr"] = cfg.tokens, cfg.step_size
    cols["benign.steps"] = cfg.n_steps
    extra = {"bayes_acc": data.bayes_accuracy(cfg), "signal_norm": cfg.signal}
    return {"n": cfg.n, "T": cfg.tokens, "d": cfg.d, **cols, **extra}


def label(fit_all: bool, test_acc: float, bayes: float, margin: float) -> str:
    """benign: every training label fit and test accuracy >= bayes - margin; harmful: fit but
    below; not_interpolating: some training label not fit (NaN test accuracy: not fit)."""
    if not fit_all or not np.isfinite(test_acc):
        return NOT_INTERPOLATING
    return BENIGN if test_acc >= bayes - margin else HARMFUL


def vector_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """<a_c, b> / (|a_c| |b|) for a (C, d) and b (d,); NaN where a norm vanishes."""
    num, den = a @ b, np.linalg.norm(a, axis=-1) * np.linalg.norm(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _fits(rec: Record, c: int, r: int) -> bool:
    """Every training label fit at checkpoint c (a set without flips counts as fit there)."""
    flipped = float(rec.fit_flipped[c, r])
    return float(rec.fit_clean[c, r]) == 1.0 and (flipped == 1.0 or np.isnan(flipped))


OVERSHOOT = 2.0  # a loss above this many times its start: the step overshot (GD descends)


def _status(rec: Record, r: int) -> tuple[str, str]:
    """The seed's training: ``diverged`` (non-finite, or the loss grown past OVERSHOOT times its
    start), ``stalled`` (frozen from step 1 on: the first step overshot into a saturated
    softmax, whose gradient is 0), else ``ok``; the reason names the step. The max-margin
    interpolator's own outcome is in ``mm_status``, not here."""
    finite = torch.isfinite(rec.loss[:, r]) & torch.isfinite(rec.q[:, r]).all(-1)
    finite &= torch.isfinite(rec.grad_norm[:, r])
    if rec.v is not None:
        finite &= torch.isfinite(rec.v[:, r]).all(-1)
    if not bool(finite.all()):
        c = int((~finite).nonzero()[0])
        why = "non-finite loss, ||grad||, attention vector or v"
        return "diverged", f"{why} at step {rec.steps[c]}, the first checkpoint that shows it"
    loss, steps = rec.loss[:, r].double().numpy(), rec.steps
    grown = np.flatnonzero(loss > OVERSHOOT * loss[0])
    if len(grown):
        c = int(grown[0])
        return "diverged", (
            f"the loss grew from {loss[0]:.3g} (step 0) to {loss[c]:.3g} at step {steps[c]}: "
            "the step overshoots; lower benign.lr"
        )
    if 1 in steps and steps[-1] > 2:
        c1 = steps.index(1)
        later, grads = loss[c1:], rec.grad_norm[c1:, r].double().numpy()
        if loss[c1] != loss[0] and (later == later[0]).all() and (grads[1:] == 0).all():
            return "stalled", (
                f"the loss is frozen at {later[0]:.3g} from step 1 on (||grad|| = 0): the "
                "first step overshot into a saturated softmax; lower benign.lr"
            )
    return "ok", ""


def analyse_seed(cfg: Config, rec: Record, r: int, seed: int, mm: dict) -> tuple[dict, dict]:
    """The runs row and trajectory columns of batch position ``r``."""
    bayes = data.bayes_accuracy(cfg)
    C = len(rec.steps)
    q = rec.q[:, r].double().numpy()
    corr_q = vector_corr(q, mm["q"]) if mm["q"] is not None else np.full(C, np.nan)
    corr_v = np.full(C, np.nan)
    if rec.v is not None and mm["v"] is not None:
        corr_v = vector_corr(rec.v[:, r].double().numpy(), mm["v"])
    col = {k: getattr(rec, k)[:, r].double().numpy() for k in
           ("loss", "fit_clean", "fit_flipped", "attn_clean", "attn_flipped", "test_acc",
            "grad_norm")}  # fmt: skip
    labels = [label(_fits(rec, c, r), col["test_acc"][c], bayes, cfg.margin) for c in range(C)]
    status, reason = _status(rec, r)
    row = {"seed": seed, "status": status, "reason": reason, "label": labels[-1]}
    row |= {"mm_status": mm["status"], "mm_reason": mm["reason"]}
    row |= {k: float(v[-1]) for k, v in col.items()}
    row |= {"mm_test_acc": mm["test_acc"], "corr_q": float(corr_q[-1])}
    row |= {"corr_v": float(corr_v[-1]), "bayes_acc": bayes}
    row["mm_label"] = label(mm["q"] is not None, mm["test_acc"], bayes, cfg.margin)
    for k in (1, 2):
        c = rec.steps.index(k) if k in rec.steps else None
        row[f"label_step{k}"] = labels[c] if c is not None else None
        row[f"test_acc_step{k}"] = float(col["test_acc"][c]) if c is not None else np.nan
    traj = {"seed": seed, "step": rec.steps, **col, "corr_q": corr_q, "corr_v": corr_v}
    traj["label"] = labels
    return row, traj


def _draw(cfg: Config, seeds: list[int], dtype, device):
    """Training and test sets of every seed, and each seed's TRAIN generator (for its start)."""
    trains, tests, gens = [], [], []
    for seed in seeds:
        tr, g = data.draw_one(cfg, seed, data.TRAIN)
        te, _ = data.draw_one(cfg, seed, data.TEST)
        trains.append(tr)
        tests.append(te)
        gens.append(g)
    return data.stack(trains), data.stack(tests), gens


def _max_margin(
    cfg: Config, train: data.Samples, test: data.Samples, rec: Record, report=None
) -> list:
    """solve_seed for every seed (float64 on the CPU), each told to ``report`` when solved."""
    nu = None
    if cfg.setting == Setting.token_selection:
        from .model import head

        nu = head(cfg, torch.float64, "cpu").numpy()
    out = []
    for r in range(train.X.shape[0]):
        X, y = train.X[r].double().numpy(), train.y[r].double().numpy()
        Xt, yt = test.X[r].double().numpy(), test.clean[r].double().numpy()
        t0 = time.perf_counter()
        out.append(solve_seed(X, y, rec.selected[r].numpy(), Xt, yt, nu))
        if report is not None:
            report.solved("v-SVM", 1, time.perf_counter() - t0)
    return out


def run_job(run, progress=None):
    """All seeds of ``run`` (seed, seed + 1, ...) trained as one batch, then analysed."""
    from attnsvm.results.contract import JobResult

    t0 = time.perf_counter()
    cfg: Config = run.benign
    seeds = list(range(run.seed, run.seed + run.seeds))
    dtype, device = getattr(torch, _plain(run.dtype)), _plain(run.device)
    train, test, gens = _draw(cfg, seeds, dtype, device)
    report = reporter(progress)  # steps done and an ETA on the console while it trains
    if report is not None:
        report.start_job(len(seeds))
        report.start_batch(0, len(seeds))
        report.start_training(cfg.n_steps)
    on_steps = report.trained if report is not None else None
    rec = train_benign(cfg, train.to(dtype, device), test.to(dtype, device), gens, on_steps)
    train_seconds = (time.perf_counter() - t0) / len(seeds)
    if report is not None:
        report.start_svms("max-margin", {"v-SVM": len(seeds)})
    mms = _max_margin(cfg, train, test, rec, report)
    rows, trajs = [], []
    for r, seed in enumerate(seeds):
        row, traj = analyse_seed(cfg, rec, r, seed, mms[r])
        hit = (rec.selected[r] == train.signal[r]).numpy()
        clean = ~train.flipped[r].numpy()
        row["selected_signal_clean"] = float(hit[clean].mean())
        row["selected_signal_flipped"] = float(hit[~clean].mean()) if (~clean).any() else np.nan
        row["train_seconds"] = train_seconds
        rows.append(row)
        trajs.append(pd.DataFrame(traj))
    if progress is not None:
        progress(len(seeds), len(seeds))
    cols = config_columns(cfg)
    runs = with_constants(pd.DataFrame(rows), {k: v for k, v in cols.items() if k != "bayes_acc"})
    trajectory = with_constants(pd.concat(trajs, ignore_index=True), cols)
    return JobResult(runs, trajectory, "", time.perf_counter() - t0)
