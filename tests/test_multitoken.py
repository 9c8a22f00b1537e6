"""Multi-token SVM-equivalence: W^fin, W^dir constraints, SVMeq vs W^dir, acceptance flags."""

import cvxpy as cp
import numpy as np
import pytest

from attnsvm.composition import DatasetConfig, Generator
from attnsvm.config import (
    Head,
    HeadConfig,
    OptimizerConfig,
    Parameterization,
    ParameterizationConfig,
    SolverConfig,
)
from attnsvm.experiments.multitoken.config import Config, MultitokenRun
from attnsvm.experiments.multitoken.job import (
    _pairs,
    acceptance_flags,
    fit_R,
    run_job,
    w_dir,
    w_fin,
    w_fin_dir_nuc,
)


def _instance(seed=0, n=3, T=4, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, T, d))
    Z = rng.standard_normal((n, d))
    return X / np.linalg.norm(X, axis=-1, keepdims=True), Z / np.linalg.norm(Z, axis=-1)[:, None]


def test_w_fin_and_w_dir_satisfy_their_constraints():
    X, Z = _instance()
    O = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0]], bool)
    s = np.where(O, np.array([[0.3, 0.7, 0, 0], [1, 0, 0, 0], [0, 0.4, 0.6, 0]]), 1e-9)
    a = np.einsum("ntd,de,ne->nt", X, w_fin(X, Z, s, O), Z)
    (p, q), _ = _pairs(O)
    np.testing.assert_allclose(
        a[q[:, 0], q[:, 1]] - a[p[:, 0], p[:, 1]],
        np.log(s[q[:, 0], q[:, 1]] / s[p[:, 0], p[:, 1]]),
        atol=1e-10,
    )
    W = w_dir(X, Z, O)
    a = np.einsum("ntd,de,ne->nt", X, W, Z)
    for i in range(3):
        sel, masked = a[i, O[i]], a[i, ~O[i]]
        np.testing.assert_allclose(sel, sel[0], atol=1e-9)  # equal scores within O_i
        assert sel.min() - masked.max() >= 1 - 1e-9  # margin >= 1 to every masked token
    assert min(
        sel.min() - masked.max() for sel, masked in ((a[i, O[i]], a[i, ~O[i]]) for i in range(3))
    ) == pytest.approx(1, abs=1e-8)


def test_fit_R_recovers_a_planted_combination():
    rng = np.random.default_rng(1)
    Wf, Wd = rng.standard_normal((2, 4, 4))
    assert fit_R(Wf + 7.5 * Wd, Wf, Wd) == pytest.approx(7.5)


def test_acceptance_flags():
    s = np.array([[0.5, 0.5 - 1e-8, 1e-8], [1 - 2e-4, 1e-4, 1e-4]])
    f = acceptance_flags(s, 1e-3, 1e-6)
    assert not f["band_ok"] and f["has_zero"] and f["masked_max"] == 1e-4
    f = acceptance_flags(s[:1], 1e-3, 1e-6)
    assert f["band_ok"] and f["has_zero"] and f["multi_selected"]


def _multitoken_cfg(d: int, steps: int, every: int, target: int, batch_size: int) -> MultitokenRun:
    """The published multitoken setting (ReLU head, n=3, T=4, seeds from 1), scaled down."""
    return MultitokenRun(
        dataset=DatasetConfig(generator=Generator.relu, n=3, T=4, d=d),
        head=HeadConfig(kind=Head.relu),
        optimizer=OptimizerConfig(steps=steps, checkpoint_every=every),
        multitoken=Config(target_accepted=target),
        seed=1,
        batch_size=batch_size,
    )


def test_svmeq_beats_w_dir_where_two_tokens_stay_selected():
    res = run_job(_multitoken_cfg(d=6, steps=1500, every=500, target=6, batch_size=40))
    ok = res.runs[(res.runs.status == "ok") & res.runs.multi_selected]
    assert len(ok) >= 3
    err_eq, err_dir = 1 - ok.corr_svmeq, 1 - ok.corr_dir
    assert (err_eq <= err_dir + 1e-9).all()
    assert err_eq.mean() < err_dir.mean()
    assert res.runs.status.eq("ok").sum() == 6 and res.runs.accepted.iloc[-1]
    steps = sorted(res.trajectory.step.unique())
    assert steps == [0, 500, 1000, 1500]
    ok_seeds = set(res.runs.seed[res.runs.status == "ok"])
    assert ok_seeds <= set(res.trajectory.seed) <= set(res.runs.seed)


def test_target_accepted_rows_do_not_depend_on_the_batch_size():
    def job(batch_size):
        cfg = _multitoken_cfg(d=4, steps=800, every=400, target=3, batch_size=batch_size)
        return run_job(cfg).runs.set_index("seed")

    a, b = job(5), job(32)
    assert list(a.index) == list(b.index) and (a.status == "ok").sum() == 3
    ok = a.status == "ok"
    np.testing.assert_array_equal(a.corr_svmeq[ok], b.corr_svmeq[ok])  # bit for bit


def _kq(cfg: MultitokenRun) -> MultitokenRun:
    cfg.parameterization = ParameterizationConfig(kind=Parameterization.kq)
    return cfg


