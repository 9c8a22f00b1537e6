"""Typed run configuration: the schema Hydra validates every override against.

Shapes of values only, never implementations: this module imports nothing of attnsvm but its
enums (attnsvm/config/enums.py), and its checks need nothing but the values (ranges, enum
names, pure cross-field rules). What needs an implementation (a file's shape, a plug-in's
import, the experiment's groups and rules, the engine) is resolution: attnsvm/config/resolve.py
returns a resolved copy and never mutates what it was given.

    run = RunConfig(seeds=4)      # checked here; resolve(run) before it runs
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from attnsvm.config.checks import (
    ConfigError,
    builtin_or_path,
    check_finite,
    check_seed_range,
    coerce_enums,
    plain_name,
    require,
)
from attnsvm.config.enums import (
    Attention,
    Backend,
    Device,
    Draws,
    DType,
    Embedding,
    Engine,
    FroMethod,
    Generator,
    Gradient,
    Graphs,
    Head,
    Init,
    Loss,
    Notebook,
    Optimizer,
    Parameterization,
)

CONF_MODULE = "attnsvm.conf"  # the config groups Hydra composes (the repository's conf/)


PATHS_T = (3, 5)  # the sequence lengths of the published path pictures (data.PATHS_LAYOUTS)
SHAPE_FROM_DATA = (Generator.file, Generator.digits, Generator.maxmargin)  # n, T, d may be null


@dataclass
class DatasetConfig:
    generator: Generator = Generator.random
    n: int | None = 6  # dataset=file: null = from the file
    T: int | None = 8
    d: int | None = 10
    attention: Attention = Attention.cross
    query_index: int = 0  # self-attention: z_i = x_{i, query_index}
    causal: bool = False  # sequential attention: query k attends to tokens t <= k only
    path: str | None = None  # dataset=file: the .npz (attnsvm/data/userdata.py)
    sha256: str | None = None  # dataset=file: the file's digest (filled in; set it to pin)
    target: str | None = None  # dataset=callable: "module.function"
    kwargs: dict[str, Any] = field(default_factory=dict)  # dataset=callable: its arguments
    K: int | None = None  # dataset=nexttoken: vocabulary size
    embedding: Embedding = Embedding.random  # dataset=nexttoken: vocabulary embeddings
    rho: float = 0.5  # dataset=nexttoken, embedding=equicorr: pairwise correlation
    draws: Draws = Draws.per_seed  # dataset=nexttoken: per-seed generators or the published one
    notebook: Notebook = Notebook["global"]  # dataset=nexttoken, draws=published: whose stream
    graphs: Graphs = Graphs.cyclic  # dataset=nexttoken: instances kept (the others redrawn)
    ids: list[list[int]] | None = None  # dataset=nexttoken: your sequences (n, T), or drawn
    labels: list[int] | None = None  # dataset=nexttoken: your labels (n,), with dataset.ids
    example: str | None = None  # dataset=maxmargin: which published example (maxmargin.py)
    classes: list[int] = field(default_factory=lambda: [0, 1])  # dataset=digits: Y = +1, -1
    patch: int = 4  # dataset=digits: patch side (2 or 4): T = (8 / patch)^2 tokens
    positions: bool = False  # dataset=digits: append the patch centre (row, col) to each token

    def __post_init__(self) -> None:
        coerce_enums(self, "dataset")
        if self.generator != Generator.maxmargin and self.example is not None:
            raise ConfigError(
                f"dataset.example is read by dataset=maxmargin only; got dataset.generator="
                f"{self.generator.value}: set dataset=maxmargin"
            )
        if self.generator == Generator.callable:
            require(bool(self.target), "dataset.target", "'module.function' names", self.target)
        if self.generator == Generator.file:
            require(bool(self.path), "dataset.path", "the path of an .npz file", self.path)
        for key, low in (("n", 1), ("T", 2), ("d", 1)):
            value = getattr(self, key)
            if value is None and self.generator in SHAPE_FROM_DATA:
                continue  # taken from the data at resolution (attnsvm/config/resolve.py)
            require(
                value is not None and value >= low, f"dataset.{key}", f"integers >= {low}", value
            )
        if self.generator == Generator.nexttoken:
            self._check_nexttoken()
        if self.T is not None:
            require(
                -self.T <= self.query_index < self.T,
                "dataset.query_index",
                f"integers in [-T, T) = [{-self.T}, {self.T})",
                self.query_index,
            )
        self._check_fixed_shapes()
        others = {"path": Generator.file, "target": Generator.callable}
        for key, generator in others.items():
            if getattr(self, key) is not None and self.generator != generator:
                raise ConfigError(
                    f"dataset.{key} is read by dataset={generator.value} only; got "
                    f"dataset.generator={self.generator.value}: set dataset={generator.value}"
                )

    def _check_fixed_shapes(self) -> None:
        """The published pictures' generators draw one shape; orthonormal tokens need T <= d."""
        shape = f"got dataset.n={self.n}, dataset.T={self.T}, dataset.d={self.d}"
        if self.generator == Generator.paths and not (
            self.n == 2 and self.d == 2 and self.T in PATHS_T
        ):
            raise ConfigError(
                f"dataset.generator=paths draws the published 2-D pictures: it needs "
                f"dataset.n=2, dataset.d=2 and dataset.T in {list(PATHS_T)}; {shape}"
            )
        if self.generator == Generator.joint2d and (self.n, self.T, self.d) != (2, 3, 2):
            raise ConfigError(
                f"dataset.generator=joint2d is the published 2-D example: it needs "
                f"dataset.n=2, dataset.T=3, dataset.d=2; {shape}"
            )
        if self.generator == Generator.orthonormal and self.T > self.d:
            raise ConfigError(
                f"dataset.generator=orthonormal needs dataset.T <= dataset.d (T orthonormal "
                f"tokens in R^d); {shape}: raise dataset.d or lower dataset.T"
            )

    def _check_nexttoken(self) -> None:
        """Vocabulary, sequence length and your own sequences checked against each other."""
        K, T, d = self.K, self.T, self.d
        require(K is not None and K >= 2, "dataset.K", "integers >= 2 (a vocabulary)", K)
        if T is not None and T > K:
            raise ConfigError(
                f"dataset.T={T} > dataset.K={K}: a sequence holds T distinct ids, drawn without "
                f"replacement from the vocabulary; set dataset.T <= {K} or raise dataset.K"
            )
        need = {Embedding.orthonormal: K, Embedding.equicorr: K + 1}.get(self.embedding, 0)
        if d is not None and d < need:
            raise ConfigError(
                f"dataset.embedding={self.embedding.value} needs dataset.d >= {need} "
                f"(orthonormal directions in R^d); got dataset.d={d}, dataset.K={K}"
            )
        require(0 <= self.rho < 1, "dataset.rho", "floats in [0, 1)", self.rho)
        if (self.ids is None) != (self.labels is None):
            raise ConfigError("dataset.ids and dataset.labels go together: set both or neither")
        if self.ids is not None:
            self._check_sequences()

    def _check_sequences(self) -> None:
        n, T, K = self.n, self.T, self.K
        ids, labels = [list(r) for r in self.ids], list(self.labels)
        shape = f"{len(ids)} sequences of lengths {sorted({len(r) for r in ids})}"
        require(
            len(ids) == n and all(len(r) == T for r in ids),
            "dataset.ids",
            f"dataset.n={n} lists of dataset.T={T} ids ({shape})",
            self.ids,
        )
        require(len(labels) == n, "dataset.labels", f"a list of dataset.n={n} ids", labels)
        flat = [j for r in ids for j in r]
        require(all(0 <= j < K for j in flat), "dataset.ids", f"ids in [0, {K})", self.ids)
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


