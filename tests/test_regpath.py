"""Regularization path: the direction of W̄_R approaches W^mm (W) and W^mm_* ((K,Q))."""

import numpy as np
import pytest

from attnsvm.config import (
    DatasetConfig,
    Experiment,
    Parameterization,
    ParameterizationConfig,
    RegpathConfig,
    RunConfig,
)
from attnsvm.experiments.regpath import run_job


@pytest.mark.parametrize("kind,column", [("w", "corr_fro"), ("kq", "corr_nuc")])
def test_regpath_direction_approaches_the_svm(kind, column):
    cfg = RunConfig(
        dataset=DatasetConfig(n=2, T=3, d=4),
        parameterization=ParameterizationConfig(kind=Parameterization(kind)),
        experiment=Experiment.regpath,
        regpath=RegpathConfig(r_min=1.0, r_max=300.0, points=5, steps=300),
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
