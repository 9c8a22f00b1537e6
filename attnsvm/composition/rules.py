"""Rules across config groups that hold for every experiment; an experiment adds its own
(``check`` in its package) and declares which core groups and keys it reads (``reads``) and which
data sets only it reads (``datasets``): attnsvm/experiments/__init__.py. A key it does not read
is refused away from its default (``check_unread``): a row never records a value that did not act.

Each rule takes the run being resolved and raises a ConfigError naming the key and what to do.
"""

from __future__ import annotations

from functools import cache

from attnsvm.config.checks import ConfigError, flatten, plain, plain_name
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
    builtin_names,
    dataset_owners,
    entry,
    group_of,
    instead,
    name_of,
    read_groups,
    reads,
    reads_key,
    run_config_class,
)


def w_only_optimizers(run) -> None:
    """Mirror descent and the Polyak step are defined for one matrix W (as published)."""
    kind = run.optimizer.kind
    if kind in W_ONLY_OPTIMIZERS and run.parameterization.kind != Parameterization.w:
        raise ConfigError(
            f"optimizer.kind={kind.value} steps one matrix W; got "
            f"parameterization={run.parameterization.kind.value}: set parameterization=w, "
            f"or choose optimizer.kind in ngd, gd, sign, adam, spectral"
        )


def relu_head_needs_values(run) -> None:
    """head=relu reads the value matrix V, which only some data sets give (their ``values``)."""
    from attnsvm.data import sets

    if run.head.kind == Head.relu and not sets.gives_values(run):
        name = run.dataset.generator.value
        givers = ", ".join(sets.with_values())
        raise ConfigError(
            f"head=relu needs dataset in {givers} (a data set that gives the head's value "
            f"matrix V; a file only when it holds V); got dataset.generator={name}: choose one "
            f"of those, or head=linear"
        )


def dataset_rules(run) -> None:
    """The data set's own rules across groups (``check_run`` of attnsvm/data/sets/<name>)."""
    from attnsvm.data import sets

    check = sets.entry(run.dataset.generator.value).check_run
    if check is not None:
        check(run)


def p_model(run) -> None:
    """The p-model's attention, init and head; its key-query map's size."""
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
    name, mine = name_of(module), reads(module)
    for key, unused in OPTIONAL_READS.items():
        value = _value(run, key)
        if key in mine or value in unused:
            continue
        shown = "parameterization=p" if key == "parameterization.p" else f"{key}={value}"
        readers = [name_of(m) for m in map(entry, builtin_names()) if key in reads(m)]
        raise ConfigError(
            f"{shown} is read by experiment={', '.join(readers)} only; got experiment={name}: "
            f"drop {'parameterization=p' if key == 'parameterization.p' else key}"
        )
    owner = dataset_owners().get(run.dataset.generator.value)
    if owner is not None and owner != name:
        raise ConfigError(
            f"dataset={run.dataset.generator.value} is read by experiment={owner} only; got "
            f"experiment={name}: set experiment={owner}"
        )


@cache
def _defaults() -> dict:
    """Every config key at its default (conf/config.yaml composes the schema's defaults)."""
    return flatten(plain(run_config_class()()))


def check_unread(run, module) -> None:
    """Refuse every key the experiment does not read (its ``reads``) set away from its default,
    naming what it reads instead. OPTIONAL_READS keys have their own check (``check_reads``)."""
    defaults, name = _defaults(), name_of(module)
    keys = flatten(plain(run))
    unread = [
        k
        for k in dict.fromkeys([*keys, *defaults])
        if k not in OPTIONAL_READS and keys.get(k) != defaults.get(k) and not reads_key(module, k)
    ]
    if not unread:
        return
    got = ", ".join(f"{k}={keys.get(k)}" for k in unread)
    mapped = [f"{instead(module, k)}, not {k}" for k in unread if instead(module, k)]
    owners = {group_of(m): name_of(m) for m in map(entry, builtin_names())}
    other = [
        f"{k} (read by experiment={owners[k.split('.')[0]]})" if k.split(".")[0] in owners else k
        for k in unread
        if not instead(module, k)
    ]
    said = [f"reads {'; '.join(mapped)}"] if mapped else []
    said += [f"does not read {', '.join(other)}"] if other else []
    mine = ", ".join(k for k in read_groups(module) if k != "experiment")
    raise ConfigError(
        f"experiment={name} {' and '.join(said)} (got {got}): drop "
        f"{'it' if len(unread) == 1 else 'them'}; experiment={name} reads {mine}"
    )
