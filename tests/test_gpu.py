"""The GPU path: ``device=cuda`` with the torch engine, float64 and float32, batched over seeds.

    python -m pytest -m gpu          # on a machine with a GPU and a CUDA build of torch

Tests marked ``gpu`` skip, with their reason, where ``torch.cuda.is_available()`` is False.
The rest run everywhere: training on torch's ``meta`` device under a mode that refuses any op
mixing a tensor of the device with one elsewhere (a tensor created without ``device=`` in the
training loop fails there as it would on CUDA), the composition errors (CUDA mocked absent or
present), float32 end to end on the CPU, and a CPU smoke of ``python -m attnsvm.bench_gpu``.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

import attnsvm
from attnsvm import metrics
from attnsvm.bench import gpu as bench_gpu
from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.composition.resolve import resolve
from attnsvm.config import ConfigError, Engine, HeadConfig, OptimizerConfig, ParameterizationConfig
from attnsvm.data import sets
from attnsvm.data.generators import make_instances, published_instance
from attnsvm.experiments import data_set_hook
from attnsvm.experiments.engine import train_engine
from attnsvm.experiments.gd.examples.maxmargin_data import key_query
from attnsvm.experiments.regpath import job as regpath
from attnsvm.experiments.regpath.config import Config, RegpathRun
from attnsvm.job import run_job
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(
    not CUDA, reason="no CUDA device (torch.cuda.is_available() is False)"
)
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, needs_cuda])]
CORR = ["corr_fro", "corr_nuc", "corr_fro_opt", "corr_nuc_opt"]
SAME = ["seed", "status", "selected", "opt", "conv_type", "saturated"]

# float32 against float64 after 2000 steps: on the CPU the corr columns of the cases below
# differ by at most 7e-8 (float32's unit roundoff is 6e-8; the stable gradient keeps the error
# from growing once the softmax saturates) and the final W's correlate to 1 - 1e-12. A GPU sums
# in other orders, so the bound allows 100x that in corr; selected tokens must not change.
F32_CORR_TOL = 1e-5
# CUDA against the CPU in float64: the GPU's exp/log and summation orders differ from the CPU's
# in the last bits, which normalized GD carries along. The same happens across CPU kernel
# levels (ATEN_CPU_CAPABILITY=default vs avx512, torch engine, 2000 steps): corr columns of
# seeds 0-7 differed by up to 2e-7 (W and (K,Q)); one (K,Q) seed of 16 (seed 10) by 4e-4.
# The tolerance is tests/test_kernel_levels.py's, for seeds 0-7.
CROSS_DEVICE_ATOL = 1e-6


# ------------------------------------------------------------ runs everywhere
class SameDevice(TorchFunctionMode):
    """Refuses an op whose tensors lie on ``device`` and elsewhere (0-dim tensors excepted, as
    CUDA accepts CPU scalars): a CPU tensor meeting a GPU one in the training loop."""

    def __init__(self, device: str = "meta"):
        super().__init__()
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = tree_flatten((args, kwargs))[0]
        kinds = {t.device.type for t in leaves if isinstance(t, torch.Tensor) and t.dim() > 0}
        if self.device in kinds and len(kinds) > 1:
            raise AssertionError(f"{func.__name__} mixes devices {sorted(kinds)}")
        return func(*args, **kwargs)


def test_the_guard_catches_a_cpu_tensor_in_a_meta_op():
    with SameDevice(), pytest.raises(AssertionError, match="mixes devices"):
        torch.matmul(torch.ones(2, 2, 2, device="meta"), torch.ones(2, 2, 2))


def _steps(**kw) -> OptimizerConfig:
    return OptimizerConfig(steps=3, checkpoint_every=2, **kw)


EXAMPLE = DatasetConfig(generator="maxmargin", example="single", n=None, T=None, d=None)
TRAINING = {
    "w": {},
    "kq": {"parameterization": ParameterizationConfig(kind="kq")},
    "kq_zeros": {"parameterization": ParameterizationConfig(kind="kq", init="zeros")},
    "w_normal": {"parameterization": ParameterizationConfig(init="normal")},
    "p_model": {
        "dataset": EXAMPLE,
        "parameterization": ParameterizationConfig(kind="p", init="published"),
        "seeds": 1,
    },
    "relu": {"dataset": DatasetConfig(generator="relu"), "head": HeadConfig(kind="relu")},
    "lambda": {
        "dataset": DatasetConfig(generator="orthonormal", T=4),
        "head": HeadConfig(kind="lambda", lam=1.0),
    },
    "train_head": {"head": HeadConfig(train=True)},
    "causal": {"dataset": DatasetConfig(attention="sequential", causal=True, n=3, T=4, d=5)},
    "self": {"dataset": DatasetConfig(attention="self")},
    "autograd": {"optimizer": _steps(gradient="autograd")},
    "exponential": {"loss": "exponential"},
    **{kind: {"optimizer": _steps(kind=kind)} for kind in ("gd", "md", "sign", "spectral")},
    **{kind: {"optimizer": _steps(kind=kind)} for kind in ("adam", "polyak")},
}


def _to_meta(inst):
    tensors = {f.name: getattr(inst, f.name) for f in dataclasses.fields(inst)}
    return dataclasses.replace(
        inst, **{k: t.to("meta") for k, t in tensors.items() if isinstance(t, torch.Tensor)}
    )


@pytest.mark.parametrize("case", list(TRAINING))
def test_training_keeps_every_tensor_on_the_device(case):
    """Every parameterization, head, optimizer and attention trains on ``meta`` with no CPU
    tensor entering an op: what would fail on CUDA fails here."""
    kw = {"optimizer": _steps(), **TRAINING[case]}
    cfg = RunConfig(engine="torch", dtype="float32", **kw)
    seeds = list(range(min(cfg.seeds, 3)))
    own = data_set_hook(sets.name_of(cfg.dataset), "instances")  # gd's own data (maxmargin)
    with SameDevice():
        inst = make_instances(cfg.dataset, seeds, dtype=torch.float32, device="meta", draw=own)
    if cfg.parameterization.kind.value == "p":  # the keys are formed on the CPU, then moved
        M = key_query(cfg.parameterization.key_query, cfg.dataset.example, cfg.dataset.d)
        cpu = make_instances(cfg.dataset, seeds, dtype=torch.float32, draw=own)
        inst = _to_meta(cpu.p_model_view(M))
    with SameDevice():
        traj = train(
            inst, make_head(cfg.head, inst), cfg.parameterization, cfg.optimizer,
            engine=Engine.torch, train_head=cfg.head.train, loss=cfg.loss,
        )  # fmt: skip
    assert traj.W.device.type == "meta" and traj.selected.device.type == "meta"


@pytest.mark.parametrize("kind", ["w", "kq"])
def test_regularization_path_keeps_every_tensor_on_the_device(kind):
    cfg = RegpathRun(
        parameterization=ParameterizationConfig(kind=kind),
        regpath=Config(points=2, steps=2),
    )
    with SameDevice():
        inst = make_instances(cfg.dataset, [0, 1], dtype=torch.float32, device="meta")
        head = make_head(cfg.head, inst)
        chain = regpath.path(inst, head, cfg)
        svm_like = type("Sol", (), {"ok": True, "W": np.eye(cfg.dataset.d)})()
        start = lambda r: regpath._svm_start(  # noqa: E731
            [svm_like] * 2, kind == "kq", inst.X, 0.1, inst.seeds, r
        )
        best = regpath._best_chain({"init": chain, "svm": regpath.path(inst, head, cfg, start)})
    assert best["W"].device.type == "meta"


def test_device_cuda_without_cuda_is_a_composition_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for make in (
        lambda: resolve(RunConfig(device="cuda")),
        lambda: attnsvm.compose(["device=cuda"]),
    ):
        with pytest.raises(ConfigError, match="device='cuda'.*CUDA is not available.*cpu"):
            make()


def test_device_cuda_picks_the_torch_engine_and_refuses_the_fused_one(monkeypatch):
    """With CUDA (mocked) ``engine=auto`` trains with torch; ``engine=fused`` names both keys."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for dtype in ("float64", "float32"):
        assert train_engine(RunConfig(device="cuda", dtype=dtype)) == Engine.torch
    with pytest.raises(ConfigError, match=r"engine=fused.*device=cuda.*auto, torch"):
        attnsvm.compose(["device=cuda", "engine=fused"])


