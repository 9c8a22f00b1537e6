"""Which engine trains a job: the fused C kernel where it applies, else torch.

Composition and a sweep's planning call it for every job (the job hash holds the engine), so it
imports neither torch nor the kernel's Python side: a sweep's own process, which trains
nothing, never loads torch (its import and teardown were seconds of every sweep).
"""

from __future__ import annotations

import attnsvm.kernel as kernel
from attnsvm.config.checks import ConfigError
from attnsvm.config.enums import (
    Device,
    DType,
    Engine,
    Gradient,
    Head,
    Loss,
    Optimizer,
    Parameterization,
)


def resolve_engine(
    engine: Engine,
    device: Device,
    dtype: DType,
    head: Head,
    experiment_unfit: str | None = None,
    trains: bool = True,
    optimizer: Optimizer | str = Optimizer.ngd,
    train_head: bool = False,
    parameterization: Parameterization = Parameterization.w,
    loss: Loss = Loss.logistic,
    gradient: Gradient = Gradient.exact,
    optimizer_unfit: str | None = None,
) -> Engine | None:
    """The engine that trains: ``auto`` is ``fused`` where it applies, else ``torch``; None
    for a job that trains nothing (``train=false``).

    The kernel covers GD/NGD on W or (K,Q) with the linear and ReLU heads in float64 on the
    CPU (masks included), full batch at a constant lr (``optimizer_unfit``: the step rule's
    own reason otherwise, OptimizerConfig.fused_unfit); the regularization path's projected GD
    runs in torch. Asking for
    ``fused`` elsewhere is a ConfigError naming what does not fit.
    """
    if not trains:
        return None
    if engine == Engine.torch:
        return Engine.torch
    unfit = [  # (what does not fit the fused kernel, why)
        (experiment_unfit is not None, experiment_unfit),  # the experiment's own reason
        (device != Device.cpu, f"device={getattr(device, 'value', device)} (it needs cpu)"),
        (dtype != DType.float64, f"dtype={getattr(dtype, 'value', dtype)} (it needs float64)"),
        (
            head not in (Head.linear, Head.relu),
            f"head.kind={getattr(head, 'value', head)} (it needs linear or relu)",
        ),
        (
            optimizer not in (Optimizer.ngd, Optimizer.gd),
            f"optimizer.kind={getattr(optimizer, 'value', optimizer)} (it needs ngd or gd)",
        ),
        (train_head, "head.train=true (it trains the attention only)"),
        (parameterization == Parameterization.p, "parameterization=p (it trains W or K, Q)"),
        (loss != Loss.logistic, f"loss={getattr(loss, 'value', loss)} (it needs logistic)"),
        (
            gradient != Gradient.exact,
            f"optimizer.gradient={getattr(gradient, 'value', gradient)} "
            "(it computes the exact one)",
        ),
        (optimizer_unfit is not None, optimizer_unfit),
    ]
    why = [reason for broken, reason in unfit if broken]
    if not why and kernel.library() is None:
        why.append(kernel._load()[1])
    if engine == Engine.fused and why:
        raise ConfigError(
            f"engine=fused cannot run here: {'; '.join(why)}. Accepted values of engine for "
            "this run: auto, torch"
        )
    return Engine.torch if why else Engine.fused