@dataclass
class ParameterizationConfig:
    kind: Parameterization = Parameterization.w
    m: int | None = None  # hidden size of K, Q (default d)
    init: Init = Init.torch
    init_scale: float = 0.1  # std of the normal init; noise std of the cone init
    cone_scale: float = 100.0  # cone init: ||W(0)|| before noise (c of c * W^mm_alpha)
    penalty: float = 2.220446049250313e-16  # lambda of lambda(|K|^2 + |Q|^2); float64 eps
    key_query: list[Any] | None = None  # p: M (rows) of x~ = M x; null: the data's (identity)

    def __post_init__(self) -> None:
        coerce_enums(self, "parameterization")
        if self.key_query is not None:
            rows = self.key_query
            square = bool(rows) and all(
                isinstance(r, list | tuple)
                and len(r) == len(rows)
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in r)
                for r in rows
            )
            require(square, "parameterization.key_query", "null or a square matrix", rows)
            self.key_query = [[float(x) for x in r] for r in rows]
            require(
                self.kind == Parameterization.p,
                "parameterization.key_query",
                "null unless parameterization=p (the key-query map of the p-model)",
                rows,
            )
        require(self.m is None or self.m >= 1, "parameterization.m", "null or >= 1", self.m)
        require(self.init_scale > 0, "parameterization.init_scale", "floats > 0", self.init_scale)
        require(self.penalty >= 0, "parameterization.penalty", "floats >= 0", self.penalty)
        check_finite(self, "parameterization", ("init_scale", "cone_scale", "penalty"))


