"""The fused C engine against the torch engine and autograd (batch invariance of both engines:
tests/test_train.py and tests/test_determinism.py)."""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import platform
import shutil
import subprocess
import sysconfig

import numpy as np
import pytest
import torch

import attnsvm.kernel as kernel
from attnsvm.composition import DatasetConfig, Generator, RunConfig
from attnsvm.composition.identity import config_hash
from attnsvm.composition.resolve import resolve
from attnsvm.config import (
    ConfigError,
    Device,
    DType,
    Engine,
    Head,
    HeadConfig,
    Optimizer,
    OptimizerConfig,
    Parameterization,
    ParameterizationConfig,
)
from attnsvm.data.generators import make_instances
from attnsvm.experiments.engine import train_engine
from attnsvm.train import fused
from attnsvm.train.heads import LambdaHead, LinearHead, ReLUHead
from attnsvm.train.loop import init_params, train
from conftest import REPO

FIELDS = ("W", "loss", "grad_norm", "softmax_max", "softmax_min_max", "final_softmax")

FUSED_KINDS = [Parameterization.w, Parameterization.kq]  # the kernel trains W or (K,Q)


def test_extension_is_built():
    """setup.py builds attnsvm.kernel._fused at install wherever a C compiler exists (CI: one)."""
    assert kernel.library() is not None, f"rebuild: pip install -e {REPO}"


def _both(inst, head, pcfg, ocfg):
    return [train(inst, head, pcfg, ocfg, engine=e) for e in (Engine.torch, Engine.fused)]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def _corr(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    A, B = A.flatten(1), B.flatten(1)
    return (A * B).sum(1) / A.norm(dim=1) / B.norm(dim=1)


CASES = {
    "w-ngd": (DatasetConfig(n=6, T=8, d=10), ParameterizationConfig(), OptimizerConfig()),
    "kq-ngd-penalty": (
        DatasetConfig(n=6, T=8, d=10),
        ParameterizationConfig(kind=Parameterization.kq, penalty=1e-3),
        OptimizerConfig(),
    ),
    "kq-m3-gd": (
        DatasetConfig(n=4, T=5, d=6),
        ParameterizationConfig(kind=Parameterization.kq, m=3),
        OptimizerConfig(kind=Optimizer.gd, lr=0.5),
    ),
    "kq-relu": (
        DatasetConfig(n=3, T=4, d=6, generator="relu"),
        ParameterizationConfig(kind=Parameterization.kq),
        OptimizerConfig(),
    ),
    "w-relu": (DatasetConfig(n=3, T=4, d=6, generator="relu"), ParameterizationConfig(), None),
    "w-causal": (
        DatasetConfig(n=3, T=5, d=7, attention="sequential", causal=True),
        ParameterizationConfig(),
        OptimizerConfig(),
    ),
}


def _final_gap(a, b) -> torch.Tensor:
    """Per seed ||W_a - W_b|| / ||W_b|| at the last checkpoint."""
    return (a.final_W - b.final_W).flatten(1).norm(dim=1) / b.final_W.flatten(1).norm(dim=1)


@pytest.mark.parametrize("case", CASES)
def test_engines_agree(case):
    """Same math, another rounding order: agreement to rounding error at the start; later the
    engines may differ by no more than one ulp of the initialisation moves the torch engine
    itself. Smooth cases stay within 1e-9 (the linear head with W: 1e-15); a ReLU head's kinks
    can turn a last-bit difference into another path (a (K,Q) seed here: 0.03 from one ulp)."""
    ds, pcfg, ocfg = CASES[case]
    ocfg = ocfg or OptimizerConfig()
    inst = make_instances(ds, list(range(11)))  # one full group of 8 and a padded one
    head = ReLUHead(inst) if inst.V is not None else LinearHead(inst)
    t_torch, t_fused = _both(inst, head, pcfg, ocfg)
    assert t_fused.steps == t_torch.steps
    for f in FIELDS:
        a, b = getattr(t_fused, f), getattr(t_torch, f)
        assert a.shape == b.shape and a.dtype == b.dtype, f
    assert _rel(t_fused.W[:3], t_torch.W[:3]) < 1e-12
    p = init_params(pcfg, inst.seeds, ds.d, torch.float64, "cpu")
    if p.W is not None:
        p.W = p.W * (1 + 2**-52)
    else:
        p.K = p.K * (1 + 2**-52)
    t_ulp = train(inst, head, pcfg, ocfg, p, Engine.torch)
    noise = _final_gap(t_ulp, t_torch)
    gap = _final_gap(t_fused, t_torch)
    assert (gap <= torch.clamp(100 * noise, min=1e-9)).all(), (gap, noise)
    stable = noise < 1e-6  # seeds whose path rounding barely moves
    assert stable.sum() >= 8
    assert torch.equal(t_fused.selected[-1][stable], t_torch.selected[-1][stable])
    assert (_corr(t_fused.final_W, t_torch.final_W)[stable] > 1 - 1e-9).all()
    assert _rel(t_fused.final_softmax[stable], t_torch.final_softmax[stable]) < 1e-6
    if inst.mask is not None:  # hidden tokens get probability exactly 0
        assert (t_fused.final_softmax[~inst.mask] == 0).all()


@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_first_step_is_normalized_autograd_gradient(kind):
    """W(1) from the kernel = one NGD step along autograd's gradient of the logistic loss."""
    inst = make_instances(DatasetConfig(n=5, T=6, d=7), list(range(9)))
    pcfg = ParameterizationConfig(kind=kind, penalty=0.0)
    ocfg = OptimizerConfig(steps=1, checkpoint_every=1, lr=0.3)
    p0 = init_params(pcfg, inst.seeds, 7, torch.float64, "cpu")
    traj = train(inst, LinearHead(inst), pcfg, ocfg, dataclasses.replace(p0), Engine.fused)
    leaves = [p0.W] if kind == Parameterization.w else [p0.K, p0.Q]
    leaves = [t.clone().requires_grad_() for t in leaves]
    W = leaves[0] if len(leaves) == 1 else leaves[0] @ leaves[1].transpose(-1, -2)
    s = torch.softmax(torch.einsum("rntd,rde,rne->rnt", inst.X, W, inst.Z), -1)
    f = torch.einsum("rnt,rntd,rd->rn", s, inst.X, inst.v)
    loss = torch.nn.functional.softplus(-inst.Y * f).mean(-1)
    grads = torch.autograd.grad(loss.sum(), leaves)
    stepped = [
        x - 0.3 * g / g.flatten(1).norm(dim=1)[:, None, None]
        for x, g in zip(leaves, grads, strict=True)
    ]
    W1 = stepped[0] if len(stepped) == 1 else stepped[0] @ stepped[1].transpose(-1, -2)
    assert _rel(traj.W[1], W1.detach()) < 1e-12
    assert _rel(traj.loss[0], loss.detach()) < 1e-14


def test_auto_uses_fused_where_it_applies():
    assert train_engine(RunConfig()) == Engine.fused
    assert train_engine(RunConfig(dtype=DType.float32)) == Engine.torch
    relu = dict(head=HeadConfig(kind=Head.relu), dataset=DatasetConfig(generator=Generator.relu))
    assert train_engine(RunConfig(**relu)) == Engine.fused
    assert train_engine(RunConfig(head=HeadConfig(kind=Head["lambda"]))) == Engine.torch
    assert train_engine(RunConfig(engine=Engine.torch)) == Engine.torch


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        (dict(dtype=DType.float32), "dtype=float32"),
        (dict(head=HeadConfig(kind=Head["lambda"])), "head.kind=lambda"),
    ],
)
def test_fused_where_it_cannot_run_is_a_clear_error(kw, named):
    with pytest.raises(ConfigError, match=rf"engine=fused.*{named}.*auto, torch"):
        resolve(RunConfig(engine=Engine.fused, **kw))


