"""The fused training engine: whole trajectories in one C call per group of seeds (CPU).

Linear and ReLU heads (``engine=auto`` picks it for them in float64 on the CPU); the lambda head,
float32 and CUDA train with torch (``attnsvm.train.loop``).

``attnsvm/kernel/_fused.c`` trains 4 or 8 seeds per call (the CPU's vector width) with every array
seed-last, so each formula is one SIMD operation across seeds; this module lays the batch out
that way, pads the last
group with copies of a real seed (every group is full, so every seed runs the same code), calls
the kernel through ctypes (which releases the GIL, so ``threads`` groups run at once) and puts
the checkpoints back into a ``Trajectory``. Same config and seed give the same bits whatever
the batch size or thread count; the torch engine agrees to rounding error (tests/test_fused.py).

    traj = train_fused(inst, head, pcfg, ocfg, params=None, threads=1)
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

import attnsvm.kernel as kernel
from attnsvm.config.enums import (
    Optimizer,
    Parameterization,
)
from attnsvm.config.schema import OptimizerConfig, ParameterizationConfig
from attnsvm.data.generators import Instances
from attnsvm.kernel import _ARGTYPES, BUILD_ENV, BUILDS, describe  # noqa: F401
from attnsvm.train.engine_choice import resolve_engine  # noqa: F401  (its home before)
from attnsvm.train.state import Params, Trajectory, checkpoint_steps, init_params

FIRST_CALL_STEPS = 32  # with a progress reporter: the first kernel call, which times the kernel
CALL_SECONDS = 0.5  # ... and the length of the later ones


def _seed_last(a: np.ndarray, groups: int, L: int) -> np.ndarray:
    """(groups * L, ...) -> (groups, ..., L) contiguous: seed l of group g is [g, ..., l]."""
    a = a.reshape(groups, L, *a.shape[1:])
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def _seed_first(a: np.ndarray, R: int) -> np.ndarray:
    """(groups, C, ..., L) -> (C, R, ...): the inverse of ``_seed_last`` with a leading C axis."""
    a = np.moveaxis(a, -1, 1)  # (groups, L, C, ...)
    a = a.reshape(-1, *a.shape[2:])[:R]  # (R, C, ...)
    return np.ascontiguousarray(np.moveaxis(a, 0, 1))


def _kernel_for(inst: Instances, head) -> ctypes.CDLL:
    """The kernel build, once it is clear that it can train this batch with this head."""
    lib = kernel.library()
    if lib is None:
        raise RuntimeError(f"engine=fused: {kernel._load()[1]}")
    if not hasattr(head, "fused_values"):
        name = type(head).__name__
        raise ValueError(f"engine=fused trains linear and ReLU heads (fused_values), not {name}")
    X_dev = inst.X.device
    if inst.X.dtype != torch.float64 or X_dev.type != "cpu":
        raise ValueError(f"engine=fused needs float64 on the CPU, not {inst.X.dtype} on {X_dev}")
    return lib


def _inputs(inst: Instances, head, p: Params, kq: bool, groups: int, L: int):
    """The kernel's inputs seed-last, in its argument order (X, Y, Z, token values, visible,
    W, K, Q; the unused parameterization zeros), and r, the ReLU head's width (0: linear)."""
    R, n, T, d = inst.X.shape
    pad = np.minimum(np.arange(groups * L), R - 1)  # the last group repeats the last seed

    def arr(t):
        return _seed_last(t.detach().numpy()[pad], groups, L)  # float64 CPU, checked before

    token_values, relu = head.fused_values()  # V^T x_it rows (ReLU head), or v^T x_it
    X, Y, Z = (arr(t) for t in (inst.X, inst.Y, inst.Z))
    values = arr(token_values)
    r = token_values.shape[-1] if relu else 0
    mask = inst.mask if inst.mask is not None else torch.ones(R, n, T, dtype=torch.bool)
    visible = arr(mask.to(torch.float64))
    if kq:
        K, Q = arr(p.K), arr(p.Q)
        W = np.zeros((groups, d, d, L))
    else:
        W = arr(p.W)
        K = Q = np.zeros((groups, d, 1, L))
    return (X, Y, Z, values, visible, W, K, Q), r


def _records(groups: int, C: int, n: int, T: int, d: int, L: int) -> dict[str, np.ndarray]:
    """The arrays the kernel writes its C checkpoints into, seed-last, in its argument order."""
    return {
        "W": np.empty((groups, C, d, d, L)),
        **{k: np.empty((groups, C, L)) for k in ("loss", "gnorm", "smax", "sminmax")},
        "sel": np.empty((groups, C, n, L), dtype=np.int64),
        "final_s": np.empty((groups, n, T, L)),
    }


