"""Rules across config groups that hold for every experiment; an experiment adds its own
(``check`` in its package) and declares which optional options it reads (``READS``) and which
data sets only it reads (``DATASETS``): attnsvm/experiments/__init__.py.

Each rule takes the run being resolved and raises a ConfigError naming the key and what to do.
"""

from __future__ import annotations

from attnsvm.config.checks import ConfigError, plain_name, require
from attnsvm.config.enums import (
    W_ONLY_OPTIMIZERS,
    Attention,
    Device,
    Generator,
    Head,
    Init,
    Parameterization,
)
from attnsvm.experiments import OPTIONAL_READS, builtin_names, dataset_owners, entry, name_of, reads


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
    """head=relu reads the value matrix V, which only some data sets give."""
    from attnsvm.data.userdata import read_file

    with_v = [Generator.relu, Generator.callable]
    if run.dataset.generator == Generator.file:
        arrays, _, (R, *_) = read_file(run.dataset.path)
        require(
            run.seed + run.seeds <= R,
            "seed/seeds",
            f"seed + seeds <= {R}, the instances in dataset.path={run.dataset.path}",
            (run.seed, run.seeds),
        )
        with_v += [Generator.file] * ("V" in arrays)
    if run.head.kind == Head.relu and run.dataset.generator not in with_v:
        raise ConfigError(
            f"head=relu needs dataset=relu (dataset.generator=relu draws the head's value "
            f"matrix V; a file or callable may give V); got dataset.generator="
            f"{run.dataset.generator.value}: set dataset=relu, or choose head=linear"
        )


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


def published_examples(run) -> None:
    """The published max-margin examples: the p-model, their inits, their number of starts."""
    kind, ds = run.parameterization.kind, run.dataset
    if run.parameterization.init == Init.published and (
        ds.generator != Generator.maxmargin or kind != Parameterization.p
    ):
        raise ConfigError(
            "parameterization.init=published starts from the inits of the published "
            "examples: it needs dataset=maxmargin and parameterization=p; got "
            f"dataset.generator={ds.generator.value}, parameterization={kind.value}"
        )
    if ds.generator != Generator.maxmargin:
        return
    from attnsvm.data.maxmargin import EXAMPLES

    if kind != Parameterization.p:
        raise ConfigError(
            f"dataset=maxmargin holds the examples of the p-model: it needs "
            f"parameterization=p; got parameterization={kind.value}"
        )
    count = len(EXAMPLES[ds.example].seeds)
    require(
        run.seed + run.seeds <= count,
        "seed/seeds",
        f"seed + seeds <= {count}, the published inits of dataset.example={ds.example}"
        f" (seeds={count - run.seed})",
        (run.seed, run.seeds),
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


RULES = (w_only_optimizers, p_model, published_examples, relu_head_needs_values, cuda_available)


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
