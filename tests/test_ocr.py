"""experiment=ocr: the token-count model against the literal one-layer transformer (outputs and
autograd's gradients), the step rules against torch's, batch invariance, the OV-SVMs against
cvxpy written out, bad keys, a solver's failure, the summary and figures."""

from __future__ import annotations

import math
from types import SimpleNamespace

import cvxpy as cp
import numpy as np
import pytest
import torch

from attnsvm.config.schema import SolverConfig
from attnsvm.experiments import ocr
from attnsvm.experiments.ocr import data, model, svm
from attnsvm.experiments.ocr.config import Config
from attnsvm.experiments.ocr.train import StepRuleState
from attnsvm.svm import solve as svm_solve
from bits import assert_frames_identical

TINY = dict(names=8, cities=2, animals=2, noise=2, T=6, batch=12, eval_prompts=20)
TIMING = ["train_seconds", "svm_seconds"]


def _run(seeds=2, seed=0, batch_size=1000, **kw):
    return SimpleNamespace(seed=seed, seeds=seeds, batch_size=batch_size, dtype="float64",
                           device="cpu", solver=SolverConfig(), ocr=Config(**kw))  # fmt: skip


# ---- the model: token counts are the literal transformer's prompt -------------------------------
def _literal_logits(cfg: Config, tokens, W_Q, W_O, W_V):
    """Logits at the last position of the one-layer attention-only model on token sequences
    (B, T): one-hot embeddings, W_K = I, causal attention (linear or softmax / sqrt(d))."""
    X = torch.eye(cfg.d, dtype=W_Q.dtype)[tokens]  # (B, T, d)
    scores = (X @ W_Q.T) @ X.transpose(-1, -2)  # (B, T, T): (W_Q x_s)^T (W_K x_t)
    causal = torch.ones(tokens.shape[1], tokens.shape[1]).tril().bool()
    if cfg.attention == "linear":
        attn = scores.masked_fill(~causal, 0.0)
    else:
        attn = torch.softmax((scores / math.sqrt(cfg.d)).masked_fill(~causal, -math.inf), -1)
    out = attn @ (X @ W_V.T) @ W_O.T  # (B, T, d)
    return out[:, -1]


def _sequences(cfg: Config, B: int, gen) -> torch.Tensor:
    """B prompts as the official sampler lays them out: noise, the name before the relation,
    EOS last."""
    v = data.vocab(cfg)
    rows = []
    for _ in range(B):
        seq = v.noise[torch.randint(cfg.noise, (cfg.T - 3,), generator=gen)].tolist()
        i = int(torch.randint(len(seq) + 1, (1,), generator=gen))
        seq.insert(i, int(v.names[torch.randint(cfg.names, (1,), generator=gen)]))
        j = int(torch.randint(i + 1, len(seq) + 1, (1,), generator=gen))
        seq.insert(j, int(torch.randint(2, (1,), generator=gen)))
        rows.append(seq + [v.eos])
    return torch.tensor(rows)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_the_count_model_is_the_literal_transformer_and_so_are_its_gradients(attention):
    cfg = Config(**TINY, attention=attention, rank=5)
    gen = torch.Generator().manual_seed(3)
    tokens = _sequences(cfg, 16, gen)
    target = torch.randint(cfg.d, (16,), generator=gen)
    counts = torch.zeros(16, cfg.d, dtype=torch.float64).scatter_add_(
        1, tokens, torch.ones(tokens.shape, dtype=torch.float64)
    )
    W_Q = torch.randn(cfg.d, cfg.d, generator=gen, dtype=torch.float64).requires_grad_()
    W_O = torch.randn(cfg.d, 5, generator=gen, dtype=torch.float64).requires_grad_()
    W_V = torch.randn(5, cfg.d, generator=gen, dtype=torch.float64).requires_grad_()
    want = _literal_logits(cfg, tokens, W_Q, W_O, W_V)
    loss = torch.nn.functional.cross_entropy(want, target)
    gQ, gO, gV = torch.autograd.grad(loss, [W_Q, W_O, W_V])

    eos = data.vocab(cfg).eos
    params = {"q": W_Q[:, eos].detach()[None].clone().requires_grad_(),
              "W_O": W_O.detach()[None].clone().requires_grad_(),
              "W_V": W_V.detach()[None].clone().requires_grad_()}  # fmt: skip
    got = model.logits(cfg, params, counts[None])[0]
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    mine = model.cross_entropy(got[None], target[None])[0]
    torch.testing.assert_close(mine, loss, rtol=1e-12, atol=1e-14)
    grads = torch.autograd.grad(mine, list(params.values()))
    torch.testing.assert_close(grads[0][0], gQ[:, eos], rtol=1e-10, atol=1e-12)
    assert torch.count_nonzero(gQ[:, :eos]) == 0  # the rest of W_Q never reaches the output
    torch.testing.assert_close(grads[1][0], gO, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grads[2][0], gV, rtol=1e-10, atol=1e-12)


