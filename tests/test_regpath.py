"""Regularization path: the direction of W̄_R approaches W^mm (W) and W^mm_* ((K,Q))."""

import numpy as np
import pytest

from attnsvm.composition import DatasetConfig
from attnsvm.config import Parameterization, ParameterizationConfig
from attnsvm.experiments.regpath.config import Config, RegpathRun
from attnsvm.experiments.regpath.job import run_job


@pytest.mark.parametrize("kind,column", [("w", "corr_fro"), ("kq", "corr_nuc")])
def test_regpath_direction_approaches_the_svm(kind, column):
    cfg = RegpathRun(
        dataset=DatasetConfig(n=2, T=3, d=4),
        parameterization=ParameterizationConfig(kind=Parameterization(kind)),
        regpath=Config(r_min=1.0, r_max=300.0, points=5, steps=300),
        seeds=2,
    )
    res = run_job(cfg)
    assert (res.runs.status == "ok").all()
    for _, tr in res.trajectory.groupby("seed"):
        corr = tr.sort_values("R")[column].to_numpy()
        assert corr[-1] > 0.999
        assert corr[-1] > corr[0]
        if kind == "w":  # the constraint is active along the path: ||W̄_R|| = R
            np.testing.assert_allclose(tr.w_norm, tr.R, rtol=1e-9)


def test_projection_of_a_w_whose_norm_overflows_keeps_its_direction():
    import torch

    from attnsvm.experiments.regpath.job import _project
    from attnsvm.train.loop import Params

    W = torch.randn(3, 4, 4, dtype=torch.float64)
    huge = W * 1e300  # finite entries, ||W||_F = inf in float64
    assert not torch.isfinite(torch.linalg.matrix_norm(huge)).any()
    got = _project(Params(W=huge), 5.0).W
    want = 5.0 * W / torch.linalg.matrix_norm(W)[:, None, None]
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("lr", [1e300, 1e308])
def test_a_step_that_overflows_is_reported_diverged_never_ok(lr):
    """lr=1e308 overflows W itself: every seed diverged, with the chain and R index; no seed
    reads ok with a NaN column."""
    cfg = RegpathRun(
        seeds=2,
        dataset=DatasetConfig(n=4, T=5, d=4),
        regpath=Config(points=4, steps=30, r_max=50.0, lr=lr),
    )
    runs = run_job(cfg).runs
    ok = runs[runs.status == "ok"]
    assert not ok[["corr", "corr_init", "loss"]].isna().any().any(), ok
    bad = runs[runs.status == "diverged"]
    assert bad.reason.str.match(r"(init|svm) chain: .*non-finite at step \d").all()
    if lr == 1e308:
        assert len(bad) == len(runs)
