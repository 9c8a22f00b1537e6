"""Instances of next-token prediction (``dataset=nexttoken``; docs/math.md#next-token-prediction).

A vocabulary of K unit embeddings, n sequences of T distinct ids, a label inside each
sequence, the last token as query, and the initial weights. One instance is drawn by
``draw_instance`` from one torch.Generator in the published order:

    repeat {E = embeddings (K, d); ids = multinomial(ones (n, K), T, without replacement);
            labels = multinomial(ones K, n, with replacement);
            for i in order: a label outside sequence i becomes ids[i, randint(T)]}
    until the graphs fit dataset.graphs (published: some G^(k) has a cycle);
    then the inits: W(0), the finite part's (drawn, then zeroed), [local notebook: one more].

``dataset.draws=per_seed`` (default) gives seed s its own generator seeded s, so a seed's
instance never depends on its batch mates. ``dataset.draws=published`` follows the notebooks'
single global generator seeded once with 1: instance s is the notebook's instance s (counted from
0), rejected attempts and the unused inits consuming draws exactly as there.

    inst = make_nexttoken(cfg.dataset, cfg.seed_list)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from attnsvm.config.schema import DatasetBase
from attnsvm.data.sets import dataset_class
from attnsvm.data.sets.nexttoken import Embedding, Graphs
from attnsvm.data.token_graph import is_cyclic, scc_table

PUBLISHED_SEED = 1  # torch.manual_seed(1) in both notebooks
INITS = {"global": 2, "local": 3}  # nn.Linear(d, d) inits per instance in each notebook


@dataclass
class NTInstance:
    E: np.ndarray  # (K, d) float64 unit rows
    ids: np.ndarray  # (n, T) int64, distinct per row
    labels: np.ndarray  # (n,) int64, labels[i] in ids[i]
    inits: list[np.ndarray]  # (d, d) float64 blocks: W(0) first; (K,Q): Q(0), K(0)
    attempts: int  # draws until the graphs fit dataset.graphs


@dataclass
class NTInstances:
    seeds: list[int]
    E: np.ndarray  # (R, K, d)
    ids: np.ndarray  # (R, n, T)
    labels: np.ndarray  # (R, n)
    W0: np.ndarray  # (R, d, d)
    K0: np.ndarray  # (R, d, d): second init block (K(0) of (K,Q))
    attempts: np.ndarray  # (R,)


def embeddings(cfg: DatasetBase, g: torch.Generator) -> torch.Tensor:
    """(K, d) unit embeddings: random (published: Gaussian float32 rows, normalized in
    float64), orthonormal (rows of a QR factor), equicorr (sqrt(rho) c_0 + sqrt(1-rho) c_j)."""
    K, d = cfg.K, cfg.d
    if cfg.embedding == Embedding.random:
        E = torch.randn(K, d, generator=g).double()
        return torch.nn.functional.normalize(E, dim=-1)
    Q = torch.linalg.qr(torch.randn(d, d, generator=g).double())[0]
    if cfg.embedding == Embedding.orthonormal:
        return Q[:K]
    return math.sqrt(cfg.rho) * Q[0] + math.sqrt(1 - cfg.rho) * Q[1 : K + 1]


def _sequences(cfg: DatasetBase, g: torch.Generator):
    n, T, K = cfg.n, cfg.T, cfg.K
    if cfg.ids is not None:  # your sequences: no draws
        return torch.tensor(cfg.ids), torch.tensor(cfg.labels)
    ids = torch.multinomial(torch.ones(K).float().expand(n, K), T, replacement=False, generator=g)
    labels = torch.multinomial(torch.ones(K).float(), n, replacement=True, generator=g)
    for i in range(n):
        if labels[i] not in ids[i]:
            labels[i] = ids[i, torch.randint(T, (1,), generator=g)]
    return ids, labels


def _fits(cfg: DatasetBase, ids: np.ndarray, labels: np.ndarray) -> bool:
    if cfg.graphs == Graphs.any:
        return True
    cyclic = is_cyclic(scc_table(ids, ids == labels[:, None], cfg.K), ids[:, -1])
    return cyclic == (cfg.graphs == Graphs.cyclic)


def _init_block(d: int, g: torch.Generator) -> np.ndarray:
    """nn.Linear(d, d, bias=False)'s default init (kaiming uniform, float32) in float64."""
    w = torch.empty(d, d)
    torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=g)
    return w.double().numpy()


def draw_instance(cfg: DatasetBase, g: torch.Generator, max_attempts: int = 100_000):
    """One instance in the published order; None if no draw fits within max_attempts."""
    for attempt in range(1, max_attempts + 1):
        E = embeddings(cfg, g).numpy()
        ids, labels = (a.numpy().astype(np.int64) for a in _sequences(cfg, g))
        if _fits(cfg, ids, labels):
            blocks = [_init_block(cfg.d, g) for _ in range(INITS[cfg.notebook.value])]
            return NTInstance(E, ids, labels, blocks, attempt)
        if cfg.ids is not None:
            break  # your sequences never change: redrawing cannot help
    return None


@lru_cache(maxsize=8)
def _published_stream(frozen: tuple, count: int) -> tuple:
    """The notebook's first ``count`` instances from the global generator seeded with 1."""
    plain = dict(frozen)
    if plain["ids"] is not None:
        plain["ids"], plain["labels"] = [list(q) for q in plain["ids"]], list(plain["labels"])
    cfg = dataset_class()(**plain)
    g = torch.Generator().manual_seed(PUBLISHED_SEED)
    return tuple(draw_instance(cfg, g) for _ in range(count))


def _frozen(cfg: DatasetBase) -> tuple:
    """The keys an instance depends on, hashable (the stream's cache key)."""
    keys = ("generator", "n", "T", "d", "K", "embedding", "rho", "graphs", "notebook", "draws")
    own = tuple(map(tuple, cfg.ids)) if cfg.ids is not None else None
    labels = tuple(cfg.labels) if cfg.labels is not None else None
    return (*((k, getattr(cfg, k)) for k in keys), ("ids", own), ("labels", labels))


def instance(cfg: DatasetBase, seed: int) -> NTInstance | None:
    """Instance ``seed``: its own generator (per_seed) or the published stream's seed-th."""
    if cfg.draws.value == "published":
        return _published_stream(_frozen(cfg), seed + 1)[seed]
    return draw_instance(cfg, torch.Generator().manual_seed(seed))


def make_nexttoken(cfg: DatasetBase, seeds: list[int]) -> tuple[NTInstances, dict]:
    """Instances of ``seeds`` stacked, and {seed: reason} of those none could be drawn for."""
    got, missing = {}, {}
    for s in seeds:
        inst = instance(cfg, s)
        if inst is None:
            missing[s] = f"no draw fits dataset.graphs={cfg.graphs.value}"
        else:
            got[s] = inst
    keep = [s for s in seeds if s in got]
    insts = [got[s] for s in keep]

    def stack(f, shape):
        return np.stack([f(i) for i in insts]) if insts else np.zeros((0, *shape))

    K, d, n, T = cfg.K, cfg.d, cfg.n, cfg.T
    return NTInstances(
        seeds=keep,
        E=stack(lambda i: i.E, (K, d)),
        ids=stack(lambda i: i.ids, (n, T)).astype(np.int64),
        labels=stack(lambda i: i.labels, (n,)).astype(np.int64),
        W0=stack(lambda i: i.inits[0], (d, d)),
        K0=stack(lambda i: i.inits[1], (d, d)),
        attempts=np.array([i.attempts for i in insts], dtype=np.int64),
    ), missing