def test_the_official_start_and_the_merged_model():
    cfg = Config(**TINY)
    p = model.init_params(cfg, [None, None], torch.float64)
    assert torch.equal(p["W_V"][1], 1e-4 * torch.eye(cfg.d, dtype=torch.float64))
    assert torch.equal(model.w_ov(p), p["W_O"] @ p["W_V"])
    merged = model.init_params(Config(**TINY, ov="merged"), [None], torch.float64)
    assert set(merged) == {"q", "W"} and torch.all(merged["W"] == 1e-4)


# ---- the step rules ------------------------------------------------------------------------
def test_adamw_is_torchs_and_ngd_moves_each_tensor_along_its_normalized_gradient():
    gen = torch.Generator().manual_seed(0)
    p0 = {"a": torch.randn(2, 3, 4, generator=gen, dtype=torch.float64),
          "b": torch.randn(2, 5, generator=gen, dtype=torch.float64)}  # fmt: skip
    gs = [{k: torch.randn(v.shape, generator=gen, dtype=torch.float64) for k, v in p0.items()}
          for _ in range(4)]  # fmt: skip
    mine = {k: v.clone() for k, v in p0.items()}
    rule = StepRuleState(Config(lr=0.01, weight_decay=0.1), mine)
    ref = [p0[k][0].clone().requires_grad_() for k in p0]  # seed 0 alone, by torch
    opt = torch.optim.AdamW(ref, lr=0.01, weight_decay=0.1, betas=(0.9, 0.999), eps=1e-8)
    for g in gs:
        rule(mine, g)
        for t, k in zip(ref, p0, strict=True):
            t.grad = g[k][0].clone()
        opt.step()
    for t, k in zip(ref, p0, strict=True):
        torch.testing.assert_close(mine[k][0], t.detach(), rtol=1e-13, atol=1e-15)
    mine = {k: v.clone() for k, v in p0.items()}
    StepRuleState(Config(rule="ngd", lr=0.1), mine)(mine, gs[0])
    for k in p0:  # each tensor of each seed along its own normalized gradient
        g = gs[0][k][1]
        torch.testing.assert_close(mine[k][1], p0[k][1] - 0.1 * g / (g.norm() + 1e-8))


# ---- seeds are a batch dimension ---------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(ov="merged", rule="ngd", attention="softmax")])
def test_a_seed_has_the_same_bits_alone_in_a_batch_and_at_any_batch_size(kw):
    keys = dict(**TINY, steps=30, checkpoint_every=10, **kw)
    batch = ocr.EXPERIMENT.run_job(_run(seeds=4, **keys))
    alone = ocr.EXPERIMENT.run_job(_run(seeds=1, seed=2, **keys))
    split = ocr.EXPERIMENT.run_job(_run(seeds=4, batch_size=3, **keys))
    runs, traj = batch.runs.drop(columns=TIMING), batch.trajectory
    assert_frames_identical(split.runs.drop(columns=TIMING), runs, "batch_size=3")
    assert_frames_identical(split.trajectory, traj, "batch_size=3 trajectory")
    mine = runs[runs.seed == 2].reset_index(drop=True)
    assert_frames_identical(alone.runs.drop(columns=TIMING), mine, "alone")
    assert_frames_identical(alone.trajectory, traj[traj.seed == 2].reset_index(drop=True), "alone")
    assert batch.runs.heldout_loss.nunique() == 4  # the seeds do differ


# ---- the OV-SVMs -------------------------------------------------------------------------------
def _ov_svm_by_cvxpy(cfg: Config, norm: str) -> np.ndarray:
    """min ||W|| s.t. (e_y - e_y')^T W (e_name + e_relation) >= 1 over every training fact and
    implication and every other answer y', written out from the vocabulary."""
    v = data.vocab(cfg)
    W = cp.Variable((cfg.d, cfg.d))
    cons = []
    answers = v.answers.tolist()
    examples = [(n, data.FACT, int(v.city_of[n])) for n in range(cfg.names)]
    examples += [(n, data.IMPL, int(v.animal_of[n])) for n in range(v.train_names)]
    for n, rel, y in examples:
        z = np.zeros(cfg.d)
        z[int(v.names[n])] = z[rel] = 1.0
        cons += [(W[y, :] - W[a, :]) @ z >= 1 for a in answers if a != y]
    objective = cp.normNuc(W) if norm == "nuc" else cp.sum_squares(W)
    tight = dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    cp.Problem(cp.Minimize(objective), cons).solve(solver=cp.CLARABEL, **tight)
    return W.value


