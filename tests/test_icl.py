"""Experiment icl: Gamma^{-1} against direct minimization and fresh-prompt training, gradients,
batch invariance, the full model's effective A, noise, and L layers as L preconditioned GD steps."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from attnsvm.experiments import icl
from attnsvm.experiments.icl import baselines, data, limits, model, plots
from attnsvm.experiments.icl.config import Config
from attnsvm.experiments.icl.train import squared_loss

LINEAR = np.array([1.0, 2.5, 4.0])


def job(seed: int = 0, seeds: int = 1, **keys):
    run = SimpleNamespace(seed=seed, seeds=seeds, dtype="float64", device="cpu", threads=1)
    run.icl = Config(**keys)
    return icl.EXPERIMENT.run_job(run)


def numpy_prompts(M: int, eig: np.ndarray, N: int, noise: float, seed: int = 0):
    """x_q (M, d), h (M, d), y_q (M,) drawn with numpy (not the package's sampler)."""
    rng = np.random.default_rng(seed)
    d = len(eig)
    x = rng.standard_normal((M, N + 1, d)) * np.sqrt(eig)
    w = rng.standard_normal((M, d))
    y = np.einsum("mnd,md->mn", x, w) + noise * rng.standard_normal((M, N + 1))
    h = np.einsum("mnd,mn->md", x[:, :N], y[:, :N]) / N
    return x[:, N], h, y[:, N]


def rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b)))


# ---- the limit ---------------------------------------------------------------------------------
@pytest.mark.parametrize("eig", [np.ones(3), LINEAR], ids=["identity", "linear"])
@pytest.mark.parametrize("noise", [0.0, 1.5])
def test_limit_is_the_least_squares_A_of_many_prompts(eig, noise):
    """Direct minimization of the squared loss over A on 400k prompts (least squares in the d^2
    features x_q h^T) lands on (Gamma + sigma^2/N I)^{-1}, not on the naive Lam^{-1}."""
    N = 5
    x_q, h, y_q = numpy_prompts(400_000, eig, N, noise)
    features = np.einsum("mi,mj->mij", x_q, h).reshape(len(y_q), -1)  # y_hat = x_q^T A h
    A_ls = np.linalg.lstsq(features, y_q, rcond=None)[0].reshape(3, 3)
    Lam = torch.diag(torch.from_numpy(eig))
    A_star = limits.limit(Lam, N, noise).numpy()
    assert rel(A_ls, A_star) < 0.02
    assert rel(A_ls, np.diag(1 / eig)) > 0.15
    if noise:
        assert rel(A_ls, limits.limit(Lam, N).numpy()) > 0.05  # the noise term matters


def test_population_loss_and_gd1_step_match_monte_carlo():
    N, noise = 5, 0.7
    x_q, h, y_q = numpy_prompts(400_000, LINEAR, N, noise, seed=1)
    Lam = torch.diag(torch.from_numpy(LINEAR))
    A = np.random.default_rng(2).standard_normal((3, 3)) * 0.3
    mc = 0.5 * np.mean((np.einsum("mi,ij,mj->m", x_q, A, h) - y_q) ** 2)
    closed = float(limits.population_loss(torch.from_numpy(A), Lam, N, noise))
    assert closed == pytest.approx(mc, rel=0.01)
    eta = limits.gd1_step(Lam, N, noise)  # the best A = eta I by 1-D least squares
    g = np.einsum("mi,mi->m", x_q, h)
    assert eta == pytest.approx(g @ y_q / (g @ g), rel=0.01)