def test_fused_on_cuda_is_refused():
    with pytest.raises(ConfigError, match="device=cuda"):
        fused.resolve_engine(Engine.fused, Device.cuda, DType.float64, Head.linear)


def test_without_the_extension_auto_falls_back_to_torch(monkeypatch):
    """An install without a C compiler still trains (torch); asking for fused says why not."""
    monkeypatch.setattr(
        kernel, "_load", lambda: (None, "attnsvm.kernel._fused was not built (test)")
    )
    assert train_engine(RunConfig()) == Engine.torch
    with pytest.raises(ConfigError, match="attnsvm.kernel._fused was not built"):
        resolve(RunConfig(engine=Engine.fused))


def _load(path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    lib.attnsvm_train_group.argtypes = fused._ARGTYPES
    return lib


def _plain_sse2_build(tmp_path) -> ctypes.CDLL:
    """attnsvm/kernel/_fused.c built with setup.py's flags for baseline x86-64, one version."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if platform.machine() != "x86_64" or cc is None:
        pytest.skip("needs an x86-64 C compiler")
    lib_path = tmp_path / "fused_sse2.so"
    subprocess.run(
        [cc, "-O3", "-std=gnu11", "-ffp-contract=off", "-fno-math-errno", "-Wno-psabi",
         "-DISA_TARGET=", "-march=x86-64", "-shared", "-fPIC",
         f"-I{sysconfig.get_paths()['include']}", str(REPO / "attnsvm" / "kernel" / "_fused.c"),
         "-o", str(lib_path)],
        check=True,
    )  # fmt: skip
    return _load(lib_path)


def test_same_bits_from_every_build(tmp_path):
    """The AVX-512 build (8 lanes), the portable build (4 lanes, AVX2 clone here) and a plain
    baseline x86-64 (SSE2) build give the same bits: exactly rounded lane-wise arithmetic, no
    FMA, the same exp, and lanes that never mix."""
    builds = {"sse2": _plain_sse2_build(tmp_path)}
    for name in kernel.BUILDS:
        spec = importlib.util.find_spec(name)
        if spec is not None and _load(spec.origin).attnsvm_cpu_supported():
            builds[name] = _load(spec.origin)
    assert len(builds) >= 2
    inst = make_instances(DatasetConfig(n=6, T=8, d=10), list(range(9)))
    for kind in FUSED_KINDS:
        pcfg, ocfg = ParameterizationConfig(kind=kind), OptimizerConfig(steps=300)
        runs = {}
        for name, lib in builds.items():
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(kernel, "library", lambda lib=lib: lib)
                runs[name] = train(inst, LinearHead(inst), pcfg, ocfg, engine=Engine.fused)
        ref = runs.pop("sse2")
        for name, run in runs.items():
            for f in FIELDS:
                assert torch.equal(getattr(run, f), getattr(ref, f)), (name, kind, f)


def test_vectorised_exp_within_one_ulp():
    """The kernel's exp against mpmath's correctly rounded one, and its special values."""
    import mpmath

    lib = kernel.library()
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [rng.uniform(-745, 709.7, 3000), rng.uniform(-1, 1, 3000), rng.uniform(-40, 0, 3000)]
    )
    special = np.array([0.0, -0.0, -np.inf, np.inf, 709.78, 710.0, -708.5, -740.0, -745.2, 1e-300])
    x = np.concatenate([x, special])
    x = np.concatenate([x, np.zeros(-len(x) % 8)])
    out = np.empty_like(x)
    lib.attnsvm_exp(
        ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_int64(len(x))
    )
    mpmath.mp.prec = 120
    ref = np.array([float(mpmath.exp(mpmath.mpf(float(v)))) for v in x])
    finite = np.isfinite(ref) & (ref > 0)
    ulps = np.abs(out[finite] - ref[finite]) / np.spacing(ref[finite])
    assert ulps.max() <= 1.0
    assert np.array_equal(out[~finite], ref[~finite])  # exp(-inf) = 0, overflow = inf, ...
    assert (out[x == 0] == 1.0).all()


@pytest.mark.parametrize("kind", FUSED_KINDS)
def test_relu_head_seed_alone_equals_in_batch(kind):
    """The ReLU head's extra loops are lane-wise too (linear head: tests/test_train.py)."""
    ds = DatasetConfig(n=3, T=4, d=6, generator="relu")
    pcfg, ocfg = ParameterizationConfig(kind=kind), OptimizerConfig(steps=500)
    big = make_instances(ds, list(range(11)))
    t_big = train(big, ReLUHead(big), pcfg, ocfg, engine=Engine.fused, threads=2)
    for r in (0, 9):
        alone = make_instances(ds, [big.seeds[r]])
        t_alone = train(alone, ReLUHead(alone), pcfg, ocfg, engine=Engine.fused)
        for f in ("W", "loss", "grad_norm", "selected"):
            assert torch.equal(getattr(t_big, f)[:, r], getattr(t_alone, f)[:, 0]), f


def test_build_can_be_forced_by_environment(monkeypatch):
    """$ATTNSVM_FUSED_BUILD names the build (e.g. the portable one on a mixed cluster)."""
    try:
        monkeypatch.setenv(kernel.BUILD_ENV, "attnsvm.kernel._fused")
        kernel._load.cache_clear()
        assert kernel.describe() == "attnsvm.kernel._fused, 4 seeds per call"
        monkeypatch.setenv(kernel.BUILD_ENV, "avx9000")
        kernel._load.cache_clear()
        with pytest.raises(
            ConfigError, match="ATTNSVM_FUSED_BUILD='avx9000'.*attnsvm.kernel._fused"
        ):
            train_engine(RunConfig())  # noqa: B018  resolved when hashed, before a job runs
    finally:
        monkeypatch.undo()
        kernel._load.cache_clear()


def test_job_hash_names_the_engine_that_trains():
    """auto and the engine it picks share results; the two engines never do."""
    auto, fused_, torch_ = (config_hash(RunConfig(engine=e)) for e in Engine)
    assert auto == fused_ != torch_
    lam = HeadConfig(kind=Head["lambda"])  # auto -> torch
    assert config_hash(RunConfig(head=lam)) == config_hash(RunConfig(head=lam, engine=Engine.torch))
    no_gd = [RunConfig(train=False, engine=e) for e in (Engine.auto, Engine.torch)]
    assert {train_engine(c) for c in no_gd} == {None}
    assert len({config_hash(c) for c in no_gd}) == 1


def test_regpath_refuses_fused():
    from attnsvm.experiments.regpath.config import RegpathRun

    with pytest.raises(ConfigError, match="engine=fused.*experiment=regpath"):
        resolve(RegpathRun(engine=Engine.fused))
    assert train_engine(RegpathRun()) == Engine.torch


def test_direct_calls_check_the_head_and_dtype():
    inst = make_instances(DatasetConfig(n=3, T=4, d=5), [0, 1])
    pcfg, ocfg = ParameterizationConfig(), OptimizerConfig(steps=5)
    with pytest.raises(ValueError, match="linear and ReLU heads .fused_values., not LambdaHead"):
        train(inst, LambdaHead(inst, 0.1), pcfg, ocfg, engine=Engine.fused)
    inst32 = make_instances(DatasetConfig(n=3, T=4, d=5), [0, 1], dtype=torch.float32)
    with pytest.raises(ValueError, match="float64"):
        train(inst32, LinearHead(inst32), pcfg, ocfg, engine=Engine.fused)