def test_the_ov_svms_are_the_written_out_programs_and_only_the_nuclear_one_generalizes():
    cfg = Config(**TINY)
    sols = svm.solve(cfg, SolverConfig())
    v = data.vocab(cfg)
    for norm in ("fro", "nuc"):
        want = _ov_svm_by_cvxpy(cfg, norm)
        assert sols[norm].status == "optimal"
        np.testing.assert_allclose(sols[norm].W, want, atol=1e-5)
        assert svm.answer_accuracy(sols[norm].W, cfg, "train") == 1.0
    assert svm.answer_accuracy(sols["nuc"].W, cfg) == 1.0
    # the Frobenius SVM leaves every held-out name's animals tied: no animal wins by a margin
    W = sols["fro"].W
    for n in range(v.train_names, cfg.names):
        scores = W[v.animals] @ (np.eye(cfg.d)[int(v.names[n])] + np.eye(cfg.d)[data.IMPL])
        assert np.ptp(scores) < 1e-6


def test_a_solver_failure_is_a_solver_error_never_infeasible(monkeypatch):
    def failed(cfg, solver):
        return {k: svm_solve.SVMSolution(k, svm_solve.SOLVER_ERROR, reason="numerical trouble")
                for k in ("fro", "nuc")}  # fmt: skip

    monkeypatch.setattr(svm, "solve", failed)
    res = ocr.EXPERIMENT.run_job(_run(seeds=2, **TINY, steps=5, checkpoint_every=5))
    assert set(res.runs.status) == {"solver_error"}
    assert "numerical trouble" in res.runs.reason.iloc[0]
    assert res.runs.heldout_acc_nuc.isna().all() and res.runs.heldout_acc.notna().all()


# ---- bad keys, summary, figures ----------------------------------------------------------------
@pytest.mark.parametrize(
    "keys, message",
    [
        (dict(ov="kq"), "ocr.ov='kq' is invalid: accepted values are merged, factorized"),
        (dict(rule="adam"), "ocr.rule='adam' is invalid: accepted values are adamw, gd, ngd"),
        (dict(ov="merged", rank=3), "ocr.rank=3 is invalid: accepted values are null with"),
        (dict(rank=200), "ocr.rank=200 is invalid: .*d = 68"),
        (dict(train_frac=0.01), "ocr.train_frac=0.01 is invalid: .*0 of 40 names"),
        (dict(batch=2), "ocr.batch=2 is invalid: accepted values are integers >= 3"),
    ],
)
def test_bad_keys_name_the_key_and_what_is_accepted(keys, message):
    with pytest.raises(ValueError, match=message):
        Config(**keys)


def test_a_device_other_than_the_cpu_is_refused():
    """Its check (composition runs it; on a machine without CUDA the core refuses cuda first)."""
    from attnsvm.config import ConfigError

    with pytest.raises(ConfigError, match="device=cuda is invalid for experiment=ocr"):
        ocr.EXPERIMENT.check(SimpleNamespace(device="cuda"))
    ocr.EXPERIMENT.check(SimpleNamespace(device="cpu"))


def test_summary_and_figures(tmp_path):
    keys = dict(**TINY, steps=20, checkpoint_every=10)
    parts = [ocr.EXPERIMENT.run_job(_run(seeds=2, ov=ov, rank=r, **keys))
             for ov, r in [("merged", None), ("factorized", 3), ("factorized", 6)]]  # fmt: skip
    import pandas as pd

    runs = pd.concat([p.runs for p in parts], ignore_index=True)
    traj = pd.concat([p.trajectory for p in parts], ignore_index=True)
    text = ocr.EXPERIMENT.summary_text(parts[1].runs, parts[1].seconds)
    assert "2/2 seeds ok" in text and "nuclear 1.000" in text
    written = sorted(p.name for p in ocr.EXPERIMENT.figures(runs, traj, tmp_path))
    assert written == ["ocr_corr.png", "ocr_heldout.png", "ocr_rank.png", "ocr_table.csv"]
    table = pd.read_csv(tmp_path / "ocr_table.csv")
    assert len(table) == 3 and (table.ok == 2).all()


@pytest.mark.slow
def test_a_sweep_has_the_same_bits_on_the_basic_and_the_local_launcher(tmp_path):
    """Launchers change where a job runs, never its numbers: one seed per job in the sweep's
    process (basic, batch_size=1) and two workers of the local pool give identical tables."""
    from cli_helpers import assert_same_tables, run_cli

    sweep = ["experiment=ocr", "ocr.ov=merged,factorized", "seeds=3", "ocr.steps=30"]
    sweep += ["ocr.checkpoint_every=10"]
    basic = run_cli(
        *sweep, "hydra/launcher=basic", "batch_size=1", f"hydra.sweep.dir={tmp_path / 'basic'}",
        multirun=True,
    )  # fmt: skip
    assert basic.returncode == 0, basic.stdout[-3000:]
    local = run_cli(
        *sweep, "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={tmp_path / 'local'}", multirun=True
    )
    assert local.returncode == 0, local.stdout[-3000:]
    assert "2 run, 0 skipped, 0 failed" in local.stdout, local.stdout[-3000:]
    assert_same_tables(tmp_path / "basic", tmp_path / "local")
