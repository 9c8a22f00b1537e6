"""The process-wide settings a job runs under: every experiment within ``threads``, MKL in
strict reproducibility mode."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from threadpoolctl import threadpool_info

from attnsvm.experiments import job_config
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

    for module in ("gd.job", "multitoken.job", "regpath.job"):  # what EXPERIMENT.run_job calls
        monkeypatch.setattr(f"attnsvm.experiments.{module}.run_job", record)
    torch.set_num_threads(2)
    try:
        with pytest.raises(StopIteration):
            run_job(job_config(experiment)(threads=1))
        assert seen == {"torch": 1, "blas": {1}}
    finally:
        torch.set_num_threads(1)


FAULTS_OF_REUSE = """
import resource, statistics, sys
from attnsvm.composition import DatasetConfig
from attnsvm.config import SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.runtime import limit_threads
from attnsvm.svm import norms
import torch
torch.set_num_threads(1)
inst = make_instances(DatasetConfig(n=40, T=12, d=24), [0])  # 440 constraints: 1.5 MB Schur
problem = (inst.X[0].double().numpy(), inst.Z[0].double().numpy(), inst.opt[0].numpy())
def faults():
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    norms.solve_all(norms.make_norms(SolverConfig()), [problem], SolverConfig())
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
def median_after_first(calls=6):  # the first solve touches its code and buffers first
    return statistics.median([faults() for _ in range(calls)][1:])
if sys.argv[1] == "job":
    from attnsvm.workers import keep_freed_memory
    keep_freed_memory()  # as a sweep's worker and ``python -m attnsvm.run`` set it
    with limit_threads(1):  # as a job runs
        print(median_after_first())
else:  # glibc's initial 128 KiB threshold, pinned: set, it no longer adapts
    import ctypes
    from attnsvm.workers import M_MMAP_THRESHOLD
    assert ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, 128 << 10)
    print(median_after_first())
"""


def _median_faults(mode: str) -> float:
    res = subprocess.run(
        [sys.executable, "-c", FAULTS_OF_REUSE, mode], capture_output=True, text=True, check=True
    )
    return float(res.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_job_reuses_freed_megabytes_instead_of_faulting_in_new_pages():
    """The nuclear SVM's interior point at m = 440, in a fresh process under glibc's default
    mmap threshold and in one that runs it as a job does (a worker's and the CLI's entry point
    sets workers.keep_freed_memory): its freed MB blocks reused, not new pages. The median of five
    solves after the first (a solve now and then grows the heap: 1 000-3 000 faults seen). Left
    to itself glibc raises its threshold after the first frees, at a moment that varies: a
    default process read 426 to 27 000 faults on two machines, so the control pins the threshold
    at glibc's initial 128 KiB, where each Newton step's temporaries are new pages."""
    before, after = _median_faults("glibc"), _median_faults("job")
    assert before > 2000, before
    assert after < before / 10, (before, after)  # 1-10 seen
