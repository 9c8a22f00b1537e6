"""experiment=benign: the data draw (flip counts, noise orthogonal to the signal), the gradients
against autograd, the labels on constructed cases, the max-margin helper, batch invariance, bad
keys refused, and a tiny end-to-end run (slow)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import attnsvm
from attnsvm.config.checks import ConfigError
from attnsvm.experiments import benign
from attnsvm.experiments.benign import data, model
from attnsvm.experiments.benign.config import Config
from attnsvm.experiments.benign.job import label
from attnsvm.experiments.benign.svm import max_margin, p_rows
from attnsvm.experiments.benign.train import checkpoint_steps

SMALL = dict(n=8, d=24, test=50, steps=6, checkpoints=3)


def _run(seeds=2, seed=0, **kw):
    return SimpleNamespace(seed=seed, seeds=seeds, dtype="float64", device="cpu", threads=1,
                           benign=Config(**{**SMALL, **kw}))  # fmt: skip


@pytest.mark.parametrize("setting", ["two_token", "token_selection"])
def test_flip_counts_are_exact_and_half_from_each_class(setting):
    cfg = Config(setting=setting, n=20, d=16, eta=0.2)
    tr, _ = data.draw_one(cfg, 3, data.TRAIN)
    assert int(tr.flipped.sum()) == 4
    assert int(tr.flipped[0, :10].sum()) == 2 and int(tr.flipped[0, 10:].sum()) == 2
    assert torch.equal(tr.y, torch.where(tr.flipped, -tr.clean, tr.clean))
    assert float(tr.clean.sum()) == 0.0  # balanced
    te, _ = data.draw_one(cfg, 3, data.TEST)
    assert not te.flipped.any() and torch.equal(te.y, te.clean)


def test_two_token_noise_is_orthogonal_to_the_signal_and_the_signal_is_exact():
    cfg = Config(n=10, d=16, snr=0.5)
    tr, _ = data.draw_one(cfg, 0, data.TRAIN)
    X, sig = tr.X[0], tr.signal[0]
    rows = torch.arange(10)
    noise = X[rows, 1 - sig]
    assert torch.all(noise[:, :2] == 0)
    mu = torch.zeros(10, 16, dtype=torch.float64)
    mu[tr.clean[0] > 0, 0] = cfg.signal
    mu[tr.clean[0] < 0, 1] = cfg.signal
    assert torch.equal(X[rows, sig], mu)


def test_token_selection_tokens_carry_the_official_means():
    cfg = Config(setting="token_selection", n=2000, d=6, snr=1.0, rho=0.5, eta=0.0)
    tr, _ = data.draw_one(cfg, 0, data.TRAIN)
    plus = tr.X[0, tr.clean[0] > 0].mean(0)  # (T, d)
    s = cfg.signal
    expect = torch.zeros(8, 6, dtype=torch.float64)
    expect[0, 0], expect[1, 0], expect[2, 1] = s, 0.5 * s, 0.5 * s
    assert torch.allclose(plus, expect, atol=0.12)


@pytest.mark.parametrize("setting", ["two_token", "token_selection"])
def test_gradients_match_autograd(setting):
    cfg = Config(setting=setting, n=6, d=12, snr=0.7)
    tr, g = data.draw_one(cfg, 0, data.TRAIN)
    state = {k: v + 0.3 * torch.randn_like(v) for k, v in model.start(cfg, [g], torch.float64,
                                                                      "cpu").items()}  # fmt: skip
    nu = model.head(cfg, torch.float64, "cpu")
    loss, _, _, grads = model.loss_and_grads(state, tr.X, tr.y, nu)
    leaf = {k: v.clone().requires_grad_(True) for k, v in state.items()}
    q = leaf["W"][0] @ leaf["p"][0] if "W" in leaf else leaf["p"][0]
    value = leaf["v"][0] if "v" in leaf else nu
    f = (torch.softmax(tr.X[0] @ q, -1) * (tr.X[0] @ value)).sum(-1)
    ref = torch.nn.functional.softplus(-tr.y[0] * f).mean()
    ref.backward()
    assert torch.allclose(loss[0], ref.detach(), rtol=1e-12)
    for k in leaf:
        assert torch.allclose(grads[k], leaf[k].grad, rtol=1e-10, atol=1e-14), k


def test_the_labels_on_constructed_cases():
    assert label(True, 0.99, 1.0, 0.05) == "benign"
    assert label(True, 0.95, 1.0, 0.05) == "benign"
    assert label(True, 0.70, 1.0, 0.05) == "harmful"
    assert label(False, 0.99, 1.0, 0.05) == "not_interpolating"
    assert label(True, float("nan"), 1.0, 0.05) == "not_interpolating"


def test_max_margin_is_the_svm_and_an_infeasible_one_is_said():
    sol = max_margin(np.array([[2.0, 0.0], [0.0, 1.0]]), "toy")
    assert sol.status == "ok" and np.allclose(sol.w, [0.5, 1.0])
    bad = max_margin(np.array([[1.0, 0.0], [-1.0, 0.0]]), "toy")
    assert bad.status == "infeasible" and "hull" in bad.reason
    X = np.zeros((1, 3, 2))
    X[0, 1, 0] = 1.0
    assert p_rows(X, np.array([1])).tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_checkpoints_hold_steps_one_and_two():
    assert checkpoint_steps(100, 4)[:4] == [0, 1, 2, 5] and checkpoint_steps(100, 4)[-1] == 100
    assert checkpoint_steps(1, 3) == [0, 1]


@pytest.mark.parametrize("setting", ["two_token", "token_selection"])
def test_a_seed_alone_and_in_a_batch_gives_identical_rows(setting):
    batch = benign.EXPERIMENT.run_job(_run(seeds=3, seed=0, setting=setting))
    alone = benign.EXPERIMENT.run_job(_run(seeds=1, seed=1, setting=setting))
    cols = [c for c in batch.runs if c not in ("train_seconds",)]
    a = batch.runs[batch.runs.seed == 1][cols].reset_index(drop=True)
    b = alone.runs[cols].reset_index(drop=True)
    assert a.equals(b), (a.T, b.T)
    ta = batch.trajectory[batch.trajectory.seed == 1].reset_index(drop=True)
    assert ta.equals(alone.trajectory.reset_index(drop=True))


def test_a_job_has_rows_labels_summary_and_figures(tmp_path):
    res = benign.EXPERIMENT.run_job(_run(seeds=2, steps=8, snr=1.0))
    for col in (
        "status",
        "label",
        "fit_clean",
        "fit_flipped",
        "test_acc",
        "mm_test_acc",
        "attn_clean",
        "attn_flipped",
        "corr_q",
        "corr_v",
        "label_step2",
        "benign.snr",
    ):
        assert col in res.runs, col  # fmt: skip
    assert set(res.trajectory.step) >= {0, 1, 2, 8}
    assert set(res.runs.status) <= {"ok", "diverged", "infeasible", "failed"}
    assert "benign: 2 seeds" in benign.EXPERIMENT.summary_text(res.runs, res.seconds)
    paths = benign.EXPERIMENT.figures(res.runs, res.trajectory, tmp_path)
    assert all(p.exists() for p in paths) and any(p.suffix == ".png" for p in paths)


def test_a_huge_step_is_diverged_per_seed_not_a_crash():
    res = benign.EXPERIMENT.run_job(_run(seeds=2, lr=1e308, steps=10))
    assert set(res.runs.status) == {"diverged"}, res.runs[["status", "reason"]]
    assert "diverged: 2 seeds" in benign.EXPERIMENT.summary_text(res.runs, res.seconds)


A = "is invalid: accepted values are"  # the one message form (attnsvm/config/constraints.py)


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ("benign.eta=0.5", rf"benign.eta=0.5 {A} floats in \[0, 0.5\)"),
        ("benign.T=4", rf"benign.T=4 {A} null or 2 with benign.setting=two_token"),
        ("benign.snr=0", rf"benign.snr=0.0 {A} finite floats > 0"),
        ("benign.n=1", rf"benign.n=1 {A} integers >= 2 \(both classes\)"),
    ],
)
def test_bad_keys_are_refused_at_composition(override, match):
    with pytest.raises(ConfigError, match=match):
        attnsvm.compose(["experiment=benign", override])


def test_a_bad_choice_is_refused_naming_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=rf"benign.rule='adam' {A} gd, ngd"):
        Config(rule="adam")
    with pytest.raises(Exception, match=r"benign.setting=three") as got:
        attnsvm.compose(["experiment=benign", "benign.setting=three"])
    assert "two_token, token_selection" in str(got.value.__cause__)  # Hydra names the choices


@pytest.mark.slow
def test_a_tiny_job_runs_end_to_end(tmp_path):
    cmd = [sys.executable, "-m", "attnsvm.run", "experiment=benign", "seeds=2", "benign.steps=5",
           "benign.d=20", "benign.n=6", "benign.test=40", f"hydra.run.dir={tmp_path}"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "benign: 2 seeds" in res.stdout + res.stderr
    assert list(tmp_path.rglob("runs.parquet"))


def _rows(*overrides: str):
    return attnsvm.run_job(attnsvm.compose(["experiment=benign", "seeds=2", *overrides])).runs


def test_a_step_that_overshoots_reads_diverged_with_its_step_not_infeasible():
    """lr=100: the loss jumps from log 2 to tens at step 1; the max-margin interpolator's
    infeasibility is its own column (mm_status), not the seed's status."""
    runs = _rows("benign.lr=100")
    assert set(runs.status) == {"diverged"}
    assert runs.reason.str.contains(r"the loss grew from .* at step 1: the step overshoots").all()
    assert set(runs.mm_status) <= {"ok", "infeasible"}


