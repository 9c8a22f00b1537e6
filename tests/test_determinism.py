"""Same config and seed -> bit-identical rows, whatever the batch size or the seeds batched
with it, through the whole job (data, GD, SVMs, metrics; attnsvm/kernel/batchops.py makes the tensor
code batch-invariant). Launchers and worker counts: tests/test_launchers.py."""

from __future__ import annotations

import pytest

from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.config import Engine, OptimizerConfig, Parameterization, ParameterizationConfig
from attnsvm.job import run_job
from bits import assert_frames_identical
from cli_helpers import timing_columns


def _job(kind: Parameterization, **kw):
    cfg = RunConfig(
        dataset=DatasetConfig(n=5, T=6, d=8),
        parameterization=ParameterizationConfig(kind=kind),
        optimizer=OptimizerConfig(steps=150, checkpoint_every=50),
        **kw,
    )
    res = run_job(cfg)
    return res.runs.drop(columns=timing_columns(res.runs)), res.trajectory


ENGINES = [  # the fused kernel trains W or (K,Q); the p-model runs on torch
    (kind, engine)
    for kind in Parameterization
    for engine in (Engine.torch, Engine.fused)
    if engine == Engine.torch or kind != Parameterization.p
]


@pytest.mark.parametrize("kind,engine", ENGINES)
def test_rows_do_not_depend_on_batch_size(kind, engine):
    runs, traj = _job(kind, seeds=9, batch_size=1000, engine=engine)
    for batch_size, threads in ((1, 1), (7, 2)):
        other_runs, other_traj = _job(
            kind, seeds=9, batch_size=batch_size, threads=threads, engine=engine
        )
        what = f"{kind.value} {engine.value}, batch_size={batch_size}, threads={threads}"
        assert_frames_identical(other_runs, runs, f"runs ({what})")
        assert_frames_identical(other_traj, traj, f"trajectory ({what})")


def test_a_seed_alone_gives_its_row_in_a_batch():
    runs, traj = _job(Parameterization.w, seeds=9)
    alone_runs, alone_traj = _job(Parameterization.w, seed=4, seeds=1)
    cols = [c for c in runs.columns if c != "config_hash"]  # the hash covers seed and seeds
    assert_frames_identical(
        alone_runs[cols], runs[runs.seed == 4][cols].reset_index(drop=True), "runs, seed 4 alone"
    )
    cols = [c for c in traj.columns if c != "config_hash"]
    assert_frames_identical(
        alone_traj[cols],
        traj[traj.seed == 4][cols].reset_index(drop=True),
        "trajectory, seed 4 alone",
    )


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("masked", [False, True])  # sequential attention: masked problems
def test_svm_sets_solved_in_one_call_have_each_sets_bits(threads, masked):
    """gd solves its SVMs at opt and at the selected tokens as one set of problems
    (solve_svm_sets): each answer has the bits of its own set's call."""
    import numpy as np

    from attnsvm.data.generators import make_instances
    from attnsvm.experiments.gd.svms import solve_svm_sets, solve_svms

    dataset = DatasetConfig(n=5, T=6, d=8, attention="sequential" if masked else "cross")
    cfg = RunConfig(dataset=dataset, seeds=24, threads=threads)
    inst = make_instances(cfg.dataset, list(range(24)))
    assert (inst.mask is not None) == masked
    opt = inst.opt.numpy()
    other = {r: np.roll(opt[r], 1) for r in range(0, 24, 3)}  # other tokens for some seeds
    together = solve_svm_sets(cfg, inst, [dict(enumerate(opt)), other])
    apart = [solve_svms(cfg, inst, dict(enumerate(opt))), solve_svms(cfg, inst, other)]
    for got, want in zip(together, apart, strict=True):
        assert list(got) == list(want)
        for r in want:
            for name, sol in want[r].items():
                mine = got[r][name]
                assert (mine.status, mine.rank) == (sol.status, sol.rank), (r, name)
                assert np.array_equal(mine.W, sol.W), (r, name)  # None for both, or the bits
                assert np.array_equal(mine.margins, sol.margins), (r, name)  # unmasked with alpha