def test_nexttoken_on_cuda_names_the_device_key(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(ConfigError, match="device=cuda is invalid for experiment=nexttoken.*cpu"):
        attnsvm.compose(["experiment=nexttoken", "dataset=nexttoken", "device=cuda"])


def torch_generator(seeds, n, T, d):
    """A user's generator returning torch tensors that need autograd (as one on a GPU would
    need ``.cpu()``): taken to the CPU before use."""
    draws = [published_instance(s, n, T, d) for s in seeds]
    X, Y, Z, v = (torch.stack([dr[k] for dr in draws]).double() for k in range(4))
    return {"X": X.requires_grad_(), "Y": Y, "Z": Z, "v": v}


def test_a_generator_may_return_torch_tensors():
    cfg = DatasetConfig(generator="callable", target="test_gpu.torch_generator")
    inst = make_instances(cfg, [0, 1], device="meta")
    assert inst.X.device.type == "meta"
    assert torch.equal(make_instances(cfg, [0, 1]).X, make_instances(DatasetConfig(), [0, 1]).X)


@pytest.mark.parametrize("parameterization", ["w", "kq"])
@pytest.mark.parametrize("device", DEVICES)
def test_float32_agrees_with_float64(device, parameterization):
    """float32 with the torch engine end to end (2000 steps, SVMs in float64 on the CPU):
    the same tokens and convergence types as float64, corr within F32_CORR_TOL."""
    pcfg = ParameterizationConfig(kind=parameterization)
    runs = {
        dtype: run_job(
            RunConfig(seeds=4, engine="torch", dtype=dtype, device=device, parameterization=pcfg)
        ).runs
        for dtype in ("float64", "float32")
    }
    r64, r32 = runs["float64"], runs["float32"]
    assert (r32.dtype == "float32").all() and (r32.train_engine == "torch").all()
    assert r32[SAME].equals(r64[SAME])
    np.testing.assert_allclose(r32[CORR], r64[CORR], rtol=0, atol=F32_CORR_TOL)
    inst = {
        dtype: make_instances(DatasetConfig(), [0, 1, 2, 3], getattr(torch, dtype), device)
        for dtype in ("float64", "float32")
    }
    W = {
        dtype: train(i, make_head(HeadConfig(), i), pcfg, OptimizerConfig(), engine=Engine.torch)
        .final_W.cpu()
        .double()
        .numpy()
        for dtype, i in inst.items()
    }
    corr = [float(metrics.corr(a, b)) for a, b in zip(W["float32"], W["float64"], strict=True)]
    assert min(corr) >= 1 - F32_CORR_TOL


def test_bench_gpu_without_cuda(tmp_path, monkeypatch):
    """No CUDA: status 2 and why; with --allow-cpu a tiny CPU smoke of the same code, status 0,
    its results file marked smoke."""
    if CUDA:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "gpu.json"
    assert bench_gpu.main(["--allow-cpu", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["smoke"] and record["device"] == "cpu" and record["gpu"] == "none"
    rows = record["throughput"]
    assert {(r["size"], r["dtype"], r["role"]) for r in rows} == {
        (s, d, role)
        for s in ("small", "large")
        for d in ("float64", "float32")
        for role in ("measured", "cpu baseline")
    }
    assert all(r["seed_steps_per_s"] > 0 for r in rows)
    acc = record["accuracy"]
    assert acc["max_abs_dcorr_fro"] < F32_CORR_TOL and acc["min_corr_w32_w64"] > 1 - F32_CORR_TOL
    if not CUDA:
        cli = [sys.executable, "-m", "attnsvm.bench.gpu"]
        done = subprocess.run(cli, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "CUDA is not available" in done.stderr
        assert "--allow-cpu" in done.stderr


# ------------------------------------------------------------ needs a GPU
@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("generator", ["random", "relu"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cuda_instances_are_the_cpu_instances(generator, dtype):
    """Drawn on the CPU draw for draw, then moved: seed s is the same instance (opt included)."""
    cfg, seeds = DatasetConfig(generator=generator), list(range(5))
    on = {dev: make_instances(cfg, seeds, getattr(torch, dtype), dev) for dev in ("cpu", "cuda")}
    assert on["cuda"].X.device.type == "cuda"
    for name in ("X", "Y", "Z", "v", "gamma", "opt"):
        assert torch.equal(getattr(on["cuda"], name).cpu(), getattr(on["cpu"], name)), name


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("parameterization", ["w", "kq"])
def test_cuda_float64_matches_the_cpu_torch_engine(parameterization):
    """A float64 job on CUDA and the same job with the CPU torch engine: the same statuses,
    tokens and convergence types, corr columns to CROSS_DEVICE_ATOL (no bit identity promised
    on CUDA)."""
    kw = dict(
        seeds=8, engine="torch", parameterization=ParameterizationConfig(kind=parameterization)
    )
    cpu = run_job(RunConfig(device="cpu", **kw)).runs
    cuda = run_job(RunConfig(device="cuda", **kw)).runs
    assert (cuda.device == "cuda").all() and (cuda.train_engine == "torch").all()
    assert cuda[SAME].equals(cpu[SAME])
    np.testing.assert_allclose(cuda[CORR], cpu[CORR], rtol=0, atol=CROSS_DEVICE_ATOL)


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cuda_results_do_not_depend_on_the_batch_size(dtype):
    """All seeds in one batch or in batches of 3: same tokens and statuses, corr to rounding
    (batchops: on CUDA products are torch.matmul, not batch-invariant bit for bit)."""
    tol = CROSS_DEVICE_ATOL if dtype == "float64" else F32_CORR_TOL
    runs = [
        run_job(RunConfig(seeds=8, batch_size=b, device="cuda", dtype=dtype, engine="torch")).runs
        for b in (8, 3)
    ]
    assert runs[0][SAME].equals(runs[1][SAME])
    np.testing.assert_allclose(runs[0][CORR], runs[1][CORR], rtol=0, atol=tol)


@pytest.mark.gpu
@needs_cuda
def test_bench_gpu_smoke_on_cuda(tmp_path):
    out = tmp_path / "gpu.json"
    assert bench_gpu.main(["--smoke", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["device"] == "cuda" and record["gpu"] != "none"
    measured = [r for r in record["throughput"] if r["role"] == "measured"]
    assert all(r["device"] == "cuda" and r["peak_gpu_mib"] > 0 for r in measured)