def test_a_first_step_into_a_saturated_softmax_reads_stalled():
    runs = _rows("benign.setting=token_selection", "benign.lr=1e300")
    assert set(runs.status) == {"stalled"}
    assert runs.reason.str.contains("frozen at .* from step 1 on").all()


def test_an_infeasible_interpolator_leaves_the_seed_ok(monkeypatch):
    """The default run trains fine; where the max-margin problem has no solution, only
    mm_status and mm_reason say so."""
    from attnsvm.experiments.benign import svm

    def infeasible(*args, **kwargs):
        return svm.MaxMargin(None, "infeasible", "v-SVM: 0 is in the hull of the rows")

    monkeypatch.setattr(svm, "max_margin", infeasible)
    runs = _rows()
    assert set(runs.status) == {"ok"} and set(runs.reason) == {""}
    assert set(runs.mm_status) == {"infeasible"}
    assert set(runs.mm_reason) == {"v-SVM: 0 is in the hull of the rows"}


@pytest.mark.parametrize("lr", ["inf", "nan", "-1", "0"])
def test_benign_lr_refuses_what_no_step_can_be(lr):
    with pytest.raises(ConfigError, match=f"benign.lr={lr}.*finite floats > 0"):
        attnsvm.compose(["experiment=benign", f"benign.lr={lr}"])