def _for_each_group(run_group, groups: int, threads: int) -> None:
    """``run_group`` on every group, on ``threads`` threads (the kernel releases the GIL)."""
    if threads > 1 and groups > 1:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(run_group, range(groups)))
    else:
        for g in range(groups):
            run_group(g)


def _trajectory(steps: np.ndarray, rec: dict[str, np.ndarray], R: int) -> Trajectory:
    """The kernel's records seed-first again, as the ``Trajectory`` the torch engine returns."""

    def back(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(_seed_first(a, R))

    return Trajectory(
        steps=steps.tolist(),
        W=back(rec["W"]),
        loss=back(rec["loss"]),
        grad_norm=back(rec["gnorm"]),
        softmax_max=back(rec["smax"]),
        softmax_min_max=back(rec["sminmax"]),
        selected=back(rec["sel"]),
        final_softmax=back(rec["final_s"][:, None])[0],  # as a single checkpoint
    )


def train_fused(
    inst: Instances,
    head,
    pcfg: ParameterizationConfig,
    ocfg: OptimizerConfig,
    params: Params | None = None,
    threads: int = 1,
    on_steps: Callable[[int, int], None] | None = None,
) -> Trajectory:
    """``attnsvm.train.loop.train`` for the linear or ReLU head, by the C kernel; same checkpoints.

    With ``on_steps(seeds, steps)`` (``attnsvm.progress``) each group trains in several kernel
    calls of about ``CALL_SECONDS``, ending at checkpoints, and reports after each: the same
    bits (the kernel's state is the parameters it updates in place), one extra gradient per
    call. Without it, one call per group."""
    lib = _kernel_for(inst, head)
    R, n, T, d = inst.X.shape
    L = lib.attnsvm_lanes()
    groups = -(-R // L)
    p = params or init_params(pcfg, inst.seeds, d, inst.X.dtype, inst.X.device)
    kq = pcfg.kind == Parameterization.kq
    ins, r = _inputs(inst, head, p, kq, groups, L)
    m = ins[6].shape[2]  # K is (groups, d, m, L); m = 1 for W
    ckpts = np.asarray(checkpoint_steps(ocfg.steps, ocfg.checkpoint_every), dtype=np.int64)
    C = len(ckpts)
    rec = _records(groups, C, n, T, d, L)
    if ocfg.kind not in (Optimizer.ngd, Optimizer.gd):
        raise ValueError(f"engine=fused trains with ngd or gd, not optimizer.kind={ocfg.kind}")
    ngd = ocfg.kind == Optimizer.ngd

    def call(g: int, c0: int, c1: int) -> None:
        """Steps ckpts[c0 - 1] (0 if c0 = 0) to ckpts[c1 - 1], recording checkpoints c0..c1-1;
        the kernel updates the group's W (K, Q) in ``ins`` in place, so calls continue one
        another bit for bit."""
        k0 = int(ckpts[c0 - 1]) if c0 else 0
        rel = np.ascontiguousarray(ckpts[c0:c1] - k0)
        ptrs = [a[g].ctypes.data for a in ins]
        *per_ckpt, final_s = rec.values()
        outs = [a[g, c0].ctypes.data for a in per_ckpt] + [final_s[g].ctypes.data]
        status = lib.attnsvm_train_group(
            n, T, d, m, r, *ptrs, int(kq), pcfg.penalty, int(ngd), ocfg.lr, ocfg.eps,
            int(ckpts[c1 - 1]) - k0, rel.ctypes.data, c1 - c0, *outs,
        )  # fmt: skip
        if status != 0:
            raise MemoryError("attnsvm.kernel._fused: no memory for the kernel's scratch arrays")

    def run_group(g: int) -> None:
        if on_steps is None:
            return call(g, 0, C)
        _call_in_parts(lambda c0, c1: call(g, c0, c1), ckpts, min(L, R - g * L), on_steps)

    _for_each_group(run_group, groups, threads)
    return _trajectory(ckpts, rec, R)


def _call_in_parts(call, ckpts: np.ndarray, seeds: int, on_steps) -> None:
    """One group's run as kernel calls ``call(c0, c1)`` of about CALL_SECONDS each, every one
    ending at a checkpoint, telling ``on_steps(seeds, steps)`` after each."""
    C, c0, size = len(ckpts), 0, FIRST_CALL_STEPS
    while c0 < C:
        k0 = int(ckpts[c0 - 1]) if c0 else 0
        c1 = min(int(np.searchsorted(ckpts, k0 + size)), C - 1) + 1  # ends at a checkpoint
        t0 = time.perf_counter()
        call(c0, c1)
        spent = time.perf_counter() - t0
        done = int(ckpts[c1 - 1]) - k0
        on_steps(seeds, done)
        size = max(int(done * CALL_SECONDS / max(spent, 1e-6)), 1)
        c0 = c1
