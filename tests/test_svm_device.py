"""The SVM stage on the job's device: the batched Frobenius and nuclear solvers take
``device``, make every tensor there and split a GPU batch into chunks its libraries accept.

    python -m pytest tests/test_svm_device.py          # the CPU checks; -m gpu adds CUDA's

Everywhere: the chunked route gives the unchunked bits (each instance's answer is independent
of its batch mates on the CPU), and no solver makes a tensor without naming its device (what
would put a CPU tensor into a GPU op). On CUDA: the SVMs of a batch agree with the CPU's,
feasibility, statuses and directions, also where many instances are infeasible (d = 2, 3)
and at a size whose constraints the CPU solves one instance at a time.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

from attnsvm import metrics
from attnsvm.composition import DatasetConfig
from attnsvm.config import SolverConfig
from attnsvm.data.generators import make_instances
from attnsvm.svm import device_batch, fro_batch, norms, nuclear_ipm
from attnsvm.svm import solve as svm

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device (torch.cuda.is_available())")
FACTORIES = {"zeros", "ones", "eye", "full", "empty", "arange", "as_tensor", "tensor", "rand"}


def problems(n: int, T: int, d: int, seeds: int, first: int = 0) -> list[tuple]:
    """(X, Z, opt) of ``seeds`` random instances, float64 on the CPU."""
    inst = make_instances(DatasetConfig(n=n, T=T, d=d), list(range(first, first + seeds)))
    X, Z, opt = (t.double().numpy() if t.is_floating_point() else t.numpy()
                 for t in (inst.X, inst.Z, inst.opt))  # fmt: skip
    return [(X[r], Z[r], opt[r]) for r in range(seeds)]


def reduced(probs) -> tuple:
    """The nuclear interior point's inputs (a, b, rows) of feasible ``probs`` of one shape."""
    parts = []
    for X, Z, alpha in probs:
        dx, _, ids = svm.constraints(X, Z, alpha)
        U, V = svm._reduced_basis(dx), svm._reduced_basis(Z)
        parts.append((dx @ U, Z @ V, ids[:, 0]))
    shapes = {(a.shape, b.shape) for a, b, _ in parts}
    parts = [p for p in parts if (p[0].shape, p[1].shape) == max(shapes)]
    return tuple(np.stack([p[c] for p in parts]) for c in range(3))


