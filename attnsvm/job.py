"""One job = one config point x all its seeds: the skeleton every experiment runs in.

    from attnsvm.job import run_job
    result = run_job(run)      # resolved, under run.threads, with its identity and columns

The experiment (attnsvm/experiments/<name>/ or your module) computes its rows; the core
resolves the run, bounds the threads, and adds what every result carries
(attnsvm/results/contract.py).
"""

from __future__ import annotations

from attnsvm.composition.identity import config_hash
from attnsvm.composition.resolve import resolve
from attnsvm.experiments import entry
from attnsvm.experiments.config_columns import config_columns
from attnsvm.results.contract import JobResult, finish
from attnsvm.runtime import limit_threads


def run_job(run, progress=None) -> JobResult:
    """Run ``run.experiment`` on all seeds of ``run``, under ``run.threads`` (torch and the
    BLAS pools numpy/scipy use); its tables carry the job's identity, its config hash."""
    run = resolve(run)
    with limit_threads(run.threads):
        result = entry(run.experiment).run_job(run, progress)
        return finish(result, config_hash(run), config_columns(run))