@dataclass
class OptimizerConfig:
    kind: str = Optimizer.ngd.value  # a built-in (Optimizer) or your factory's "module.make"
    lr: float = 0.1
    steps: int = 2000
    eps: float = 2.220446049250313e-16  # added to ||grad|| in ngd (the published value)
    checkpoint_every: int = 20
    kwargs: dict[str, Any] = field(default_factory=dict)  # your optimizer's arguments
    p: float = 2.0  # md: the potential ||W||_p^p / p (p > 1)
    normalize: bool = True  # md: step lr g / (||g||_q + eps), q = p / (p - 1), as published
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # adam
    gradient: Gradient = Gradient.exact  # exact (hand-written) | autograd (published form)

    def __post_init__(self) -> None:
        self.kind = builtin_or_path(self.kind, Optimizer)
        if not isinstance(self.gradient, Gradient):
            accepted = ", ".join(g.value for g in Gradient)
            require(
                self.gradient in accepted.split(", "), "optimizer.gradient", accepted, self.gradient
            )
            self.gradient = Gradient(self.gradient)
        require(
            self.p > 1 if self.kind == Optimizer.md else self.p >= 1,
            "optimizer.p",
            "floats > 1 for optimizer=md (p = 1 has no mirror map), >= 1 otherwise",
            self.p,
        )
        require(
            len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas),
            "optimizer.betas",
            "two floats in [0, 1)",
            self.betas,
        )
        require(self.lr > 0, "optimizer.lr", "floats > 0", self.lr)
        require(self.steps >= 1, "optimizer.steps", "integers >= 1", self.steps)
        require(self.eps >= 0, "optimizer.eps", "floats >= 0", self.eps)
        require(
            self.checkpoint_every >= 1,
            "optimizer.checkpoint_every",
            "integers >= 1",
            self.checkpoint_every,
        )
        check_finite(self, "optimizer", ("lr", "eps"))


# built-in SVM norms (attnsvm/svm/norms.py), besides the entrywise lp norms "l<p>"; the Frobenius
# SVM is always solved (it decides feasibility)
NORMS = ("fro", "nuc", "max", "spectral")
LP_NORM = re.compile(r"l(?P<p>\d+(\.\d+)?)")  # entrywise lp norm, p >= 1: l1, l1.75, l3


def lp_exponent(name: str) -> float | None:
    """p of an entrywise lp norm's name ("l1.75" -> 1.75), None for any other norm."""
    match = LP_NORM.fullmatch(str(name))
    return float(match["p"]) if match else None


def norm_names(names, key: str = "solver.norms") -> list[str]:
    """Built-in names or plug-in paths, without repeats, "fro" first (the feasibility oracle);
    a plug-in path is imported and checked at resolution."""
    out = ["fro"]
    for name in map(str, names):
        p = lp_exponent(name)
        if p is not None:
            require(p >= 1, key, "l<p> with p >= 1 (l1, l1.75, l3)", name)
        if name not in out:
            out.append(name)
    return out


