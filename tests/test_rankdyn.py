"""experiment=rankdyn: stage detection, the training loop's spectrum and gradient, batch
invariance, the alpha scaling of the start, and the nuclear SVM it is compared with."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest
import torch

from attnsvm.composition import DatasetConfig
from attnsvm.config import Init, ParameterizationConfig, SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.experiments import rankdyn
from attnsvm.experiments.rankdyn import Config, detect_stages, effective_rank
from attnsvm.experiments.rankdyn.dynamics import (
    init_state,
    loss_and_grads,
    train_rank,
    unit_factors,
)
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import init_params


def _run(seeds=2, seed=0, **kw):
    return SimpleNamespace(seed=seed, seeds=seeds, dtype="float64", device="cpu", threads=1,
                           solver=SolverConfig(), rankdyn=Config(**kw))  # fmt: skip


# ---- stages -------------------------------------------------------------------------------
def test_staircase_rises_are_the_stages():
    steps = np.arange(0, 80, 10)
    ranks = [1, 1, 1, 2, 2, 2, 3, 3]
    loss = [0.7, 0.7, 0.7, 0.5, 0.5, 0.5, 0.3, 0.3]
    st = detect_stages(steps, ranks, loss)
    assert st.stage_steps == [30, 60] and st.stage_ranks == [2, 3] and st.n_stages == 2
    assert st.plateau_losses == [0.7, 0.5]
    assert (st.lowest_step, st.lowest_rank) == (0, 1)


def test_a_collapse_is_not_a_stage_and_a_flicker_counts_once():
    steps = np.arange(10)
    ranks = [8, 8, 5, 1, 1, 2, 1, 2, 3, 3]  # collapse to 1, flicker 2-1-2, then 3
    st = detect_stages(steps, ranks, np.linspace(1, 0, 10))
    assert (st.lowest_step, st.lowest_rank) == (3, 1)
    assert st.stage_steps == [5, 8] and st.stage_ranks == [2, 3]


def test_a_jump_of_two_is_one_stage_and_a_flat_rank_has_none():
    assert detect_stages([0, 1, 2], [1, 3, 3], [1, 1, 1]).stage_ranks == [3]
    assert detect_stages([0, 1, 2], [2, 2, 2], [1, 1, 1]).n_stages == 0


def test_effective_rank_counts_above_the_fraction_of_the_top():
    sv = np.array([[10.0, 2.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert effective_rank(sv, 0.1).tolist() == [2, 0]
    assert effective_rank(sv, 0.01).tolist() == [3, 0]


# ---- the start ----------------------------------------------------------------------------
def test_the_start_scales_with_alpha_and_the_control_starts_at_the_same_matrix():
    one = init_state(Config(alpha=1.0), [3, 4], torch.float64, "cpu")
    small = init_state(Config(alpha=1e-3), [3, 4], torch.float64, "cpu")
    for name in ("K", "Q"):
        assert torch.equal(small[name], 1e-3 * one[name])
    w = init_state(Config(alpha=1e-3, parameterization="w"), [3, 4], torch.float64, "cpu")
    assert torch.allclose(w["W"], small["K"] @ small["Q"].transpose(-1, -2), rtol=1e-13)
    house = init_params(ParameterizationConfig(kind="kq", init=Init.normal, init_scale=1.0),
                        [3, 4], 10, torch.float64, "cpu")  # fmt: skip
    assert torch.equal(one["K"], house.K) and torch.equal(one["Q"], house.Q)


# ---- the loop -----------------------------------------------------------------------------
def _inst(seeds=(0, 1), **shape):
    return make_instances(DatasetConfig(**shape), list(seeds))


def test_the_loop_gradient_is_autograds():
    inst = _inst()
    head = LinearHead(inst)
    state = init_state(Config(alpha=0.5), inst.seeds, torch.float64, "cpu")
    _, _, grads = loss_and_grads(state, inst, head, penalty=1e-3, with_loss=False)
    K, Q = (state[k].clone().requires_grad_() for k in ("K", "Q"))
    a = torch.einsum("rntd,rde,rne->rnt", inst.X, K @ Q.transpose(-1, -2), inst.Z)
    f = (torch.softmax(a, -1) * torch.einsum("rntd,rd->rnt", inst.X, inst.v)).sum(-1)
    loss = torch.log1p(torch.exp(-inst.Y * f)).mean(-1) + 1e-3 * (K.square() + Q.square()).sum(
        (1, 2)
    )
    gK, gQ = torch.autograd.grad(loss.sum(), [K, Q])
    assert torch.allclose(grads["K"], gK, rtol=1e-10, atol=1e-14)
    assert torch.allclose(grads["Q"], gQ, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("rule", ["gd", "ngd"])
def test_the_recorded_spectrum_is_svdvals_of_k_qt_along_the_path(rule):
    cfg = Config(alpha=0.1, rule=rule, steps=6, checkpoints=6)
    inst = _inst()
    rec = train_rank(inst, LinearHead(inst), cfg)
    K, Q = (cfg.alpha * t for t in unit_factors(inst.seeds, 10, 10, torch.float64, "cpu"))
    lr = cfg.step_size
    for k in range(cfg.steps + 1):  # the same steps, by hand with autograd's gradient
        if k in rec.steps:
            c = rec.steps.index(k)
            assert torch.allclose(rec.W[c], K @ Q.transpose(-1, -2), rtol=1e-10, atol=1e-15)
        Kg, Qg = K.clone().requires_grad_(), Q.clone().requires_grad_()
        a = torch.einsum("rntd,rde,rne->rnt", inst.X, Kg @ Qg.transpose(-1, -2), inst.Z)
        f = (torch.softmax(a, -1) * torch.einsum("rntd,rd->rnt", inst.X, inst.v)).sum(-1)
        gK, gQ = torch.autograd.grad(torch.log1p(torch.exp(-inst.Y * f)).mean(-1).sum(), [Kg, Qg])
        if rule == "ngd":
            gK, gQ = (g / g.flatten(1).norm(dim=1)[:, None, None] for g in (gK, gQ))
        K, Q = K - lr * gK, Q - lr * gQ
    res = rankdyn.EXPERIMENT.run_job(_run(alpha=0.1, rule=rule, steps=6, checkpoints=6))
    tr = res.trajectory[res.trajectory.seed == 1].sort_values("step")
    sv = torch.linalg.svdvals(rec.W[:, 1]).numpy()  # (C, d)
    got = tr[[f"sv{k}" for k in range(10)]].to_numpy()
    np.testing.assert_allclose(got, sv, rtol=1e-10, atol=1e-15)
    assert tr.eff_rank.tolist() == effective_rank(sv, 0.05).tolist()


def test_a_seed_has_the_same_bits_alone_and_in_a_batch():
    kw = dict(alpha=1e-2, steps=150, checkpoints=12)
    batch = rankdyn.EXPERIMENT.run_job(_run(seeds=4, seed=0, **kw))
    alone = rankdyn.EXPERIMENT.run_job(_run(seeds=1, seed=2, **kw))
    cols = ["step", "loss", "eff_rank", "corr_nuc", *[f"sv{k}" for k in range(10)]]
    mine = batch.trajectory[batch.trajectory.seed == 2][cols].reset_index(drop=True)
    assert mine.equals(alone.trajectory[cols].reset_index(drop=True))
    row = batch.runs[batch.runs.seed == 2].iloc[0]
    for key in ("stage_steps", "final_eff_rank", "rank_nuc", "corr_nuc", "loss", "selected"):
        assert row[key] == alone.runs.iloc[0][key], key


# ---- the SVM it is compared with --------------------------------------------------------------
def _nuclear_svm_by_cvxpy(X, Z, alpha):
    """min ||W||_* s.t. (x_{i alpha_i} - x_it)^T W z_i >= 1, written out independently."""
    n, T, d = X.shape
    W = cp.Variable((d, d))
    cons = [
        (X[i, alpha[i]] - X[i, t]) @ W @ Z[i] >= 1 for i in range(n) for t in range(T)
        if t != alpha[i]
    ]  # fmt: skip
    tight = dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    cp.Problem(cp.Minimize(cp.normNuc(W)), cons).solve(solver=cp.CLARABEL, **tight)
    return W.value


def test_rank_nuc_and_corr_nuc_are_the_nuclear_svm_at_the_selected_tokens():
    kw = dict(alpha=0.1, rule="ngd", steps=300, checkpoints=10, n=3, T=4, d=4)
    res = rankdyn.EXPERIMENT.run_job(_run(seeds=2, **kw))
    assert res.runs.status.eq("ok").all()
    inst = make_instances(DatasetConfig(n=3, T=4, d=4), [0, 1])
    rec = train_rank(inst, LinearHead(inst), Config(**kw))  # the same final K Q^T
    for r, row in res.runs.iterrows():
        sel = np.array([int(x) for x in row.selected.split(",")])
        assert sel.tolist() == rec.selected[r].tolist()
        W = _nuclear_svm_by_cvxpy(inst.X[r].numpy(), inst.Z[r].numpy(), sel)
        sv = np.linalg.svd(W, compute_uv=False)
        assert row.rank_nuc == int((sv > 1e-6 * sv[0]).sum())
        assert row.eff_rank_nuc == int((sv > 0.05 * sv[0]).sum())
        final = rec.W[-1, r].numpy()
        corr = (final * W).sum() / (np.linalg.norm(final) * np.linalg.norm(W))
        assert row.corr_nuc == pytest.approx(corr, abs=1e-6)


# ---- the docs page's table is the published results file --------------------------------------
def test_the_docs_table_is_the_published_summary():
    from attnsvm.experiments.rankdyn.summary import render_docs

    repo = Path(__file__).resolve().parents[1]
    page = (repo / "docs" / "rankdyn.md").read_text()
    table = pd.read_csv(repo / "docs" / "results" / "rankdyn_table.csv")
    rerun = "python -m attnsvm.experiments.rankdyn.summary docs/rankdyn.md"
    assert render_docs(page, table) == page, rerun


def test_job_tables_carry_the_contract_and_the_figures_draw(tmp_path):
    res = rankdyn.EXPERIMENT.run_job(_run(seeds=2, alpha=1e-2, steps=40, checkpoints=8))
    for col in ("seed", "status", "stage_steps", "n_stages", "final_eff_rank", "rank_nuc",
                "corr_nuc", "loss", "rankdyn.alpha", "rankdyn.rule"):  # fmt: skip
        assert col in res.runs, col
    assert {"seed", "step", "loss", "eff_rank", "sv0", "sv9"} <= set(res.trajectory)
    assert "rankdyn: 2 seeds" in rankdyn.EXPERIMENT.summary_text(res.runs, res.seconds)
    paths = rankdyn.EXPERIMENT.figures(res.runs, res.trajectory, tmp_path)
    assert paths and all(p.stat().st_size > 0 for p in paths)


def test_a_bad_key_names_itself_and_what_is_accepted():
    with pytest.raises(ValueError, match=r"rankdyn.rule='adam' is invalid: accepted values are gd"):
        Config(rule="adam")
    with pytest.raises(ValueError, match=r"rankdyn.rank_frac=1.5 is invalid: .* in \(0, 1\)"):
        Config(rank_frac=1.5)