class NamedDevice(TorchFunctionMode):
    """Refuses a tensor factory called without ``device=``: on a GPU it would make a CPU
    tensor that the next op mixes with the GPU's."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") in FACTORIES and "device" not in kwargs:
            raise AssertionError(f"torch.{func.__name__} without device=")
        return func(*args, **kwargs)


def test_the_guard_catches_a_factory_without_device():
    with NamedDevice(), pytest.raises(AssertionError, match="torch.eye without device"):
        torch.eye(3)


def test_every_solver_tensor_names_its_device():
    """The Frobenius batch and the nuclear interior point (the GPU's route) make every tensor
    on the given device."""
    probs = problems(6, 8, 10, 12)
    dx, zq, _ = zip(*(svm.constraints(*p) for p in probs), strict=True)
    a, b, rows = reduced(probs)
    with NamedDevice():
        _, ok = fro_batch.fro_svm_batch(np.stack(dx), np.stack(zq), "cpu")
        A, Bd, R = (torch.as_tensor(t, device="cpu") for t in (a, b, rows))
        _, status, _ = nuclear_ipm._on_device(A.double(), Bd.double(), R, 1e-10, 100, None)
    assert ok.all() and status == ["optimal"] * len(a)


def test_chunks_give_the_bits_of_one_batch(monkeypatch):
    """A GPU batch split into chunks of 5: on the CPU the same bits as one call."""
    probs = problems(6, 8, 10, 23)
    dx, zq, _ = (np.stack(t) for t in zip(*(svm.constraints(*p) for p in probs), strict=True))
    a, b, rows = reduced(probs)
    whole = fro_batch.fro_svm_batch(dx, zq), nuclear_ipm.nuclear_svm_batch(a, b, rows)
    monkeypatch.setattr(fro_batch, "per_call", lambda device, size, count: 5)
    monkeypatch.setattr(nuclear_ipm, "per_call", lambda device, size, count: 5)
    A, Bd, R = (torch.as_tensor(t) for t in (a, b, rows))
    parts = (
        fro_batch.fro_svm_batch(dx, zq, "cpu"),
        nuclear_ipm._on_device(A, Bd, R, 1e-10, 100, None),
    )
    for got, want in zip(parts, whole, strict=True):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_chunk_sizes_fit_the_gpu():
    assert fro_batch.chunk(42 * 42) == fro_batch.GPU_BATCH  # (6,8,10): the batch cap
    assert fro_batch.chunk(960 * 960) == fro_batch.GPU_ENTRIES // (960 * 960)  # (64,16,64)
    assert fro_batch.chunk(10**12) == 1
    assert fro_batch.per_call("cpu", 10**12, 7) == 7


def test_batched_factors_are_the_constraints_in_order():
    probs = problems(6, 8, 10, 5)
    X, Z, alpha = device_batch.stacked(probs, list(range(len(probs))), "cpu")
    dx, zq, rows = device_batch.factors(X, Z, alpha)
    for k, p in enumerate(probs):
        want_dx, want_zq, ids = svm.constraints(*p)
        np.testing.assert_array_equal(dx[k].numpy(), want_dx)
        np.testing.assert_array_equal(zq[k].numpy(), want_zq)
        np.testing.assert_array_equal(rows.numpy(), ids[:, 0])


@pytest.mark.parametrize("d", [2, 3, 10])
def test_the_gpu_route_on_the_cpu_agrees_with_the_cpu_route(d):
    """device_batch (factors, bases, solves and checks as batched tensor code), run on CPU
    tensors: every instance it certifies is the CPU route's answer (status optimal, the same
    direction, margins and rank); at d = 10 it certifies every feasible instance."""
    probs, cfg = problems(6, 8, d, 60, first=100), SolverConfig()
    want = norms.solve_all(norms.make_norms(cfg), probs, cfg, "cpu")
    feasible = [k for k, w in enumerate(want) if w["fro"].ok]
    on_feasible = norms._on_device([probs[k] for k in feasible], cfg, "cpu", "nuc")
    got = {
        "fro": dict(enumerate(norms._on_device(probs, cfg, "cpu", "fro"))),
        "nuc": dict(zip(feasible, on_feasible, strict=True)),
    }
    for name, sols in got.items():
        certified = {k: sol for k, sol in sols.items() if sol is not None}
        if d == 10:
            assert set(certified) == set(feasible), name
        for k, sol in certified.items():
            ref = want[k][name]
            assert ref.status == "optimal" and sol.path == "batched"
            assert 1 - metrics.corr(sol.W, ref.W) <= 1e-9, (name, k)
            assert sol.rank == ref.rank
            tol = 1e-6 if name == "fro" else 1e-4  # the interior point: to solver.tol in gap
            np.testing.assert_allclose(sol.margins, ref.margins, rtol=tol, atol=tol)


def _agree(cpu: list[dict], gpu: list[dict]) -> None:
    for want, got in zip(cpu, gpu, strict=True):
        for name, sol in want.items():
            assert got[name].status == sol.status, (name, sol.reason, got[name].reason)
            if sol.ok:
                assert 1 - metrics.corr(got[name].W, sol.W) <= 1e-9
                assert got[name].rank == sol.rank


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("d", [2, 3, 10])
def test_svms_on_cuda_are_the_cpu_svms(d):
    """200 instances at (6, 8, d): statuses (many infeasible at d = 2, 3), ranks and
    directions of W^mm and W^mm_* on CUDA as on the CPU; the batched path certifies them."""
    probs, cfg = problems(6, 8, d, 200), SolverConfig()
    cpu = norms.solve_all(norms.make_norms(cfg), probs, cfg, "cpu")
    gpu = norms.solve_all(norms.make_norms(cfg), probs, cfg, "cuda")
    _agree(cpu, gpu)
    if d == 10:  # where no instance is near-degenerate the GPU batch certifies every one
        assert all(s["fro"].path == fro_batch.BATCHED for s in gpu)


@pytest.mark.gpu
@needs_cuda
def test_large_svms_on_cuda_are_batched():
    """(64, 16, 64): 960 constraints, which the CPU solves one instance at a time; CUDA
    batches them, with the same answers."""
    probs, cfg = problems(64, 16, 64, 4), SolverConfig()
    cpu = norms.solve_all(norms.make_norms(cfg), probs, cfg, "cpu")
    gpu = norms.solve_all(norms.make_norms(cfg), probs, cfg, "cuda")
    _agree(cpu, gpu)
    assert all(s["fro"].path == fro_batch.BATCHED for s in gpu)


def test_bench_gpu_job_without_cuda(tmp_path, monkeypatch):
    """``python -m attnsvm.bench.gpu_job``: status 2 without CUDA; with --allow-cpu a smoke of
    the in-process stages whose seconds add up to the job's."""
    from attnsvm.bench import gpu_job

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_job.main([]) == 2
    out = tmp_path / "job.json"
    assert (
        gpu_job.main(["--allow-cpu", "--parts", "stages", "--threads", "1", "--out", str(out)]) == 0
    )
    record = json.loads(out.read_text())
    stages = record["stages"]
    assert record["smoke"] and record["device"] == "cpu" and stages["seeds"] == 32
    parts = sum(v for k, v in stages.items() if k.endswith("_s") and k != "job_s")
    assert {"training_s", "svms_s", "analysis_s"} <= set(stages)
    assert 0.5 * stages["job_s"] <= parts <= stages["job_s"] * 1.01


def test_a_gpu_routine_that_gives_up_leaves_its_chunk_to_the_reference_path(monkeypatch):
    """cuSOLVER's batched eigensolver raised on an ill-conditioned iterate (an H200, 10^5
    seeds) and took the job down: now the chunk's instances are left uncertified (None) and
    ``_rest`` solves them by the CPU routes."""
    probs, cfg = problems(6, 8, 10, 6), SolverConfig()

    def gives_up(*args):
        raise torch.linalg.LinAlgError("linalg.eigh: failed to converge")

    monkeypatch.setattr(fro_batch, "solve_tensors", gives_up)
    monkeypatch.setattr(nuclear_ipm, "solve_tensors", gives_up)
    assert norms._on_device(probs, cfg, "cpu", "fro") == [None] * 6
    assert norms._on_device(probs, cfg, "cpu", "nuc") == [None] * 6
    monkeypatch.undo()
    rest = norms._rest([None] * 6, lambda ks: svm.w_mm_batch([probs[k] for k in ks], cfg))
    assert [s.status for s in rest] == ["optimal"] * 6