@dataclass
class SolverConfig:
    backend: Backend = Backend.IPM  # nuclear-norm SDP
    frobenius: FroMethod = FroMethod.nnls
    tol: float = 1e-10  # solver tolerances (tight, or support tokens are missed)
    max_iters: int = 500
    rank_rtol: float = 1e-6  # rank = #{sigma > rank_rtol * sigma_max}
    support_tol: float = 1e-6  # constraint active if margin <= 1 + support_tol
    feas_tol: float = 1e-6  # a solution must satisfy every margin >= 1 - feas_tol
    norms: list[str] = field(default_factory=lambda: ["fro", "nuc"])  # SVMs solved per seed

    def __post_init__(self) -> None:
        coerce_enums(self, "solver")
        self.norms = norm_names(self.norms)
        for key in ("tol", "rank_rtol", "support_tol", "feas_tol"):
            value = getattr(self, key)
            require(0 < value < 1, f"solver.{key}", "floats in (0, 1)", value)
        require(self.max_iters >= 1, "solver.max_iters", "integers >= 1", self.max_iters)


@dataclass
class HeadConfig:
    kind: str = Head.linear.value  # a built-in (Head) or your factory's path "module.make"
    lam: float = 0.0  # lambda head: f_i = v^T xbar_i - lam * ||xbar_i||^2
    kwargs: dict[str, Any] = field(default_factory=dict)  # your head's arguments
    train: bool = False  # linear head: train v jointly with the attention (its own step rule)

    def __post_init__(self) -> None:
        self.kind = builtin_or_path(self.kind, Head)
        require(self.lam >= 0, "head.lam", "floats >= 0", self.lam)
        check_finite(self, "head", ("lam",))
        require(
            not self.train or self.kind == Head.linear,
            "head.train",
            "false, or true with head.kind=linear (the trained head is v)",
            self.train,
        )


@dataclass
class MetricsConfig:
    delta: float = 1e-3  # saturated if every max softmax prob >= 1 - delta
    epsilon: float = 1e-2  # converged to alpha if corr(W, W^mm_alpha) >= 1 - epsilon
    window: float = 0.5  # not converged: still moving over this last fraction of the steps ...
    gap_shrink: float = 0.1  # ... e.g. 1 - corr(W, W^mm_alpha) closed by more than this share

    def __post_init__(self) -> None:
        coerce_enums(self, "metrics")
        require(0 < self.delta < 1, "metrics.delta", "floats in (0, 1)", self.delta)
        require(0 < self.epsilon < 1, "metrics.epsilon", "floats in (0, 1)", self.epsilon)
        require(0 < self.window <= 1, "metrics.window", "floats in (0, 1]", self.window)
        require(0 < self.gap_shrink < 1, "metrics.gap_shrink", "floats in (0, 1)", self.gap_shrink)


@dataclass
class RunConfig:
    """One job: the core groups and run-level keys. Each experiment adds its own group (its
    package's ``Config``) to the ``RunConfig`` that ``attnsvm.config`` exports."""

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    parameterization: ParameterizationConfig = field(default_factory=ParameterizationConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    head: HeadConfig = field(default_factory=HeadConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    experiment: str = "gd"  # a package under attnsvm/experiments/, or your module's path
    train: bool = True  # false: only the SVMs at alpha = opt (rank / feasibility experiments)
    seeds: int = 8  # how many seeds: seed, seed + 1, ..., seed + seeds - 1
    seed: int = 0
    batch_size: int = 1000  # seeds trained together; results never depend on it
    device: Device = Device.cpu
    dtype: DType = DType.float64
    threads: int = 1  # torch threads; 1 is fastest for these tiny tensors
    engine: Engine = Engine.auto  # training engine: fused C kernel where it applies, else torch
    loss: Loss = Loss.logistic  # l(u) of the loss (1/n) sum_i l(Y_i f_i)
    progress_interval: float = 5.0  # seconds between progress lines of a long job (run.log)

    def __post_init__(self) -> None:
        coerce_enums(self, "")
        self.experiment = plain_name(self.experiment)
        require(self.seeds >= 1, "seeds", "integers >= 1", self.seeds)
        require(self.seed >= 0, "seed", "integers >= 0", self.seed)
        check_seed_range(self.seed, self.seeds)
        require(self.batch_size >= 1, "batch_size", "integers >= 1", self.batch_size)
        require(self.threads >= 1, "threads", "integers >= 1", self.threads)
        require(
            self.progress_interval >= 0,
            "progress_interval",
            "seconds >= 0",
            self.progress_interval,
        )

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seed, self.seed + self.seeds))
