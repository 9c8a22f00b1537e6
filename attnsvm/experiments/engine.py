"""The engine a run trains on: ``engine=auto`` resolved against what the experiment's job
trains (fused where the C kernel applies, else torch). Beside the registry, since it reads the
experiment's entry (``fused_unfit``), so composition (resolution, the hash) and the jobs below it
both read it here.

    train_engine(run)   # Engine.fused, Engine.torch, or None when the job trains nothing
"""

from __future__ import annotations

from attnsvm.config.checks import plain_name
from attnsvm.config.enums import Engine, Gradient, Head, Loss, Optimizer, Parameterization
from attnsvm.config.schema import RunBase
from attnsvm.experiments import entry


def train_engine(run: RunBase) -> Engine | None:
    """The engine that trains: ``auto`` resolved (fused where it applies, else torch); None
    when the job trains nothing (``train=false``). The job hash uses this, not ``engine``."""
    from attnsvm.train.engine_choice import resolve_engine

    module = entry(run.experiment)
    unfit = module.fused_unfit
    head = getattr(run, "head", None)
    optimizer = getattr(run, "optimizer", None)
    parameterization = getattr(run, "parameterization", None)
    return resolve_engine(  # a group the job config lacks: the value that fits the kernel
        run.engine,
        run.device,
        run.dtype,
        Head.linear if head is None else head.kind,
        f"experiment={plain_name(run.experiment) or module.name} ({unfit})" if unfit else None,
        getattr(run, "train", True),
        Optimizer.ngd if optimizer is None else optimizer.kind,
        False if head is None else head.train,
        Parameterization.w if parameterization is None else parameterization.kind,
        getattr(run, "loss", Loss.logistic),
        Gradient.exact if optimizer is None else optimizer.gradient,
        None if optimizer is None else optimizer.fused_unfit(),
    )