def test_population_gradient_matches_finite_differences_and_monte_carlo():
    N, noise = 5, 0.5
    Lam = torch.diag(torch.from_numpy(LINEAR))
    A = 0.3 * torch.randn(3, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    A.requires_grad_(True)
    (grad,) = torch.autograd.grad(limits.population_loss(A, Lam, N, noise), A)
    fd = torch.zeros(3, 3, dtype=torch.float64)
    for i in range(3):
        for j in range(3):
            E = torch.zeros(3, 3, dtype=torch.float64)
            E[i, j] = 1e-6
            up = limits.population_loss(A.detach() + E, Lam, N, noise)
            down = limits.population_loss(A.detach() - E, Lam, N, noise)
            fd[i, j] = (up - down) / 2e-6
    torch.testing.assert_close(grad, fd, rtol=1e-6, atol=1e-8)
    cfg = Config(d=3, N=N, noise=noise, spectrum="file", spectrum_file="unused")
    chol = torch.diag(torch.from_numpy(np.sqrt(LINEAR)))
    prompts = data.draw([data.generator(9, 0)], 400_000, cfg.N, chol, noise)
    mc = squared_loss(model.forward(*model.gd_weights(A[None, None]), prompts.E), prompts.y_q)
    (mc_grad,) = torch.autograd.grad(mc.sum(), A)
    assert rel(mc_grad.numpy(), grad.numpy()) < 0.03


# ---- training with fresh prompts --------------------------------------------------------------
@pytest.mark.parametrize("parameterization", ["merged", "structured"])
@pytest.mark.parametrize("spectrum", ["identity", "linear"])
def test_fresh_prompt_training_reaches_gamma_inverse(parameterization, spectrum):
    runs = job(parameterization=parameterization, spectrum=spectrum).runs
    assert (runs.status == "ok").all()
    assert runs.rel_err_limit.max() < 0.05
    assert runs.corr_limit.min() > 0.998
    assert runs.icl_loss.max() < runs.icl_loss_gd1.min() or spectrum == "identity"


def test_fresh_prompt_training_with_noise_reaches_the_noisy_limit():
    noise = 2.0
    result = job(noise=noise)
    assert result.runs.rel_err_limit.max() < 0.05
    A_noiseless = limits.limit(torch.eye(5, dtype=torch.float64), 20)
    A_noisy = limits.limit(torch.eye(5, dtype=torch.float64), 20, noise)
    assert rel(A_noisy, A_noiseless) > 0.1  # so the first check tells them apart


def test_population_gradient_training_reaches_the_limit_exactly():
    runs = job(parameterization="structured", spectrum="linear", gradient="population").runs
    assert runs.rel_err_limit.max() < 1e-6
    assert runs.pop_loss.iloc[0] == pytest.approx(runs.pop_loss_limit.iloc[0], rel=1e-10)


def test_seeds_are_a_batch_dimension():
    # the job's PGD baseline is fitted once for all its seeds (on fit_prompts prompts): small here
    keys = dict(steps=20, batch=64, test_prompts=200, checkpoint_every=10, noise=0.5)
    keys["fit_prompts"] = 400
    for parameterization in ("merged", "structured", "full"):
        many = job(seed=0, seeds=4, parameterization=parameterization, layers=2, **keys)
        one = job(seed=2, seeds=1, parameterization=parameterization, layers=2, **keys)
        a, b = (
            many.runs[many.runs.seed == 2].drop(columns="seconds"),
            one.runs.drop(columns="seconds"),
        )
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b, check_exact=True)
        t = many.trajectory[many.trajectory.seed == 2].reset_index(drop=True)
        pd.testing.assert_frame_equal(t, one.trajectory, check_exact=True)
        assert many.runs.icl_loss.nunique() == 4  # the seeds do differ


