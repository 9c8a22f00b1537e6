"""Typed run configuration: the schema Hydra validates every override against.

Shapes of values only, never implementations: this module imports nothing of attnsvm but its
enums (attnsvm/config/enums.py), and its checks need nothing but the values (ranges, enum
names, pure cross-field rules). What needs an implementation (a file's shape, a plug-in's
import, the experiment's groups and rules, the engine) is resolution, a layer above:
attnsvm/composition/resolve.py returns a resolved copy and never mutates what it was given.

    run = RunConfig(seeds=4)      # checked here; resolve(run) before it runs
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from attnsvm.config.checks import builtin_or_path, check_seed_range, plain_name
from attnsvm.config.constraints import (
    BuiltinOrPath,
    Interval,
    NoneOr,
    Options,
    ReadOnlyWhen,
    Rule,
    Satisfies,
    Several,
    check_constraints,
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
    Optimizer,
    Parameterization,
    Schedule,
)

CONF_MODULE = "attnsvm.conf"  # the config groups Hydra composes (the repository's conf/)


def _ints(low: int) -> Interval:
    return Interval(int, low)


def _unit(closed: str = "neither") -> Interval:
    return Interval(float, 0, 1, closed=closed)


def _square(rows) -> bool:
    """A non-empty list of equally long lists of numbers, as many as each is long."""
    return bool(rows) and all(
        isinstance(r, list | tuple)
        and len(r) == len(rows)
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in r)
        for r in rows
    )


FINITE = Interval(float, finite=True)
POSITIVE = Interval(float, 0, closed="neither", finite=True)
NON_NEGATIVE = Interval(float, 0, finite=True)


@dataclass
class DatasetBase:
    """The keys every data set has. Each data set (attnsvm/data/sets/) adds its own keys and
    checks; ``DatasetConfig`` (exported by attnsvm.composition) is this class with all of them."""

    generator: str = ""  # the data set's name (DatasetConfig: an enum of attnsvm/data/sets/)
    n: int | None = 6  # null where the data set takes it from the data
    T: int | None = 8
    d: int | None = 10
    attention: Attention = Attention.cross
    query_index: int = 0  # self-attention: z_i = x_{i, query_index}
    causal: bool = False  # sequential attention: query k attends to tokens t <= k only

    # null only where the data set takes the shape from the data (attnsvm/data/sets/)
    CONSTRAINTS: ClassVar = {
        key: NoneOr(_ints(low), silent=True) for key, low in (("n", 1), ("T", 2), ("d", 1))
    }
    RULES: ClassVar = (
        Rule(
            "query_index",
            "integers in [-T, T)",
            lambda ds: ds.T is None or -ds.T <= ds.query_index < ds.T,
            actual=lambda ds: f"[{-ds.T}, {ds.T})",
        ),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "dataset")


@dataclass
class ParameterizationConfig:
    kind: Parameterization = Parameterization.w
    m: int | None = None  # hidden size of K, Q (default d)
    init: Init = Init.torch
    init_scale: float = 0.1  # std of the normal init; noise std of the cone init
    cone_scale: float = 100.0  # cone init: ||W(0)|| before noise (c of c * W^mm_alpha)
    penalty: float = 2.220446049250313e-16  # lambda of lambda(|K|^2 + |Q|^2); float64 eps
    key_query: list[Any] | None = None  # p: M (rows) of x~ = M x; null: the data's (identity)

    CONSTRAINTS: ClassVar = {
        "m": NoneOr(_ints(1)),
        "init_scale": POSITIVE,
        "cone_scale": FINITE,
        "penalty": NON_NEGATIVE,
        "key_query": NoneOr(Satisfies("a square matrix", _square)),
    }
    RULES: ClassVar = (
        Rule(
            "key_query",
            "null unless parameterization=p (the key-query map of the p-model)",
            lambda c: c.key_query is None or c.kind == Parameterization.p,
        ),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "parameterization")
        if self.key_query is not None:
            self.key_query = [[float(x) for x in r] for r in self.key_query]


def _read_by(key: str, *kinds: Optimizer) -> ReadOnlyWhen:
    """``optimizer.key`` is read by the built-in step rules ``kinds`` (their classes in
    attnsvm/train/step_rules.py read it; tests/test_unread_keys.py checks that they read no
    other) and by your own rule (``module:make``), which is given the whole group."""
    names = ", ".join(k.value for k in kinds)
    return ReadOnlyWhen(
        key,
        "kind",
        f"optimizer.kind in {names} (or your own)" if kinds else "your own optimizer.kind",
        lambda c: c.kind in kinds or not isinstance(c.kind, Optimizer),
    )


@dataclass
class OptimizerConfig:
    kind: str = Optimizer.ngd.value  # a built-in (Optimizer) or your factory's "module:make"
    lr: float = 0.1
    steps: int = 2000
    eps: float = 2.220446049250313e-16  # added to ||grad|| in ngd (the published value)
    checkpoint_every: int = 20
    kwargs: dict[str, Any] = field(default_factory=dict)  # your optimizer's arguments
    p: float = 2.0  # md: the potential ||W||_p^p / p (p > 1)
    normalize: bool = True  # md: step lr g / (||g||_q + eps), q = p / (p - 1), as published
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # adam
    gradient: Gradient = Gradient.exact  # exact (hand-written) | autograd (published form)
    beta: float = 0.99  # signum: m <- beta m + (1 - beta) g
    weight_decay: float = 0.0  # adamw: lambda of the decoupled decay W <- W (1 - lr lambda)
    schedule: str = Schedule.constant.value  # constant | poly: lr (t + 2)^(-decay_a)
    decay_a: float = 0.5  # schedule=poly: the exponent a
    minibatch: int | None = None  # sequences per step (null: all n, full batch)
    replacement: bool = False  # minibatch drawn with replacement (else without)

    CONSTRAINTS: ClassVar = {
        "kind": BuiltinOrPath(Optimizer),
        "lr": POSITIVE,
        "steps": _ints(1),
        "eps": NON_NEGATIVE,
        "checkpoint_every": _ints(1),
        "betas": Several(_unit("left"), 2),
        "beta": _unit("left"),
        "schedule": Options(Schedule),  # a str, so a bad value is a ConfigError naming them
        "weight_decay": NON_NEGATIVE,
        "decay_a": Interval(float, 0, 1, closed="right"),
        "minibatch": NoneOr(_ints(1)),
    }
    RULES: ClassVar = (
        Rule(
            "p",
            "floats > 1 for optimizer=md (p = 1 has no mirror map)",
            lambda c: c.kind != Optimizer.md or c.p > 1,
        ),
        Rule(
            "weight_decay",
            "floats > 0 for optimizer=adamw (its l_inf ball has radius 1/lambda)",
            lambda c: c.kind != Optimizer.adamw or c.weight_decay > 0,
        ),
        Rule(
            "minibatch",
            "null with optimizer.gradient=autograd (the published form is full-batch)",
            lambda c: c.minibatch is None or c.gradient == Gradient.exact,
        ),
        Rule(
            "minibatch",
            "null with optimizer.kind=polyak (its step size reads the full-batch loss)",
            lambda c: c.minibatch is None or c.kind != Optimizer.polyak,
        ),
    )

    READ_ONLY: ClassVar = (
        _read_by("eps", Optimizer.ngd, Optimizer.md, Optimizer.adam, Optimizer.adamw),
        _read_by("p", Optimizer.md),
        _read_by("normalize", Optimizer.md),
        _read_by("betas", Optimizer.adam, Optimizer.adamw),
        _read_by("beta", Optimizer.signum),
        _read_by("weight_decay", Optimizer.adamw),
        _read_by("kwargs"),
        ReadOnlyWhen(
            "decay_a", "schedule", "optimizer.schedule=poly", lambda c: c.schedule == Schedule.poly
        ),
        ReadOnlyWhen(
            "replacement",
            "minibatch",
            "a set optimizer.minibatch",
            lambda c: c.minibatch is not None,
        ),
    )

    def fused_unfit(self) -> str | None:
        """Why the fused C kernel cannot train this step rule's schedule or minibatches (it
        steps with a constant lr on every sequence), or None (attnsvm/train/engine_choice.py)."""
        if self.schedule != Schedule.constant:
            return f"optimizer.schedule={self.schedule} (it needs constant)"
        if self.minibatch is not None:
            return f"optimizer.minibatch={self.minibatch} (it needs null, the full batch)"
        return None

    def __post_init__(self) -> None:
        self.kind = builtin_or_path(self.kind, Optimizer)
        check_constraints(self, "optimizer")


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

    # solver.norms: checked at resolution against the norms' registry (attnsvm/svm/norm_names.py)
    CONSTRAINTS: ClassVar = {
        "tol": _unit(),
        "max_iters": _ints(1),
        "rank_rtol": _unit(),
        "support_tol": _unit(),
        "feas_tol": _unit(),
    }

    def __post_init__(self) -> None:
        self.norms = None if self.norms is None else [str(n) for n in self.norms]
        check_constraints(self, "solver")


@dataclass
class HeadConfig:
    kind: str = Head.linear.value  # a built-in (Head) or your factory's path "module:make"
    lam: float = 0.0  # lambda head: f_i = v^T xbar_i - lam * ||xbar_i||^2
    kwargs: dict[str, Any] = field(default_factory=dict)  # your head's arguments
    train: bool = False  # linear head: train v jointly with the attention (its own step rule)

    CONSTRAINTS: ClassVar = {"kind": BuiltinOrPath(Head), "lam": NON_NEGATIVE}
    RULES: ClassVar = (
        Rule(
            "train",
            "false, or true with head.kind=linear (the trained head is v)",
            lambda c: not c.train or c.kind == Head.linear,
        ),
    )
    READ_ONLY: ClassVar = (
        ReadOnlyWhen(
            "lam",
            "kind",
            "head.kind=lambda (or your own)",
            lambda c: c.kind == Head["lambda"] or not isinstance(c.kind, Head),
        ),
        ReadOnlyWhen(
            "kwargs", "kind", "your own head.kind", lambda c: not isinstance(c.kind, Head)
        ),
    )

    def __post_init__(self) -> None:
        self.kind = builtin_or_path(self.kind, Head)
        check_constraints(self, "head")


@dataclass
class MetricsConfig:
    delta: float = 1e-3  # saturated if every max softmax prob >= 1 - delta
    epsilon: float = 1e-2  # converged to alpha if corr(W, W^mm_alpha) >= 1 - epsilon
    window: float = 0.5  # not converged: still moving over this last fraction of the steps ...
    gap_shrink: float = 0.1  # ... e.g. 1 - corr(W, W^mm_alpha) closed by more than this share

    CONSTRAINTS: ClassVar = {
        "delta": _unit(),
        "epsilon": _unit(),
        "window": _unit("right"),
        "gap_shrink": _unit(),
    }

    def __post_init__(self) -> None:
        check_constraints(self, "metrics")


@dataclass
class RunBase:
    """What every job has, whatever its experiment: which experiment, its seeds, where and how
    it runs. Each experiment's job config adds the groups and keys it reads, written out in its
    package (attnsvm/experiments/<name>/config.py; the default experiment's is ``RunConfig``)."""

    experiment: str = ""  # a built-in (conf/experiment/<name>.yaml) or your module's path
    seeds: int = 8  # how many seeds: seed, seed + 1, ..., seed + seeds - 1
    seed: int = 0
    batch_size: int = 1000  # seeds trained together; results never depend on it
    device: Device = Device.cpu
    dtype: DType = DType.float64
    threads: int = 1  # workers for training's seed groups and the SVM stage; bits do not change
    engine: Engine = Engine.auto  # training engine: fused C kernel where it applies, else torch
    progress_interval: float = 5.0  # seconds between progress lines of a long job (run.log)

    # experiment: checked at resolution against the experiments (attnsvm/experiments/)
    CONSTRAINTS: ClassVar = {
        "seeds": _ints(1),
        "seed": _ints(0),
        "batch_size": _ints(1),
        "threads": _ints(1),
        "progress_interval": Interval(float, 0, noun="seconds"),
    }

    def __post_init__(self) -> None:
        self.experiment = plain_name(self.experiment)
        check_constraints(self, "")
        check_seed_range(self.seed, self.seeds)

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seed, self.seed + self.seeds))