def test_kq_multitoken_accepts_seeds_with_nuclear_svms():
    """The default backend (IPM) reaches cvxpy through the gateway, as Clarabel."""
    res = run_job(_kq(_multitoken_cfg(d=4, steps=800, every=400, target=2, batch_size=8)))
    assert (res.runs.status == "ok").sum() == 2, res.runs[["status", "reason"]]
    assert not res.runs.reason.str.contains("not installed").any()


def test_nuclear_w_dir_has_the_least_nuclear_norm():
    X, Z = _instance(seed=3)
    O = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0]], bool)
    s = np.where(O, 0.5, 1e-9)
    (_, fin_status, _), (W_nuc, status, reason) = w_fin_dir_nuc(X, Z, s, O, SolverConfig())
    assert status == fin_status == "optimal", reason
    W_fro = w_dir(X, Z, O)
    a = np.einsum("ntd,de,ne->nt", X, W_nuc, Z)
    for i in range(3):
        assert a[i, O[i]].min() - a[i, ~O[i]].max() >= 1 - 1e-7
    nuc = lambda W: np.linalg.norm(W, "nuc")  # noqa: E731
    assert nuc(W_nuc) <= nuc(W_fro) + 1e-6
    assert np.linalg.norm(W_fro) <= np.linalg.norm(W_nuc) + 1e-9


def test_a_solver_error_is_recorded_as_such_never_as_infeasible(monkeypatch):
    def broken(problem, solver=None, **kw):
        raise cp.error.SolverError(f"The solver {solver} is not installed.")

    monkeypatch.setattr(cp.Problem, "solve", broken)
    res = run_job(_kq(_multitoken_cfg(d=4, steps=200, every=100, target=None, batch_size=4)))
    assert set(res.runs.status) == {"solver_error"}
    assert res.runs.reason.str.contains(": CLARABEL: The solver CLARABEL is not", regex=False).all()
    assert not res.runs.reason.str.contains("infeasible").any()


def test_diverged_seeds_end_a_target_job_as_diverged_rows_and_progress_stays_in_range():
    """lr=1e300: every seed diverges; the job finishes with those rows (never KeyError
    'accepted'), stops drawing after the first batch, and reports at most the target."""
    cfg = _multitoken_cfg(d=4, steps=40, every=20, target=2, batch_size=6)
    cfg.optimizer.lr = 1e300
    seen = []
    res = run_job(cfg, progress=lambda done, total: seen.append((done, total)))
    assert len(res.runs) == 6 and set(res.runs.status) == {"diverged"}
    assert not res.runs.accepted.any()
    assert seen == [(0, 2)]


def test_progress_of_a_target_job_never_passes_the_target():
    cfg = _multitoken_cfg(d=4, steps=800, every=400, target=1, batch_size=32)
    seen = []
    run_job(cfg, progress=lambda done, total: seen.append((done, total)))
    assert seen and all(done <= total == 1 for done, total in seen) and seen[-1] == (1, 1)


def test_the_rate_bound_is_clopper_pearsons():
    """0 of N: 1 - 0.05^(1/N) (about 3/N); x of N: the rate at which x or fewer acceptances
    have probability 5 %."""
    from scipy.stats import binom

    from attnsvm.experiments.multitoken.search import rate_upper_bound

    for tried in (1, 10, 2995, 3000):
        assert rate_upper_bound(0, tried) == pytest.approx(1 - 0.05 ** (1 / tried), rel=1e-9)
    assert rate_upper_bound(0, 3000) < 1e-3 < rate_upper_bound(0, 2990)
    for accepted, tried in ((1, 50), (7, 300), (500, 24953)):
        bound = rate_upper_bound(accepted, tried)
        assert accepted / tried < bound
        assert binom.cdf(accepted, tried, bound) == pytest.approx(0.05, rel=1e-6)
    assert rate_upper_bound(0, 0) == rate_upper_bound(5, 5) == 1.0


def test_a_hopeless_search_stops_by_its_rule_and_says_why():
    """40 steps accept no seed (nothing reaches a zero softmax entry): with min_rate=0.05 the
    search stops once 0 of N has a 95 % bound under 5 % (N >= 59: two batches of 40), not at
    max_tried; the job's search_end and the progress lines say so."""
    from attnsvm.progress import Progress

    cfg = _multitoken_cfg(d=4, steps=40, every=20, target=2, batch_size=40)
    cfg.multitoken.min_rate, cfg.multitoken.max_tried = 0.05, 400
    lines = []
    res = run_job(cfg, progress=Progress(interval=0, emit=lines.append))
    assert len(res.runs) == 80 and not res.runs.accepted.any()
    assert (res.runs.seeds_tried == 80).all()
    end = res.runs.search_end.iloc[0]
    assert end.startswith("hopeless: 0 of 80 seeds accepted") and "min_rate=0.05" in end
    assert lines[-1].endswith(
        "seeds tried 80, accepted 0/2 (acceptance rate <= 0.037 at 95% confidence)"
    )
    # max_tried, when it comes first, is named as the end
    cfg.multitoken.min_rate, cfg.multitoken.max_tried = 0.0, 40
    res = run_job(cfg)
    assert res.runs.search_end.iloc[0] == "max_tried reached: 0 of 40 seeds accepted"


def test_a_target_reached_says_so():
    res = run_job(_multitoken_cfg(d=4, steps=800, every=400, target=1, batch_size=32))
    assert (res.runs.search_end == "target reached").all() and res.runs.accepted.sum() == 1