# ---- the model --------------------------------------------------------------------------------
def test_full_effective_A_is_the_bilinear_part_of_the_forward_pass():
    cfg = Config(d=4, N=7, parameterization="full", init_scale=0.5, noise=0.3)
    gens = [data.generator(s, 0) for s in range(2)]
    params = model.init_params(cfg, gens, torch.float64, "cpu")
    prompts = data.draw(gens, 50, cfg.N, torch.eye(4, dtype=torch.float64), cfg.noise)
    y_hat = model.forward(*model.weights(cfg, params), prompts.E)
    A = model.effective_A(cfg, params)
    pv, kq = params["pv"][:, 0].detach(), params["kq"][:, 0].detach()
    x, y = prompts.E[..., :4, :7], prompts.E[..., 4, :7]  # context (R, B, d, N), (R, B, N)
    S = x @ x.transpose(-1, -2) / 7
    ybar2 = (y**2).mean(-1)
    x_q, h = prompts.x_q, prompts.h
    bilinear = torch.einsum("rbi,rij,rbj->rb", x_q, A.detach(), h)
    r1 = torch.einsum("ri,rbij,rjk,rbk->rb", pv[:, 4, :4], S, kq[:, :4, :4], x_q)
    r2 = pv[:, 4, 4, None] * ybar2 * torch.einsum("ri,rbi->rb", kq[:, 4, :4], x_q)
    torch.testing.assert_close(y_hat, bilinear - r1 - r2, rtol=1e-12, atol=1e-12)
    assert r1.abs().mean() > 1e-3 and r2.abs().mean() > 1e-3  # the check covers every term


@pytest.mark.parametrize("parameterization", ["merged", "structured"])
def test_one_layer_prediction_is_x_q_A_h(parameterization):
    cfg = Config(d=3, N=6, parameterization=parameterization, init_scale=1.0)
    gens = [data.generator(s, 0) for s in range(3)]
    params = model.init_params(cfg, gens, torch.float64, "cpu")
    prompts = data.draw(gens, 40, cfg.N, torch.eye(3, dtype=torch.float64), 0.0)
    y_hat = model.forward(*model.weights(cfg, params), prompts.E)
    A = model.effective_A(cfg, params)
    expected = torch.einsum("rbi,rij,rbj->rb", prompts.x_q, A, prompts.h)
    torch.testing.assert_close(y_hat, expected, rtol=1e-12, atol=1e-12)


def explicit_pgd(P: np.ndarray, x: np.ndarray, y: np.ndarray, x_q: np.ndarray) -> float:
    """L steps w <- w + P_l (1/N) sum_i (y_i - x_i^T w) x_i from 0, one prompt, plain numpy."""
    w = np.zeros(x.shape[1])
    for P_l in P:
        w = w + P_l @ (x.T @ (y - x @ w)) / len(y)
    return float(x_q @ w)


