"""attnsvm.parallel: per-seed work over forked processes, in order, with errors raised in the
caller; threads where a child could not run (processes=False for CUDA, a daemonic process).
That a job's numbers do not change with ``threads``: tests/test_determinism.py."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import pytest

from attnsvm import parallel


def _where(share: list[int]) -> list[tuple[int, int]]:
    return [(k * k, os.getpid()) for k in share]


def test_spread_keeps_the_order_and_runs_in_children():
    shares = parallel.shares_of(range(10), workers=2)
    heard = []
    parts = parallel.spread(_where, shares, workers=2, done=heard.append)
    assert [v for part in parts for v, _ in part] == [k * k for k in range(10)]
    assert heard == list(range(len(shares)))
    assert {pid for part in parts for _, pid in part} - {os.getpid()}  # in forked children


def test_threads_where_processes_are_refused(monkeypatch):
    shares = parallel.shares_of(range(6), workers=2)
    parts = parallel.spread(_where, shares, workers=2, processes=False)
    assert {pid for part in parts for _, pid in part} == {os.getpid()}
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True, raising=False)
    parts = parallel.spread(_where, shares, workers=2)
    assert {pid for part in parts for _, pid in part} == {os.getpid()}


def _fails(share):
    if 3 in share:
        raise ValueError(f"share {share} failed")
    return share


def test_a_share_that_fails_raises_in_the_caller():
    with pytest.raises(ValueError, match="failed"):
        parallel.spread(_fails, [[1, 2], [3, 4]], workers=2)


def test_shares_are_contiguous_and_cover_every_item():
    for count, workers in ((0, 3), (1, 4), (10, 2), (101, 16)):
        shares = parallel.shares_of(list(range(count)), workers)
        assert [x for s in shares for x in s] == list(range(count))
        assert len(shares) <= max(1, workers * 4) and all(shares)


FORK_AFTER_CLARABEL = """
import numpy as np, cvxpy as cp
from attnsvm import parallel
from attnsvm.config import SolverConfig
from attnsvm.svm import cvx

def solve(share):
    out = []
    for seed in share:  # large enough for Clarabel's factorisation to go parallel by default
        A = np.random.default_rng(seed).normal(size=(400, 300))
        X, w = cp.Variable((30, 30)), cp.Variable(300)
        objective = cp.Minimize(cp.normNuc(X) + cp.sum_squares(A @ w - 1))
        out.append(cvx.solve(cp.Problem(objective, [X[0, 0] >= 1]), SolverConfig(tol=1e-8))[0])
    return out

print(solve([0]))  # the parent's solve: before the fix it started Clarabel's thread pool
print(parallel.spread(solve, [[1], [2]], workers=2))
"""


def test_children_solve_with_clarabel_after_the_parent_did():
    """A child forked after the parent used Clarabel hung in its factorisation (a rayon pool
    the child does not have); Clarabel runs on one thread (svm/cvx.py) and the children
    finish."""
    done = subprocess.run(
        [sys.executable, "-c", FORK_AFTER_CLARABEL], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[1] == "[['optimal'], ['optimal']]"
