"""Rules across config groups, each applied to the runs whose job config has the groups it
reads; an experiment adds its own (``check`` in its package) and declares the options of shared
groups only it reads (``reads``) and the data sets only it reads (``datasets``):
attnsvm/experiments/__init__.py. A key outside the experiment's job config is refused at
composition (``unread_key``), naming what it reads instead: a row never records a value that
did not act.

Each rule takes the run being resolved and raises a ConfigError naming the key and what to do.
"""

from __future__ import annotations

from attnsvm.config.checks import ConfigError, plain_name
from attnsvm.config.enums import (
    W_ONLY_OPTIMIZERS,
    Attention,
    Device,
    Head,
    Init,
    Parameterization,
)
from attnsvm.experiments import (
    OPTIONAL_READS,
    data_set_code,
    dataset_owners,
    instead,
    name_of,
    read_groups,
    readers,
)


def _has(run, *groups: str) -> bool:
    """Whether the run's job config has every one of ``groups`` (a rule applies only there)."""
    return all(hasattr(run, g) for g in groups)


def w_only_optimizers(run) -> None:
    """Mirror descent and the Polyak step are defined for one matrix W (as published)."""
    if not _has(run, "optimizer", "parameterization"):
        return
    kind = run.optimizer.kind
    if kind in W_ONLY_OPTIMIZERS and run.parameterization.kind != Parameterization.w:
        raise ConfigError(
            f"optimizer.kind={kind.value} steps one matrix W; got "
            f"parameterization={run.parameterization.kind.value}: set parameterization=w, "
            f"or choose optimizer.kind in ngd, gd, sign, signum, adam, spectral"
        )


def minibatch_fits(run) -> None:
    """A minibatch drawn without replacement holds at most the n sequences of a seed."""
    if not _has(run, "optimizer", "dataset"):
        return
    B, n = run.optimizer.minibatch, run.dataset.n
    if B is not None and n is not None and not run.optimizer.replacement and B > n:
        raise ConfigError(
            f"optimizer.minibatch={B} is invalid: accepted values are null or integers in [1, "
            f"{n}] (dataset.n={n} sequences, drawn without replacement); or set "
            "optimizer.replacement=true"
        )


def relu_head_needs_values(run) -> None:
    """head=relu reads the value matrix V, which only some data sets give (their ``values``)."""
    from attnsvm.data import sets

    if _has(run, "head", "dataset") and run.head.kind == Head.relu and not sets.gives_values(run):
        name = run.dataset.generator.value
        givers = ", ".join(sets.with_values())
        raise ConfigError(
            f"head=relu needs dataset in {givers} (a data set that gives the head's value "
            f"matrix V; a file only when it holds V); got dataset.generator={name}: choose one "
            f"of those, or head=linear"
        )


def dataset_rules(run) -> None:
    """The data set's own rules across groups (``check_run`` of attnsvm/data/sets/<name>, or of
    the experiment whose own data it is: ``data_set_code``)."""
    from attnsvm.data import sets

    if not _has(run, "dataset"):
        return
    name = run.dataset.generator.value
    check = data_set_code(name).get("check_run") or sets.entry(name).check_run
    if check is not None:
        check(run)


def p_model(run) -> None:
    """The p-model's attention, init and head; its key-query map's size."""
    if not _has(run, "parameterization", "dataset", "head"):
        return
    kind, ds = run.parameterization.kind, run.dataset
    if kind != Parameterization.p:
        return
    fits = [  # key, its value, whether it fits, the accepted values
        ("dataset.attention", ds.attention.value, ds.attention == Attention.cross, "cross"),
        (
            "parameterization.init",
            run.parameterization.init.value,
            run.parameterization.init != Init.cone,
            "torch, zeros, normal, published",
        ),
        ("head.kind", plain_name(run.head.kind), run.head.kind == Head.linear, "linear"),
    ]
    for key, value, ok, accepted in fits:
        if not ok:
            raise ConfigError(f"parameterization=p needs {key} in {accepted}; got {key}={value}")
    M = run.parameterization.key_query
    if M is not None and len(M) != ds.d:
        raise ConfigError(
            f"parameterization.key_query must be a {ds.d}x{ds.d} matrix (dataset.d="
            f"{ds.d}); got {len(M)}x{len(M[0])}"
        )


def published_starts(run) -> None:
    """parameterization.init=published starts from a data set's published starts of p."""
    from attnsvm.data import sets

    if not _has(run, "parameterization", "dataset"):
        return
    kind, name = run.parameterization.kind, run.dataset.generator.value
    if run.parameterization.init == Init.published and (
        name not in sets.with_inits() or kind != Parameterization.p
    ):
        raise ConfigError(
            "parameterization.init=published starts from the published starts of p: it needs "
            f"{' or '.join(f'dataset={n}' for n in sets.with_inits())} and "
            f"parameterization=p; got "
            f"dataset.generator={name}, parameterization={kind.value}"
        )


def cuda_available(run) -> None:
    """device=cuda only where torch sees a CUDA device."""
    if run.device != Device.cuda:
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            f"device='cuda' is invalid: CUDA is not available here (torch "
            f"{torch.__version__}, torch.cuda.is_available() is False): accepted values "
            f"are cpu (no CUDA device here); install a CUDA build of torch on a GPU machine"
        )


RULES = (
    w_only_optimizers,
    minibatch_fits,
    p_model,
    published_starts,
    dataset_rules,
    relu_head_needs_values,
    cuda_available,
)


def _value(run, key: str):
    if key == "parameterization.p":
        return run.parameterization.kind == Parameterization.p
    node = run
    for part in key.split("."):
        node = getattr(node, part)
    return plain_name(node)


def check_reads(run, module) -> None:
    """Options only some experiments read, and data sets only one reads, refused elsewhere."""
    name = name_of(module)
    for key, unused in OPTIONAL_READS.items():
        if key in module.reads or not hasattr(run, key.split(".")[0]):
            continue
        value = _value(run, key)
        if value in unused:
            continue
        shown = "parameterization=p" if key == "parameterization.p" else f"{key}={value}"
        raise ConfigError(
            f"{shown} is read by experiment={', '.join(readers(key))} only; got experiment="
            f"{name}: drop {'parameterization=p' if key == 'parameterization.p' else key}"
        )
    ds = getattr(run, "dataset", None)
    owner = None if ds is None else dataset_owners().get(ds.generator.value)
    if owner is not None and owner != name:
        raise ConfigError(
            f"dataset={ds.generator.value} is read by experiment={owner} only; got "
            f"experiment={name}: set experiment={owner}"
        )


def unread_key(module, key: str, value=None) -> ConfigError:
    """The error for ``key``, which the experiment's job config lacks: what it reads instead
    (its own key in that one's place, or the experiments that read it), and what it reads."""
    name = name_of(module)
    mine = instead(module, key)
    got = f" (got {key}={value})" if value is not None else ""
    if mine:
        said = f"reads {mine}, not {key}"
    else:
        others = [r for r in readers(key) if r != name]
        said = f"does not read {key}" + (
            f" (read by experiment={', '.join(others)})" if others else ""
        )
    reads = ", ".join(k for k in read_groups(module) if k != "experiment")
    return ConfigError(f"experiment={name} {said}{got}: drop it; experiment={name} reads {reads}")