def test_L_layers_with_the_gd_construction_are_L_preconditioned_gd_steps():
    d, N, L = 3, 8, 3
    gen = torch.Generator().manual_seed(4)
    P = 0.4 * torch.randn(L, d, d, generator=gen, dtype=torch.float64)
    prompts = data.draw([data.generator(0, 0)], 20, N, torch.eye(d, dtype=torch.float64), 0.2)
    pv, kq = model.gd_weights(P[None])  # (1, L, d+1, d+1) each
    y_hat = model.forward(pv, kq, prompts.E)[0]
    E = prompts.E[0].numpy()
    expected = [explicit_pgd(P.numpy(), e[:d, :N].T, e[d, :N], e[:d, N]) for e in E]
    np.testing.assert_allclose(y_hat.numpy(), expected, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(baselines.pgd_predict(P, prompts)[0].numpy(), expected, rtol=1e-11)
    cfg = Config(d=d, N=N, layers=L, parameterization="structured")
    u = torch.tensor([[0.5, -2.0, 1.5]], dtype=torch.float64)
    W = -P.transpose(-1, -2)[None] / u[..., None, None]  # -u_l W_l^T = P_l
    structured = model.forward(*model.weights(cfg, {"u": u, "W": W}), prompts.E)[0]
    np.testing.assert_allclose(structured.numpy(), expected, rtol=1e-11, atol=1e-12)


def test_fitted_two_step_pgd_beats_one_step_gamma_inverse():
    runs = job(layers=2, steps=20, test_prompts=5000, fit_prompts=5000).runs
    assert (runs.icl_loss_pgd < 0.9 * runs.icl_loss_limit).all()
    assert np.isnan(runs.rel_err_limit).all()  # one-layer quantities


# ---- config, files, summary, figures ----------------------------------------------------------
@pytest.mark.parametrize(
    "keys, message",
    [
        (dict(spectrum="flat"), "icl.spectrum='flat' is invalid: accepted values are identity, "),
        (dict(parameterization="kq"), "icl.parameterization='kq' is invalid: accepted values"),
        (dict(N=0), "icl.N=0 is invalid: accepted values are integers >= 1"),
        (dict(kappa=0.5), "icl.kappa=0.5"),
        (dict(spectrum="file"), "icl.spectrum_file=None is invalid: accepted values are a path"),
        (dict(parameterization="full", gradient="population"), "icl.gradient='population'"),
        (dict(layers=2, gradient="population"), "icl.gradient='population'"),
    ],
)
def test_bad_keys_name_the_key_and_what_is_accepted(keys, message):
    with pytest.raises(ValueError, match=message.replace("|", r"\|").replace("(", r"\(")):
        Config(**keys)


def test_spectrum_file(tmp_path):
    np.save(tmp_path / "eig.npy", LINEAR)
    cfg = Config(d=3, spectrum="file", spectrum_file=str(tmp_path / "eig.npy"))
    torch.testing.assert_close(limits.covariance(cfg), torch.diag(torch.from_numpy(LINEAR)))
    cov = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.savetxt(tmp_path / "cov.txt", cov)
    cfg = Config(d=3, spectrum="file", spectrum_file=str(tmp_path / "cov.txt"))
    torch.testing.assert_close(limits.covariance(cfg), torch.from_numpy(cov))
    with pytest.raises(ValueError, match="icl.spectrum_file=.*accepted .* 4 positive"):
        limits.covariance(Config(d=4, spectrum="file", spectrum_file=str(tmp_path / "cov.txt")))


def test_a_log_loss_axis_within_one_decade_still_has_labels():
    """The N axis is labelled at the swept values only; the log y axis of the losses keeps its
    minor ticks, its only labels when the losses span less than a decade (a short sweep)."""
    fig, ax = plots.plt.subplots()
    ax.plot([5, 10], [1.1, 1.8])
    ax.set_yscale("log")
    plots._n_axis(ax, [5, 10])
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    shown = [t.get_text() for t in ax.yaxis.get_ticklabels(which="both") if t.get_text()]
    inside = [y for y in ax.yaxis.get_minorticklocs() if lo <= y <= hi]
    plots.plt.close(fig)
    assert shown and inside, "the y axis has no labels"
    assert list(ax.xaxis.get_minorticklocs()) == []


def test_summary_and_figures(tmp_path):
    keys = dict(steps=30, batch=64, test_prompts=300, fit_prompts=300, checkpoint_every=10)
    parts = [job(seeds=2, N=N, layers=L, **keys) for N, L in [(5, 1), (10, 1), (5, 2)]]
    runs = pd.concat([p.runs for p in parts], ignore_index=True)
    trajectory = pd.concat([p.trajectory for p in parts], ignore_index=True)
    text = icl.EXPERIMENT.summary_text(parts[0].runs, parts[0].seconds)
    assert "A vs Gamma^-1: corr" in text and "2/2 seeds ok" in text
    assert "defined for one layer" in icl.EXPERIMENT.summary_text(parts[2].runs, 1.0)
    written = icl.EXPERIMENT.figures(runs, trajectory, tmp_path)
    names = sorted(p.name for p in written)
    assert names == ["icl_N.png", "icl_layers.png", "icl_table.csv", "icl_trajectory.png"]
    assert all(p.stat().st_size > 10_000 for p in written if p.suffix == ".png")
    table = pd.read_csv(tmp_path / "icl_table.csv")
    assert len(table) == 3 and (table.ok == 2).all()  # one row per (N, layers) point
    one = runs[(runs["icl.N"] == 5) & (runs["icl.layers"] == 1)]
    row = table[(table["icl.N"] == 5) & (table["icl.layers"] == 1)].iloc[0]
    assert row.rel_err_max == pytest.approx(one.rel_err_limit.max(), abs=1e-6)
    assert row.corr_min == pytest.approx(one.corr_limit.min(), abs=1e-6)
