"""The process-wide settings a job runs under: every experiment within ``threads``, MKL in
strict reproducibility mode."""

from __future__ import annotations

import pytest
import torch
from threadpoolctl import threadpool_info

from attnsvm.composition import RunConfig
from attnsvm.job import run_job
from attnsvm.runtime import limit_threads, mkl_cnr_mode


def test_mkl_runs_in_strict_reproducibility_mode():
    torch.linalg.eigvalsh(torch.eye(3, dtype=torch.float64))  # MKL has run by now
    assert mkl_cnr_mode() in ("strict", "no mkl")


def test_limit_threads_bounds_torch_and_blas_and_restores():
    torch.set_num_threads(2)
    try:
        with limit_threads(1):
            assert torch.get_num_threads() == 1
            assert all(pool["num_threads"] == 1 for pool in threadpool_info())
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


@pytest.mark.parametrize("experiment", ["gd", "multitoken", "regpath"])
def test_every_experiment_runs_within_the_threads_limit(monkeypatch, experiment):
    seen = {}

    def record(cfg, progress=None):
        seen["torch"] = torch.get_num_threads()
        seen["blas"] = {pool["num_threads"] for pool in threadpool_info()}
        raise StopIteration

    for module in ("gd.pipeline", "multitoken.job", "regpath.job"):  # what EXPERIMENT.run_job calls
        monkeypatch.setattr(f"attnsvm.experiments.{module}.run_job", record)
    torch.set_num_threads(2)
    try:
        with pytest.raises(StopIteration):
            run_job(RunConfig(experiment=experiment, threads=1))
        assert seen == {"torch": 1, "blas": {1}}
    finally:
        torch.set_num_threads(1)
