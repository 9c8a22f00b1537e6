"""dataset=nexttoken: a vocabulary of K embeddings, sequences of T distinct ids and a label in
each (docs/math.md#next-token-prediction); drawn by attnsvm/data/nexttoken.py."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from attnsvm.config.checks import ConfigError, require
from attnsvm.config.constraints import Interval
from attnsvm.data.data_set import DataSet


class Embedding(str, Enum):
    """Vocabulary embeddings."""

    random = "random"  # Gaussian rows, normalized (published)
    orthonormal = "orthonormal"  # K <= d orthonormal rows
    equicorr = "equicorr"  # unit rows with pairwise correlation dataset.rho (K + 1 <= d)


class Draws(str, Enum):
    per_seed = "per_seed"  # seed s: its own generator seeded s (batch-invariant)
    published = "published"  # the notebooks' global generator seeded once with 1


# "global" is a keyword, so the enum is built from a mapping (as Head); the global notebook
# draws two nn.Linear inits per instance (W(0), the finite part's), the local one a third
Notebook = Enum("Notebook", {"global": "global", "local": "local"}, type=str, module=__name__)
Notebook.__doc__ = "Published notebook whose draw stream dataset.draws=published follows."


class Graphs(str, Enum):
    """Which drawn instances are kept; the others are redrawn."""

    cyclic = "cyclic"  # some token-priority graph has a cycle (published)
    acyclic = "acyclic"  # no graph has a cycle (no equalities, no finite part)
    any = "any"  # keep every draw


@dataclass
class Config:
    K: int | None = None  # vocabulary size
    embedding: Embedding = Embedding.random  # vocabulary embeddings
    rho: float = 0.5  # embedding=equicorr: pairwise correlation
    draws: Draws = Draws.per_seed  # per-seed generators or the published one
    notebook: Notebook = Notebook["global"]  # draws=published: whose stream
    graphs: Graphs = Graphs.cyclic  # instances kept (the others redrawn)
    ids: list[list[int]] | None = None  # your sequences (n, T), or drawn
    labels: list[int] | None = None  # your labels (n,), with dataset.ids

    CONSTRAINTS: ClassVar = {
        "K": Interval(int, 2, note="a vocabulary"),
        "rho": Interval(float, 0, 1),
    }


def check(ds) -> None:
    """Vocabulary, sequence length and your own sequences checked against each other (each
    key's own range: ``Config.CONSTRAINTS``)."""
    K, T, d = ds.K, ds.T, ds.d
    if T is not None and T > K:
        raise ConfigError(
            f"dataset.T={T} > dataset.K={K}: a sequence holds T distinct ids, drawn without "
            f"replacement from the vocabulary; set dataset.T <= {K} or raise dataset.K"
        )
    need = {Embedding.orthonormal: K, Embedding.equicorr: K + 1}.get(ds.embedding, 0)
    if d is not None and d < need:
        raise ConfigError(
            f"dataset.embedding={ds.embedding.value} needs dataset.d >= {need} "
            f"(orthonormal directions in R^d); got dataset.d={d}, dataset.K={K}"
        )
    if (ds.ids is None) != (ds.labels is None):
        raise ConfigError("dataset.ids and dataset.labels go together: set both or neither")
    if ds.ids is not None:
        _check_sequences(ds)


def _check_sequences(ds) -> None:
    n, T, K = ds.n, ds.T, ds.K
    ids, labels = [list(r) for r in ds.ids], list(ds.labels)
    shape = f"{len(ids)} sequences of lengths {sorted({len(r) for r in ids})}"
    require(
        len(ids) == n and all(len(r) == T for r in ids),
        "dataset.ids",
        f"dataset.n={n} lists of dataset.T={T} ids ({shape})",
        ds.ids,
    )
    require(len(labels) == n, "dataset.labels", f"a list of dataset.n={n} ids", labels)
    flat = [j for r in ids for j in r]
    require(all(0 <= j < K for j in flat), "dataset.ids", f"ids in [0, {K})", ds.ids)
    require(all(len(set(r)) == T for r in ids), "dataset.ids", "distinct ids per sequence", ids)
    bad = [y for y in labels if not 0 <= y < K]
    if bad:
        raise ConfigError(
            f"dataset.labels={labels} is invalid: labels {bad} lie outside the vocabulary; "
            f"accepted values are ids in [0, dataset.K={K})"
        )
    outside = [i for i, (y, r) in enumerate(zip(labels, ids, strict=True)) if y not in r]
    require(
        not outside,
        "dataset.labels",
        f"each label an id of its sequence (sequences {outside} lack theirs)",
        labels,
    )


# no instances: its own experiment draws it (attnsvm/data/nexttoken.py: make_nexttoken)
DATA_SET = DataSet(
    name="nexttoken",
    Config=Config,
    order=3,  # its keys' place among the data sets' keys (columns of the runs table)
    check=check,
    doc=__doc__,
)
