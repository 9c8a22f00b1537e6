"""The p-model, the loss option, joint head training and the published max-margin examples
(docs/math.md#max-margin-token-selection-and-a-trained-head): gradients against autograd, the
relaxed SVM, and where the published examples go at float64 after the published 1000 steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attnsvm.composition import DatasetConfig, Generator, RunConfig
from attnsvm.composition.identity import config_hash
from attnsvm.composition.resolve import resolve
from attnsvm.config import (
    ConfigError,
    Gradient,
    HeadConfig,
    Init,
    Loss,
    OptimizerConfig,
    Parameterization,
    ParameterizationConfig,
    SolverConfig,
)
from attnsvm.data.generators import make_instances
from attnsvm.experiments.engine import train_engine
from attnsvm.job import run_job
from attnsvm.svm.solve import w_mm_relaxed
from attnsvm.train.heads import LinearHead
from attnsvm.train.loop import Params, _loss_and_grads, grad_v

AUTOGRAD_LOSS = {
    Loss.logistic: lambda u: F.softplus(-u),
    Loss.exponential: lambda u: torch.exp(-u),
    Loss.correlation: lambda u: -u,
}


def _p_instances(M: torch.Tensor):
    inst = make_instances(DatasetConfig(n=4, T=5, d=3), [0, 1, 2])
    return inst.p_model_view(M)


def _autograd(p, v, inst, M, loss):
    """The p-model written plainly: logits (M x_it)^T p, f_i = v^T X_i^T s_i."""
    a = torch.einsum("rntd,ed,re->rnt", inst.X, M, p)
    s = torch.softmax(a, dim=-1)
    f = torch.einsum("rnt,rntd,rd->rn", s, inst.X, v)
    return AUTOGRAD_LOSS[loss](inst.Y * f).mean(-1).sum()


@pytest.mark.parametrize("loss", list(Loss))
def test_joint_p_model_gradients_match_autograd(loss):
    M = torch.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.2, 0.0, 0.0]], dtype=torch.float64)
    inst = _p_instances(M)
    g = torch.Generator().manual_seed(3)
    p = torch.randn(inst.R, 3, dtype=torch.float64, generator=g)
    v = torch.randn(inst.R, 3, dtype=torch.float64, generator=g)
    pa, va = p.clone().requires_grad_(), v.clone().requires_grad_()
    _autograd(pa, va, inst, M, loss).backward()
    head = LinearHead(inst, v)
    value, s, grads, norms = _loss_and_grads(
        Params(p=p), inst, head, ParameterizationConfig(kind="p"), True, loss
    )
    torch.testing.assert_close(grads["p"], pa.grad, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad_v(inst, s, norms["c"]), va.grad, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(value.sum(), _autograd(p, v, inst, M, loss), rtol=1e-13, atol=0)


def test_new_keys_leave_old_hashes_and_change_new_ones():
    base = RunConfig()
    assert config_hash(RunConfig(loss=Loss.logistic)) == config_hash(base)
    assert config_hash(RunConfig(loss=Loss.exponential)) != config_hash(base)
    assert train_engine(RunConfig(loss=Loss.exponential)).value == "torch"
    assert train_engine(RunConfig(parameterization=ParameterizationConfig(kind="p"))).value == (
        "torch"
    )


def _example(example: str, seeds: int, **kw) -> RunConfig:
    return RunConfig(
        dataset=DatasetConfig(
            generator=Generator.maxmargin, example=example, n=None, T=None, d=None
        ),
        parameterization=ParameterizationConfig(kind=Parameterization.p, init=Init.published),
        optimizer=OptimizerConfig(steps=1000, eps=0.0, checkpoint_every=100),
        seeds=seeds,
        **kw,
    )


def _final_p(result) -> np.ndarray:
    last = result.trajectory.groupby("seed").tail(1).sort_values("seed")
    return last[[c for c in ("p0", "p1", "p2") if c in last]].to_numpy()


def _cos(a, b) -> np.ndarray:
    return a @ b / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b))


def test_single_examples_align_with_the_analytic_svms():
    """single: every published start selects token 0 and p -> (-0.1, 1, 0)/1.01; single_local:
    the starts c = -1, -1.5 select token 1, locally optimal, and p -> (1, 0, 0)."""
    glob = run_job(_example("single", 6))
    assert (glob.runs["selected"] == "0").all()
    assert (_cos(_final_p(glob), np.array([-0.1, 1.0, 0.0])) > 0.999).all()
    assert (glob.runs["corr_p_mm"] > 0.999).all()
    local = run_job(_example("single_local", 6))
    runs = local.runs.sort_values("seed")
    assert list(runs["selected"]) == ["0", "0", "0", "0", "1", "1"]
    assert list(runs["conv_type"]) == ["global"] * 4 + ["local"] * 2
    assert (_cos(_final_p(local)[4:], np.array([1.0, 0.0, 0.0])) > 0.999).all()


def test_joint_training_aligns_p_with_the_relaxed_svm_and_v_with_v_mm():
    joint = run_job(_example("joint", 1, head=HeadConfig(train=True))).runs.iloc[0]
    assert joint["selected"] == "1,1,1"
    assert joint["corr_v_mm"] > 0.9999 and joint["corr_fro"] > 0.9999
    relaxed = run_job(_example("joint_relaxed", 1, head=HeadConfig(train=True))).runs.iloc[0]
    assert relaxed["corr_v_mm"] > 0.9999 and relaxed["corr_relaxed"] > 0.9999
    assert relaxed["corr_fro"] < 0.99  # the ordinary p-SVM is not where p goes


def test_relaxed_svm_of_joint_relaxed_is_e1():
    X = np.array([[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]], [[0.0, 0.0], [0.5, 1.5]]])
    Z = np.tile([1.0, 0.0], (3, 1))
    alpha = np.ones(3, dtype=int)
    sol = w_mm_relaxed(X, Z, alpha, np.array([True, True, False]), SolverConfig())
    np.testing.assert_allclose(sol.W[:, 0], [1.0, 0.0], atol=1e-10)
    full = w_mm_relaxed(X, Z, alpha, np.array([True, True, True]), SolverConfig())
    assert np.linalg.norm(full.W) > 1.01  # the ordinary SVM needs a larger p


@pytest.mark.parametrize("published_form", [False, True])
def test_p_model_rows_do_not_depend_on_batch_size(published_form):
    kw = {"dtype": "float32"} if published_form else {}
    rows = []
    for batch_size in (6, 4):
        cfg = _example("multi", 6, batch_size=batch_size, **kw)
        if published_form:
            cfg.optimizer.gradient, cfg.optimizer.eps = Gradient.autograd, 1e-9
        rows.append(run_job(cfg).runs.sort_values("seed").reset_index(drop=True))
    cols = ["corr_fro", "w_norm", "loss", "selected"]
    assert rows[0][cols].equals(rows[1][cols])


def test_too_many_seeds_for_an_example_fail_at_composition():
    with pytest.raises(ConfigError, match="seed \\+ seeds <= 11"):
        resolve(_example("loss", 12))


@pytest.mark.slow
def test_maxmargin_sweep_and_its_figure_command(tmp_path):
    """Two examples of +sweeps=maxmargin, both dtypes, 300 steps: the float32 arm (published
    form) freezes at a smaller ||p|| than float64; the figure command writes its table."""
    import subprocess
    import sys

    from cli_helpers import REPO, run_cli

    out = run_cli(
        "+sweeps=maxmargin", "dataset.example=single,joint_relaxed", "loss=logistic",
        "optimizer.steps=300", "hydra/launcher=basic", f"hydra.sweep.dir={tmp_path}",
        multirun=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:]
    fig = subprocess.run(
        [sys.executable, "-m", "attnsvm.experiments.gd.examples.maxmargin", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert fig.returncode == 0, fig.stderr[-3000:]
    table = pd.read_csv(tmp_path / "summary" / "maxmargin_table.csv").set_index(
        ["example", "dtype"]
    )
    assert set(table.index) == {
        (e, t) for e in ("single", "joint_relaxed") for t in ("float64", "float32")
    }
    assert table.loc[("single", "float64"), "seeds"] == 6
    assert (
        table.loc[("single", "float32"), "w_norm_mean"]
        < table.loc[("single", "float64"), "w_norm_mean"]
    )
    assert table.loc[("joint_relaxed", "float64"), "corr_relaxed_min"] > 0.999
    assert (tmp_path / "summary" / "maxmargin.png").stat().st_size > 0


def test_digit_patches_tile_the_image_and_a_small_job_runs():
    from attnsvm.experiments.gd.examples.digits_data import _digits, tokens

    images = _digits()[0][:3]
    x = tokens(images, 4, positions=True)  # (3, 4, 18)
    assert x.shape == (3, 4, 18)
    np.testing.assert_array_equal(x[:, 1, :16].reshape(3, 4, 4), images[:, :4, 4:])
    np.testing.assert_array_equal(
        x[0, :, 16:], [[-0.5, -0.5], [-0.5, 0.5], [0.5, -0.5], [0.5, 0.5]]
    )
    cfg = RunConfig(
        dataset=DatasetConfig(generator=Generator.digits, n=10, T=None, d=None),
        parameterization=ParameterizationConfig(kind=Parameterization.p),
        optimizer=OptimizerConfig(steps=500, eps=0.0, checkpoint_every=100),
        seeds=2,
    )
    runs = run_job(cfg).runs
    assert (runs.n == 10).all() and (runs["T"] == 4).all() and (runs.d == 16).all()
    assert set(runs["share_selected_opt"]) <= set(np.arange(11) / 10)
    assert (runs.corr_p_mm > 0.9).all()  # the SVM at the selected patches exists and is near
