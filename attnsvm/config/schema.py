"""Typed run configuration: the schema Hydra validates every override against.

Shapes of values only, never implementations: this module imports nothing of attnsvm but its
enums (attnsvm/config/enums.py), and its checks need nothing but the values (ranges, enum
names, pure cross-field rules). What needs an implementation (a file's shape, a plug-in's
import, the experiment's groups and rules, the engine) is resolution: attnsvm/config/resolve.py
returns a resolved copy and never mutates what it was given.

    run = RunConfig(seeds=4)      # checked here; resolve(run) before it runs
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnsvm.config.checks import (
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
    DType,
    Engine,
    FroMethod,
    Gradient,
    Head,
    Init,
    Loss,
    Optimizer,
    Parameterization,
)

CONF_MODULE = "attnsvm.conf"  # the config groups Hydra composes (the repository's conf/)


@dataclass
class DatasetBase:
    """The keys every data set has. Each data set (attnsvm/data/sets/) adds its own keys and
    checks; ``DatasetConfig`` (exported by attnsvm.config) is this class with all of them."""

    generator: str = ""  # the data set's name (DatasetConfig: an enum of attnsvm/data/sets/)
    n: int | None = 6  # null where the data set takes it from the data
    T: int | None = 8
    d: int | None = 10
    attention: Attention = Attention.cross
    query_index: int = 0  # self-attention: z_i = x_{i, query_index}
    causal: bool = False  # sequential attention: query k attends to tokens t <= k only

    def __post_init__(self) -> None:
        coerce_enums(self, "dataset")
        for key, low in (("n", 1), ("T", 2), ("d", 1)):
            value = getattr(self, key)
            require(value is None or value >= low, f"dataset.{key}", f"integers >= {low}", value)
        if self.T is not None:
            require(
                -self.T <= self.query_index < self.T,
                "dataset.query_index",
                f"integers in [-T, T) = [{-self.T}, {self.T})",
                self.query_index,
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


@dataclass
class SolverConfig:
    backend: Backend = Backend.IPM  # nuclear-norm SDP
    frobenius: FroMethod = FroMethod.nnls
    tol: float = 1e-10  # solver tolerances (tight, or support tokens are missed)
    max_iters: int = 500
    rank_rtol: float = 1e-6  # rank = #{sigma > rank_rtol * sigma_max}
    support_tol: float = 1e-6  # constraint active if margin <= 1 + support_tol
    feas_tol: float = 1e-6  # a solution must satisfy every margin >= 1 - feas_tol
    norms: list[str] | None = None  # SVMs solved per seed; null: the default set (norm_names.py)

    def __post_init__(self) -> None:
        coerce_enums(self, "solver")
        self.norms = None if self.norms is None else [str(n) for n in self.norms]
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

    dataset: DatasetBase = field(default_factory=DatasetBase)
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
    threads: int = 1  # workers for training's seed groups and the SVM stage; bits do not change
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
