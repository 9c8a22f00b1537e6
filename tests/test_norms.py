"""SVM norms as a registry (attnsvm/svm/norms.py): built-ins and a user's plug-in are solved,
checked and reported the same way."""

import numpy as np
import pytest

import attnsvm
from attnsvm.composition import RunConfig
from attnsvm.composition.resolve import resolve
from attnsvm.config import ConfigError, SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.svm import norms
from attnsvm.svm import solve as svm


def test_frobenius_always_first_and_kq_always_measured_against_nuclear():
    assert attnsvm.compose([]).solver.norms == ["fro", "nuc"]
    assert attnsvm.compose(["solver.norms=[nuc]"]).solver.norms == ["fro", "nuc"]
    assert attnsvm.compose(["solver.norms=[fro]"]).solver.norms == ["fro"]
    kq = attnsvm.compose(["solver.norms=[fro]", "parameterization=kq"])
    assert kq.solver.norms == ["fro", "nuc"]


def test_default_norms_keep_the_job_hash():
    a = attnsvm.compose(["seeds=2"])
    b = attnsvm.compose(["seeds=2", "solver.norms=[fro,nuc]"])
    c = attnsvm.compose(["seeds=2", "solver.norms=[fro]"])
    from attnsvm.composition.identity import config_hash

    assert config_hash(a) == config_hash(b) != config_hash(c)


def test_fro_only_job_has_no_nuclear_columns():
    runs = attnsvm.run_job(attnsvm.compose(["seeds=2", "solver.norms=[fro]"])).runs
    assert "corr_fro" in runs and not any("nuc" in c for c in runs.columns)


def test_plugin_norm_is_feasible_and_no_larger_than_the_frobenius_solution_in_its_norm():
    cfg = attnsvm.compose(["seeds=3", "dataset.d=4", "solver.norms=[fro,nuc,norm_example.make]"])
    res = attnsvm.run_job(cfg)
    runs = res.runs
    for col in ("corr_l1ex", "corr_l1ex_opt", "rank_l1ex", "svm_status_l1ex", "norm_l1ex"):
        assert col in runs, col
    assert "corr_l1ex" in res.trajectory
    inst = make_instances(cfg.dataset, cfg.seed_list)
    for r, row in runs.iterrows():
        X, Z, opt = inst.X[r].numpy(), inst.Z[r].numpy(), inst.opt[r].numpy()
        fro = svm.w_mm(X, Z, opt, cfg.solver)
        if not fro.ok:
            assert row.svm_status_l1ex == "infeasible"
            continue
        l1 = norms.make_norm("norm_example.make", cfg.solver).solve([(X, Z, opt)], cfg.solver)[0]
        assert svm.margins_of(l1.W, X, Z, opt).min() >= 1 - 1e-6
        # W^mm_fro is feasible for the l1 problem, so the l1 optimum is at most its l1 norm
        assert row.norm_l1ex <= np.abs(fro.W).sum() * (1 + 1e-6)
        assert row.norm_l1ex == pytest.approx(np.abs(l1.W).sum(), rel=1e-5)


def test_a_plugin_solution_that_violates_the_constraints_is_not_reported_as_a_direction():
    runs = attnsvm.run_job(
        attnsvm.compose(["seeds=2", "train=false", "solver.norms=[fro,norm_example.make_broken]"])
    ).runs
    feasible = runs[runs.feasible]
    assert len(feasible) and set(feasible.svm_status_broken) == {"infeasible"}
    assert feasible.reason.str.contains(r"W\^mm\[broken\] at opt: min margin").all()
    assert feasible.norm_broken.isna().all()


def test_plugin_norm_needs_a_name():
    cfg = attnsvm.compose(["seeds=1", "solver.norms=[fro,norm_example.make_nameless]"])
    with pytest.raises(ConfigError, match="without a valid `name`"):
        norms.make_norms(cfg.solver)


def test_unknown_norm_fails_at_composition_listing_the_built_ins():
    with pytest.raises(ConfigError, match=r"solver.norms='frob'.*accepted values are fro, nuc"):
        resolve(RunConfig(solver=SolverConfig(norms=["frob"])))


def test_a_plugin_norms_columns_are_aggregated(tmp_path):
    from attnsvm.results.aggregate import summarize

    runs = attnsvm.run_job(
        attnsvm.compose(["seeds=3", "dataset.d=4", "solver.norms=[fro,nuc,norm_example.make]"])
    ).runs
    summary = summarize(runs, ["d"])
    for col in ("corr_l1ex_mean", "corr_l1ex_opt_mean", "rank_l1ex_mean", "norm_l1ex_mean"):
        assert col in summary, col
    feasible = runs[runs.feasible]
    assert summary.norm_l1ex_count.iloc[0] == len(feasible)
    assert summary.corr_l1ex_mean.iloc[0] == pytest.approx(runs.corr_l1ex.mean())
