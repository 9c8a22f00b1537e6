"""Cone init: GD started near a locally optimal, non-global W^mm_alpha converges to alpha."""

import numpy as np

from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import Init, OptimizerConfig, ParameterizationConfig, SolverConfig
from attnsvm.job import run_job


def test_cone_init_converges_to_the_local_svm():
    cfg = RunConfig(
        dataset=DatasetConfig(n=4, T=5, d=4),
        parameterization=ParameterizationConfig(init=Init.cone, cone_scale=100.0, init_scale=0.01),
        optimizer=OptimizerConfig(steps=300, checkpoint_every=300, eps=0.0),
        solver=SolverConfig(),
        seeds=4,
    )
    runs = run_job(cfg).runs
    found = runs[runs.cone_found]
    assert len(found) >= 2
    assert (found.cone_alpha != found.opt).all()  # alpha is not the global choice
    assert found.cone_converged.all()  # GD keeps alpha ...
    assert (found.conv_type == "local").all()  # ... and its direction is W^mm_alpha
    assert np.all(found.corr_fro > 0.99)
