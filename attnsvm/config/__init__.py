"""Typed run configuration: the schema Hydra validates every override against.

Enums give composition-time errors that list the accepted values
(``solver.backend=CLARABELL`` fails before anything runs); ``__post_init__`` checks ranges
when the composed config is converted to these dataclasses (``to_run_config``), and every
message names the offending key.

    cfg = to_run_config(hydra_cfg)   # RunConfig, validated
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from omegaconf import DictConfig, OmegaConf

CONF_MODULE = "attnsvm.conf"  # the config groups Hydra composes (the repository's conf/)


class ConfigError(ValueError):
    """A config value out of its accepted range; the message names the key."""


class Generator(str, Enum):
    random = "random"  # published generator, PAPER.md §2
    relu = "relu"  # published ReLU-head generator (V, then X, Y, Z)
    paths = "paths"  # hand-placed 2-D clusters of the path pictures
    orthonormal = "orthonormal"  # orthonormal tokens, Y = +1 (the lambda-head experiment)
    file = "file"  # your instances from an .npz (dataset.path; attnsvm/data/userdata.py)
    callable = "callable"  # your generator function (dataset.target, dataset.kwargs)
    joint2d = "joint2d"  # the 2-D joint-training example of lp mirror descent (FOLLOWUPS §3)
    nexttoken = "nexttoken"  # next-token prediction: vocabulary, sequences of ids, labels
    maxmargin = "maxmargin"  # the published examples of max-margin token selection (FOLLOWUPS §1)
    digits = "digits"  # scikit-learn's 8x8 digits as patch tokens (attnsvm/data/digits.py)


class Embedding(str, Enum):
    """Vocabulary embeddings of dataset=nexttoken (FOLLOWUPS.md §2)."""

    random = "random"  # Gaussian rows, normalized (published)
    orthonormal = "orthonormal"  # K <= d orthonormal rows
    equicorr = "equicorr"  # unit rows with pairwise correlation dataset.rho (K + 1 <= d)


class Draws(str, Enum):
    per_seed = "per_seed"  # seed s: its own generator seeded s (batch-invariant)
    published = "published"  # the notebooks' global generator seeded once with 1


# "global" is a keyword, so the enum is built from a mapping (as Head); the global notebook
# draws two nn.Linear inits per instance (W(0), the finite part's), the local one a third
Notebook = Enum("Notebook", {"global": "global", "local": "local"}, type=str)
Notebook.__doc__ = "Published notebook whose draw stream dataset.draws=published follows."


class Graphs(str, Enum):
    """Which drawn instances dataset=nexttoken keeps; the others are redrawn."""

    cyclic = "cyclic"  # some token-priority graph has a cycle (published)
    acyclic = "acyclic"  # no graph has a cycle (no equalities, no finite part)
    any = "any"  # keep every draw


class Attention(str, Enum):
    cross = "cross"
    self = "self"
    sequential = "sequential"  # every token is a query (optionally causal), PAPER.md §5


class Parameterization(str, Enum):
    w = "w"
    kq = "kq"
    p = "p"  # one vector p per seed, logits x~_it^T p with x~ = M x (FOLLOWUPS.md §1)


class Loss(str, Enum):
    """l(u) of the loss (1/n) sum_i l(Y_i f_i)."""

    logistic = "logistic"  # log(1 + e^-u), the paper's
    exponential = "exponential"  # e^-u
    correlation = "correlation"  # -u (the published loss comparison, FOLLOWUPS.md §1)


class Init(str, Enum):
    torch = "torch"  # nn.Linear's default: U(-1/sqrt(d), 1/sqrt(d)), as the published notebooks
    zeros = "zeros"
    normal = "normal"  # init_scale * N(0, 1)
    cone = "cone"  # c * W^mm_alpha / ||W^mm_alpha|| + noise, alpha locally optimal, not global
    published = "published"  # dataset=maxmargin: seed s starts from the example's s-th init


class Optimizer(str, Enum):
    """Step rules (attnsvm/train/step_rules.py); each is steepest descent in a geometry whose
    SVM norm
    it is conjectured (or proven) to pick (FOLLOWUPS.md §3)."""

    ngd = "ngd"  # the paper's normalized GD: W <- W - lr * g / (||g|| + eps)
    gd = "gd"
    md = "md"  # lp mirror descent, potential ||W||_p^p / p (optimizer.p, optimizer.normalize)
    sign = "sign"  # normalized sign descent W <- W - lr sign(g): the l_inf geometry
    adam = "adam"  # torch.optim.Adam's update (optimizer.betas, optimizer.eps)
    spectral = "spectral"  # W <- W - lr U V^T for g = U S V^T: the spectral-norm geometry
    polyak = "polyak"  # GD with the Polyak step lr * L(W) / ||g||^2


class Gradient(str, Enum):
    """How the training gradient is formed (PAPER.md §6.1)."""

    exact = "exact"  # hand-written, softmax-weighted differences: accurate after saturation
    autograd = "autograd"  # the published notebooks' form (torch.softmax, autograd): loses the
    # masked tokens to cancellation once the softmax saturates; in float32 it is then exactly 0


W_ONLY_OPTIMIZERS = (Optimizer.md, Optimizer.polyak)  # defined for one matrix W (as published)


class Backend(str, Enum):
    """Who solves the nuclear-norm SDP; CLARABEL and SCS go through one cvxpy model each."""

    IPM = "IPM"  # attnsvm's batched interior point (sdp.py); Clarabel decides its rare stalls
    CLARABEL = "CLARABEL"
    SCS = "SCS"


class FroMethod(str, Enum):
    nnls = "nnls"  # exact dual (Lawson-Hanson least-distance programming)
    cvxpy = "cvxpy"  # the plain model, for cross-checks


# "lambda" is a keyword, so the enum is built from a mapping; Head["lambda"] is the lambda head
Head = Enum("Head", {"linear": "linear", "relu": "relu", "lambda": "lambda"}, type=str)
Head.__doc__ = "Prediction heads of PAPER.md §1: linear, ReLU, lambda (selects a token mixture)."


class Experiment(str, Enum):
    gd = "gd"  # GD vs the attention SVMs (the default pipeline)
    multitoken = "multitoken"  # multi-token SVM-equivalence of nonlinear heads (PAPER.md §3)
    regpath = "regpath"  # regularization path: min loss s.t. ||W|| <= R on a grid of R
    nexttoken = "nexttoken"  # next-token prediction: token-priority graphs, graph-SVM


class Device(str, Enum):
    cpu = "cpu"
    cuda = "cuda"


class Engine(str, Enum):
    """What trains: the fused C kernel (linear or ReLU head, float64, CPU), torch, or auto (fused
    where it applies). The two agree to rounding error, so the engine is part of the job hash."""

    auto = "auto"
    fused = "fused"
    torch = "torch"


class DType(str, Enum):
    float64 = "float64"
    float32 = "float32"


def plain_name(value) -> str:
    """An enum member's value, or the string itself (a plug-in's path)."""
    return getattr(value, "value", value)


def _require(ok: bool, key: str, accepted: str, value: object) -> None:
    if not ok:
        raise ConfigError(f"{key}={value!r} is invalid: accepted values are {accepted}")


def _input_checks():
    """attnsvm.config.input_checks, imported when first used (it imports ConfigError from here)."""
    from attnsvm.config import input_checks

    return input_checks


def _coerce_enums(obj, prefix: str) -> None:
    """Accept an enum field's value by name, as the CLI does (``ParameterizationConfig(
    kind="kq")`` from Python); an unknown name is a ConfigError listing the accepted values."""
    hints = typing.get_type_hints(type(obj))
    for f in fields(obj):
        kind = hints[f.name]
        value = getattr(obj, f.name)
        if isinstance(kind, type) and issubclass(kind, Enum) and not isinstance(value, kind):
            accepted = [e.value for e in kind]
            key = f"{prefix}.{f.name}" if prefix else f.name
            _require(value in accepted, key, ", ".join(accepted), value)
            setattr(obj, f.name, kind(value))


def _builtin_or_plugin(value, builtin: type[Enum], key: str, load=None):
    """A built-in's name becomes its enum member; any other value must load as a plug-in —
    ``load(value, key)``, by default a "module.function" factory (plugins.load_object) —
    checked now so that a typo fails at composition, listing the built-ins."""
    value = getattr(value, "value", value)
    if value in {e.value for e in builtin}:
        return builtin(value)
    if load is None:
        from attnsvm.config.plugins import load_object as load
    try:
        load(value, key)
    except ConfigError as exc:
        accepted = ", ".join(e.value for e in builtin)
        raise ConfigError(
            f"{key}={value!r} is invalid: accepted values are {accepted}, or the import path "
            f"of your own ({exc})"
        ) from None
    return value


def _experiment_module(value, key):
    from attnsvm.experiments import module_of

    return module_of(value, key)


PATHS_T = (3, 5)  # the sequence lengths of the published path pictures (data.PATHS_LAYOUTS)


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
        _coerce_enums(self, "dataset")
        if self.generator == Generator.file:
            self._take_shape_from_file()
        if self.generator == Generator.digits:
            self._take_shape_from_digits()
        if self.generator == Generator.maxmargin:
            self._take_shape_from_example()
        elif self.example is not None:
            raise ConfigError(
                f"dataset.example is read by dataset=maxmargin only; got dataset.generator="
                f"{self.generator.value}: set dataset=maxmargin"
            )
        if self.generator == Generator.callable:
            _require(bool(self.target), "dataset.target", "'module.function' names", self.target)
        for key, low in (("n", 1), ("T", 2), ("d", 1)):
            value = getattr(self, key)
            _require(
                value is not None and value >= low, f"dataset.{key}", f"integers >= {low}", value
            )
        if self.generator == Generator.callable:
            _input_checks().check_callable_target(self.target, self.kwargs, self.n, self.T, self.d)
        if self.generator == Generator.nexttoken:
            self._check_nexttoken()
        _require(
            -self.T <= self.query_index < self.T,
            "dataset.query_index",
            f"integers in [-T, T) = [{-self.T}, {self.T})",
            self.query_index,
        )
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
        others = {"path": Generator.file, "target": Generator.callable}
        for key, generator in others.items():
            if getattr(self, key) is not None and self.generator != generator:
                raise ConfigError(
                    f"dataset.{key} is read by dataset={generator.value} only; got "
                    f"dataset.generator={self.generator.value}: set dataset={generator.value}"
                )
        if self.generator == Generator.orthonormal and self.T > self.d:
            raise ConfigError(
                f"dataset.generator=orthonormal needs dataset.T <= dataset.d (T orthonormal "
                f"tokens in R^d); {shape}: raise dataset.d or lower dataset.T"
            )

    def _check_nexttoken(self) -> None:
        """Vocabulary, sequence length and your own sequences checked against each other."""
        K, T, d = self.K, self.T, self.d
        _require(K is not None and K >= 2, "dataset.K", "integers >= 2 (a vocabulary)", K)
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
        _require(0 <= self.rho < 1, "dataset.rho", "floats in [0, 1)", self.rho)
        if (self.ids is None) != (self.labels is None):
            raise ConfigError("dataset.ids and dataset.labels go together: set both or neither")
        if self.ids is not None:
            self._check_sequences()

    def _check_sequences(self) -> None:
        n, T, K = self.n, self.T, self.K
        ids, labels = [list(r) for r in self.ids], list(self.labels)
        shape = f"{len(ids)} sequences of lengths {sorted({len(r) for r in ids})}"
        _require(
            len(ids) == n and all(len(r) == T for r in ids),
            "dataset.ids",
            f"dataset.n={n} lists of dataset.T={T} ids ({shape})",
            self.ids,
        )
        _require(len(labels) == n, "dataset.labels", f"a list of dataset.n={n} ids", labels)
        flat = [j for r in ids for j in r]
        _require(all(0 <= j < K for j in flat), "dataset.ids", f"ids in [0, {K})", self.ids)
        _require(
            all(len(set(r)) == T for r in ids), "dataset.ids", "distinct ids per sequence", ids
        )
        bad = [y for y in labels if not 0 <= y < K]
        if bad:
            raise ConfigError(
                f"dataset.labels={labels} is invalid: labels {bad} lie outside the vocabulary; "
                f"accepted values are ids in [0, dataset.K={K})"
            )
        outside = [i for i, (y, r) in enumerate(zip(labels, ids, strict=True)) if y not in r]
        _require(
            not outside,
            "dataset.labels",
            f"each label an id of its sequence (sequences {outside} lack theirs)",
            labels,
        )

    def _take_shape_from_digits(self) -> None:
        """T, d from the patch size; the classes and n checked against the data."""
        from attnsvm.data.digits import PATCHES, available

        c = self.classes
        _require(
            len(c) == 2 and c[0] != c[1] and all(0 <= x <= 9 for x in c),
            "dataset.classes",
            "two different digits in 0-9, e.g. [0, 1]",
            c,
        )
        _require(
            self.patch in PATCHES, "dataset.patch", "2 or 4 (8 / patch tokens a side)", self.patch
        )
        T, d = (8 // self.patch) ** 2, self.patch**2 + 2 * self.positions
        for key, value in (("T", T), ("d", d)):
            if getattr(self, key) is None:
                setattr(self, key, value)
            elif getattr(self, key) != value:
                raise ConfigError(
                    f"dataset.{key}={getattr(self, key)} but dataset.patch={self.patch} "
                    f"(positions={self.positions}) gives {key}={value}: set dataset.{key}="
                    f"{value} or null"
                )
        have = available(c)
        _require(
            self.n is not None and 1 <= self.n <= have,
            "dataset.n",
            f"1..{have}, the images of digits {c[0]} and {c[1]}",
            self.n,
        )

    def _take_shape_from_example(self) -> None:
        """n, T, d of the published example (null) or checked against it."""
        from attnsvm.data.maxmargin import EXAMPLES

        _require(self.example in EXAMPLES, "dataset.example", ", ".join(EXAMPLES), self.example)
        for key, value in zip(("n", "T", "d"), EXAMPLES[self.example].X.shape, strict=True):
            if getattr(self, key) is None:
                setattr(self, key, value)
            elif getattr(self, key) != value:
                raise ConfigError(
                    f"dataset.{key}={getattr(self, key)} but dataset.example={self.example} "
                    f"has {key}={value}: set dataset.{key}={value} or null"
                )

    def _take_shape_from_file(self) -> None:
        """n, T, d from the file (null) or checked against it; sha256 filled in or checked."""
        from attnsvm.data.userdata import read_file

        _require(bool(self.path), "dataset.path", "the path of an .npz file", self.path)
        _, digest, (_, *shape) = read_file(self.path)
        for key, value in zip(("n", "T", "d"), shape, strict=True):
            if getattr(self, key) is None:
                setattr(self, key, value)
            elif getattr(self, key) != value:
                raise ConfigError(
                    f"dataset.{key}={getattr(self, key)} but dataset.path={self.path} has "
                    f"{key}={value}: set dataset.{key}={value} or null"
                )
        if self.sha256 is None:
            self.sha256 = digest
        elif self.sha256 != digest:
            raise ConfigError(
                f"dataset.sha256={self.sha256} pins another file: {self.path} has {digest}"
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
        _coerce_enums(self, "parameterization")
        if self.key_query is not None:
            rows = self.key_query
            square = bool(rows) and all(
                isinstance(r, list | tuple)
                and len(r) == len(rows)
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in r)
                for r in rows
            )
            _require(square, "parameterization.key_query", "null or a square matrix", rows)
            self.key_query = [[float(x) for x in r] for r in rows]
            _require(
                self.kind == Parameterization.p,
                "parameterization.key_query",
                "null unless parameterization=p (the key-query map of the p-model)",
                rows,
            )
        _require(self.m is None or self.m >= 1, "parameterization.m", "null or >= 1", self.m)
        _require(self.init_scale > 0, "parameterization.init_scale", "floats > 0", self.init_scale)
        _require(self.penalty >= 0, "parameterization.penalty", "floats >= 0", self.penalty)
        _input_checks().check_finite(
            self, "parameterization", ("init_scale", "cone_scale", "penalty")
        )


@dataclass
class OptimizerConfig:
    kind: str = Optimizer.ngd.value  # a built-in (Optimizer) or your factory's "module.make"
    lr: float = 0.1
    steps: int = 2000
    eps: float = 2.220446049250313e-16  # added to ||grad|| in ngd (published value, PAPER §6.2)
    checkpoint_every: int = 20
    kwargs: dict[str, Any] = field(default_factory=dict)  # your optimizer's arguments
    p: float = 2.0  # md: the potential ||W||_p^p / p (p > 1)
    normalize: bool = True  # md: step lr g / (||g||_q + eps), q = p / (p - 1), as published
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # adam
    gradient: Gradient = Gradient.exact  # exact (hand-written) | autograd (published form)

    def __post_init__(self) -> None:
        self.kind = _builtin_or_plugin(self.kind, Optimizer, "optimizer.kind")
        if not isinstance(self.gradient, Gradient):
            accepted = ", ".join(g.value for g in Gradient)
            _require(
                self.gradient in accepted.split(", "), "optimizer.gradient", accepted, self.gradient
            )
            self.gradient = Gradient(self.gradient)
        _require(
            self.p > 1 if self.kind == Optimizer.md else self.p >= 1,
            "optimizer.p",
            "floats > 1 for optimizer=md (p = 1 has no mirror map), >= 1 otherwise",
            self.p,
        )
        _require(
            len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas),
            "optimizer.betas",
            "two floats in [0, 1)",
            self.betas,
        )
        _require(self.lr > 0, "optimizer.lr", "floats > 0", self.lr)
        _require(self.steps >= 1, "optimizer.steps", "integers >= 1", self.steps)
        _require(self.eps >= 0, "optimizer.eps", "floats >= 0", self.eps)
        _require(
            self.checkpoint_every >= 1,
            "optimizer.checkpoint_every",
            "integers >= 1",
            self.checkpoint_every,
        )
        _input_checks().check_finite(self, "optimizer", ("lr", "eps"))


# built-in SVM norms (attnsvm/svm/norms.py), besides the entrywise lp norms "l<p>"; the Frobenius
# SVM is always solved (it decides feasibility)
NORMS = ("fro", "nuc", "max", "spectral")
LP_NORM = re.compile(r"l(?P<p>\d+(\.\d+)?)")  # entrywise lp norm, p >= 1: l1, l1.75, l3


def lp_exponent(name: str) -> float | None:
    """p of an entrywise lp norm's name ("l1.75" -> 1.75), None for any other norm."""
    match = LP_NORM.fullmatch(str(name))
    return float(match["p"]) if match else None


def _norm_names(names, key: str = "solver.norms") -> list[str]:
    """Built-in names or plug-in paths, without repeats, "fro" first (the feasibility oracle)."""
    out = ["fro"]
    for name in map(str, names):
        p = lp_exponent(name)
        if p is not None:
            _require(p >= 1, key, "l<p> with p >= 1 (l1, l1.75, l3)", name)
        elif name not in NORMS:
            builtin = Enum("SVMNorm", {n: n for n in (*NORMS, "l<p>")}, type=str)
            _builtin_or_plugin(name, builtin, key)
        if name not in out:
            out.append(name)
    return out


@dataclass
class SolverConfig:
    backend: Backend = Backend.IPM  # nuclear-norm SDP
    frobenius: FroMethod = FroMethod.nnls
    tol: float = 1e-10  # solver tolerances (PAPER §6.3: tight, or support tokens are missed)
    max_iters: int = 500
    rank_rtol: float = 1e-6  # rank = #{sigma > rank_rtol * sigma_max}
    support_tol: float = 1e-6  # constraint active if margin <= 1 + support_tol
    feas_tol: float = 1e-6  # a solution must satisfy every margin >= 1 - feas_tol
    norms: list[str] = field(default_factory=lambda: ["fro", "nuc"])  # SVMs solved per seed

    def __post_init__(self) -> None:
        _coerce_enums(self, "solver")
        self.norms = _norm_names(self.norms)
        for key in ("tol", "rank_rtol", "support_tol", "feas_tol"):
            value = getattr(self, key)
            _require(0 < value < 1, f"solver.{key}", "floats in (0, 1)", value)
        _require(self.max_iters >= 1, "solver.max_iters", "integers >= 1", self.max_iters)


@dataclass
class HeadConfig:
    kind: str = Head.linear.value  # a built-in (Head) or your factory's path "module.make"
    lam: float = 0.0  # lambda head: f_i = v^T xbar_i - lam * ||xbar_i||^2
    kwargs: dict[str, Any] = field(default_factory=dict)  # your head's arguments
    train: bool = False  # linear head: train v jointly with the attention (its own step rule)

    def __post_init__(self) -> None:
        self.kind = _builtin_or_plugin(self.kind, Head, "head.kind")
        _require(self.lam >= 0, "head.lam", "floats >= 0", self.lam)
        _input_checks().check_finite(self, "head", ("lam",))
        _require(
            not self.train or self.kind == Head.linear,
            "head.train",
            "false, or true with head.kind=linear (the trained head is v)",
            self.train,
        )


@dataclass
class MultitokenConfig:
    """Multi-token SVM-equivalence (PAPER.md §3) and the published acceptance filters."""

    threshold: float = 1e-3  # O_i = {t : s_it >= threshold} (published 1e-3)
    zero_threshold: float = 1e-6  # a masked prob counts as zero below it (published 1e-6)
    target_accepted: int | None = None  # draw and train seeds until this many are accepted
    max_tried: int = 1_000_000  # stop drawing after this many seeds, accepted or not

    def __post_init__(self) -> None:
        _coerce_enums(self, "multitoken")
        _require(
            0 < self.zero_threshold <= self.threshold < 1,
            "multitoken.zero_threshold/threshold",
            "0 < zero_threshold <= threshold < 1",
            (self.zero_threshold, self.threshold),
        )
        _require(
            self.target_accepted is None or self.target_accepted >= 1,
            "multitoken.target_accepted",
            "null or integers >= 1",
            self.target_accepted,
        )
        _require(self.max_tried >= 1, "multitoken.max_tried", "integers >= 1", self.max_tried)


@dataclass
class RegpathConfig:
    """Regularization path: min L s.t. ||W||_F <= R, or ||K||^2 + ||Q||^2 <= 2R for (K,Q)."""

    r_min: float = 0.5
    r_max: float = 200.0
    points: int = 12  # geometric grid of R
    steps: int = 500  # projected GD steps per R (warm-started from the previous R)
    lr: float = 0.1  # normalized step, relative to R
    svm_start_noise: float = 0.1  # second start: SVM direction + this relative Gaussian noise

    def __post_init__(self) -> None:
        _coerce_enums(self, "regpath")
        _require(
            0 < self.r_min < self.r_max,
            "regpath.r_min/r_max",
            "0 < r_min < r_max",
            (self.r_min, self.r_max),
        )
        _require(self.points >= 2, "regpath.points", "integers >= 2", self.points)
        _require(self.steps >= 1, "regpath.steps", "integers >= 1", self.steps)
        _require(self.lr > 0, "regpath.lr", "floats > 0", self.lr)
        _require(
            self.svm_start_noise >= 0,
            "regpath.svm_start_noise",
            "floats >= 0",
            self.svm_start_noise,
        )
        _input_checks().check_finite(self, "regpath", ("r_min", "r_max", "lr", "svm_start_noise"))


class NexttokenLoss(str, Enum):
    """Losses of experiment=nexttoken (FOLLOWUPS.md §2)."""

    nll = "nll"  # -log(attention mass on the label's id) (global notebook)
    lsq2 = "lsq2"  # (1 - softmax_k(e_k^T X^T s)_y)^2, a vocabulary classifier (local notebook)


@dataclass
class NexttokenConfig:
    """Next-token prediction (FOLLOWUPS.md §2): loss, local selection, which SVMs are solved."""

    loss: NexttokenLoss = NexttokenLoss.nll
    local_threshold: float = 0.01  # selected ids C_i = {k : attention mass on k > threshold}
    nuclear: bool | None = None  # solve the nuclear graph-SVMs; null: with parameterization=kq

    def __post_init__(self) -> None:
        _coerce_enums(self, "nexttoken")
        _require(
            0 < self.local_threshold < 1,
            "nexttoken.local_threshold",
            "floats in (0, 1)",
            self.local_threshold,
        )


@dataclass
class MetricsConfig:
    delta: float = 1e-3  # saturated if every max softmax prob >= 1 - delta
    epsilon: float = 1e-2  # converged to alpha if corr(W, W^mm_alpha) >= 1 - epsilon
    window: float = 0.5  # not converged: still moving over this last fraction of the steps ...
    gap_shrink: float = 0.1  # ... e.g. 1 - corr(W, W^mm_alpha) closed by more than this share

    def __post_init__(self) -> None:
        _coerce_enums(self, "metrics")
        _require(0 < self.delta < 1, "metrics.delta", "floats in (0, 1)", self.delta)
        _require(0 < self.epsilon < 1, "metrics.epsilon", "floats in (0, 1)", self.epsilon)
        _require(0 < self.window <= 1, "metrics.window", "floats in (0, 1]", self.window)
        _require(0 < self.gap_shrink < 1, "metrics.gap_shrink", "floats in (0, 1)", self.gap_shrink)


@dataclass
class RunConfig:
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    parameterization: ParameterizationConfig = field(default_factory=ParameterizationConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    solver: SolverConfig = field(default_factory=SolverConfig)
    head: HeadConfig = field(default_factory=HeadConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    experiment: str = Experiment.gd.value  # a built-in (Experiment) or your module's path
    multitoken: MultitokenConfig = field(default_factory=MultitokenConfig)
    regpath: RegpathConfig = field(default_factory=RegpathConfig)
    nexttoken: NexttokenConfig = field(default_factory=NexttokenConfig)
    train: bool = True  # false: only the SVMs at alpha = opt (rank / feasibility experiments)
    seeds: int = 8  # how many seeds: seed, seed + 1, ..., seed + seeds - 1
    seed: int = 0
    batch_size: int = 1000  # seeds trained together; results never depend on it
    device: Device = Device.cpu
    dtype: DType = DType.float64
    threads: int = 1  # torch threads; 1 is fastest for these tiny tensors (PAPER §6.5)
    engine: Engine = Engine.auto  # training engine: fused C kernel where it applies, else torch
    loss: Loss = Loss.logistic  # l(u) of the loss (1/n) sum_i l(Y_i f_i)
    progress_interval: float = 5.0  # seconds between progress lines of a long job (run.log)

    def __post_init__(self) -> None:
        _coerce_enums(self, "")
        _require(self.seeds >= 1, "seeds", "integers >= 1", self.seeds)
        _require(self.seed >= 0, "seed", "integers >= 0", self.seed)
        _input_checks().check_seed_range(self.seed, self.seeds)
        _require(self.batch_size >= 1, "batch_size", "integers >= 1", self.batch_size)
        _require(self.threads >= 1, "threads", "integers >= 1", self.threads)
        _require(
            self.progress_interval >= 0,
            "progress_interval",
            "seconds >= 0",
            self.progress_interval,
        )
        self.experiment = _builtin_or_plugin(
            self.experiment, Experiment, "experiment", load=_experiment_module
        )  # your own: a module with run_job and summary_text (attnsvm/experiments.py)
        if self.parameterization.kind == Parameterization.kq and "nuc" not in self.solver.norms:
            self.solver.norms.insert(1, "nuc")  # (K,Q) is measured against the nuclear SVM
        self._check_geometry()
        self._check_p_model()
        with_v = [Generator.relu, Generator.callable]  # generators that can give a V
        if self.dataset.generator == Generator.file:
            from attnsvm.data.userdata import read_file

            arrays, _, (R, *_) = read_file(self.dataset.path)
            _require(
                self.seed + self.seeds <= R,
                "seed/seeds",
                f"seed + seeds <= {R}, the instances in dataset.path={self.dataset.path}",
                (self.seed, self.seeds),
            )
            with_v += [Generator.file] * ("V" in arrays)
        if self.head.kind == Head.relu and self.dataset.generator not in with_v:
            raise ConfigError(
                f"head=relu needs dataset=relu (dataset.generator=relu draws the head's value "
                f"matrix V; a file or callable may give V); got dataset.generator="
                f"{self.dataset.generator.value}: set dataset=relu, or choose head=linear"
            )
        self._check_nexttoken_pairing()
        if self.device == Device.cuda:
            import torch

            if not torch.cuda.is_available():
                raise ConfigError(
                    f"device='cuda' is invalid: CUDA is not available here (torch "
                    f"{torch.__version__}, torch.cuda.is_available() is False): accepted values "
                    f"are cpu (no CUDA device here); install a CUDA build of torch on a GPU machine"
                )
        if self.engine == Engine.fused:  # only a pinned engine can be refused; auto never is
            self.train_engine  # noqa: B018  raises if engine=fused cannot run here

    def _check_nexttoken_pairing(self) -> None:
        """experiment=nexttoken and dataset=nexttoken only make sense together."""
        exp = self.experiment == Experiment.nexttoken
        data = self.dataset.generator == Generator.nexttoken
        if exp and not data:
            raise ConfigError(
                f"experiment=nexttoken needs dataset=nexttoken (a vocabulary, sequences of ids "
                f"and labels); got dataset.generator={self.dataset.generator.value}"
            )
        if data and not exp:
            raise ConfigError(
                f"dataset=nexttoken is read by experiment=nexttoken only; got experiment="
                f"{plain_name(self.experiment)}: set experiment=nexttoken"
            )
        if exp and self.parameterization.init not in (Init.torch, Init.zeros):
            raise ConfigError(
                f"parameterization.init={self.parameterization.init.value} is invalid for "
                f"experiment=nexttoken: accepted values are torch, zeros"
            )
        if exp and self.optimizer.kind not in (Optimizer.ngd, Optimizer.gd):
            raise ConfigError(
                f"optimizer.kind={plain_name(self.optimizer.kind)} is invalid for "
                f"experiment=nexttoken: accepted values are ngd, gd"
            )
        if exp and self.device != Device.cpu:
            raise ConfigError(
                f"device={self.device.value} is invalid for experiment=nexttoken (it trains on "
                f"the cpu): accepted values are cpu"
            )

    def _check_geometry(self) -> None:
        """Optimizers defined for one matrix, norms read only by experiment=gd."""
        kind = self.optimizer.kind
        if kind in W_ONLY_OPTIMIZERS and self.parameterization.kind != Parameterization.w:
            raise ConfigError(
                f"optimizer.kind={kind.value} steps one matrix W (FOLLOWUPS.md §3); got "
                f"parameterization={self.parameterization.kind.value}: set parameterization=w, "
                f"or choose optimizer.kind in ngd, gd, sign, adam, spectral"
            )
        default = ["fro", "nuc"]
        if self.experiment != Experiment.gd and self.solver.norms not in (default, ["fro"]):
            raise ConfigError(
                f"solver.norms={self.solver.norms} is read by experiment=gd only; "
                f"experiment={plain_name(self.experiment)} solves its own SVMs: drop solver.norms"
            )
        if self.head.train and self.experiment != Experiment.gd:
            raise ConfigError(
                f"head.train=true is implemented for experiment=gd; got "
                f"experiment={plain_name(self.experiment)}"
            )

    def _check_p_model(self) -> None:
        """The p-model, the published examples and the loss option: where each is defined."""
        kind, ds = self.parameterization.kind, self.dataset
        if kind == Parameterization.p:
            fits = [  # key, its value, whether it fits, the accepted values
                ("experiment", plain_name(self.experiment), self.experiment == Experiment.gd, "gd"),
                ("dataset.attention", ds.attention.value, ds.attention == Attention.cross, "cross"),
                (
                    "parameterization.init",
                    self.parameterization.init.value,
                    self.parameterization.init != Init.cone,
                    "torch, zeros, normal, published",
                ),
                ("head.kind", plain_name(self.head.kind), self.head.kind == Head.linear, "linear"),
            ]
            for key, value, ok, accepted in fits:
                if not ok:
                    raise ConfigError(
                        f"parameterization=p needs {key} in {accepted}; got {key}={value}"
                    )
            M = self.parameterization.key_query
            if M is not None and len(M) != ds.d:
                raise ConfigError(
                    f"parameterization.key_query must be a {ds.d}x{ds.d} matrix (dataset.d="
                    f"{ds.d}); got {len(M)}x{len(M[0])}"
                )
        if self.parameterization.init == Init.published:
            if ds.generator != Generator.maxmargin or kind != Parameterization.p:
                raise ConfigError(
                    "parameterization.init=published starts from the inits of the published "
                    "examples: it needs dataset=maxmargin and parameterization=p; got "
                    f"dataset.generator={ds.generator.value}, parameterization={kind.value}"
                )
        if ds.generator == Generator.maxmargin:
            from attnsvm.data.maxmargin import EXAMPLES

            if kind != Parameterization.p:
                raise ConfigError(
                    f"dataset=maxmargin holds the examples of the p-model: it needs "
                    f"parameterization=p; got parameterization={kind.value}"
                )
            count = len(EXAMPLES[ds.example].seeds)
            _require(
                self.seed + self.seeds <= count,
                "seed/seeds",
                f"seed + seeds <= {count}, the published inits of dataset.example={ds.example}"
                f" (seeds={count - self.seed})",
                (self.seed, self.seeds),
            )
        if self.optimizer.gradient != Gradient.exact and self.experiment != Experiment.gd:
            raise ConfigError(
                f"optimizer.gradient={self.optimizer.gradient.value} is implemented for "
                f"experiment=gd; got experiment={plain_name(self.experiment)}"
            )
        if self.loss != Loss.logistic and self.experiment != Experiment.gd:
            raise ConfigError(
                f"loss={self.loss.value} is implemented for experiment=gd; got experiment="
                f"{plain_name(self.experiment)}: set loss=logistic"
            )

    @property
    def train_engine(self) -> Engine | None:
        """The engine that trains: ``auto`` resolved (fused where it applies, else torch); None
        when the job trains nothing (``train=false``). The job hash uses this, not ``engine``."""
        from attnsvm.train.fused import resolve_engine

        return resolve_engine(
            self.engine,
            self.device,
            self.dtype,
            self.head.kind,
            self.experiment,
            self.train,
            self.optimizer.kind,
            self.head.train,
            self.parameterization.kind,
            self.loss,
            self.optimizer.gradient,
        )

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seed, self.seed + self.seeds))


def to_run_config(cfg: DictConfig) -> RunConfig:
    """Convert a composed (Hydra) config into a validated RunConfig; Hydra's own keys dropped."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    plain.pop("hydra", None)
    plain.pop("sweep", None)
    merged = OmegaConf.merge(OmegaConf.structured(RunConfig), plain)
    return OmegaConf.to_object(merged)


_OVERRIDE = re.compile(r"^(?P<key>[A-Za-z_][\w.]*)=")  # key=value; not +key, ~key, group/x
_NOT_SCHEMA = ("hydra", "sweep", "sweeps")  # Hydra's own keys and the sweep definitions


def check_override_keys(overrides: list[str]) -> None:
    """Fail on an overridden key that the schema lacks, listing the keys it accepts.

    Hydra rejects such a key too, but without saying which keys exist. Appending (``+key``),
    deleting (``~key``) and Hydra's own options are left to Hydra.

        check_override_keys(["dataset.dd=3"])  # ConfigError: ... accepted keys of dataset: ...
    """
    schema = OmegaConf.structured(RunConfig)
    for arg in overrides:
        match = _OVERRIDE.match(arg)
        if match is None or match["key"].split(".")[0] in _NOT_SCHEMA:
            continue
        node, path = schema, []
        for part in match["key"].split("."):
            if not isinstance(node, DictConfig):
                break
            if part not in node:
                where = f" of {'.'.join(path)}" if path else ""
                raise ConfigError(
                    f"unknown key {match['key']!r}: accepted keys{where} are {', '.join(node)}"
                )
            node, path = node[part], [*path, part]


def maxmargin_setting(what: str, value: str):
    """``${maxmargin:what,value}`` in sweeps/maxmargin.yaml: ``starts`` of an example (how many
    seeds it has), whether it trains the head (``joint``), and per dtype the optimizer's
    ``eps`` and ``gradient``: float64 follows the theory (exact gradient, eps 0), float32 the
    published notebooks (autograd, eps 1e-9)."""
    from attnsvm.data.maxmargin import EXAMPLES

    table = {
        "starts": lambda ex: len(EXAMPLES[ex].seeds),
        "joint": lambda ex: ex.startswith("joint"),
        "eps": lambda dtype: 0.0 if dtype == DType.float64.value else 1e-9,
        "gradient": lambda dtype: (
            (Gradient.exact if dtype == DType.float64.value else Gradient.autograd).value
        ),
    }
    return table[what](value)


def register_configs() -> None:
    """Register the schemas in Hydra's ConfigStore; YAML options in conf/ extend them."""
    from hydra.core.config_store import ConfigStore

    OmegaConf.register_new_resolver("maxmargin", maxmargin_setting, replace=True)

    cs = ConfigStore.instance()
    cs.store(name="base_config", node=RunConfig)
    for group, node in [
        ("dataset", DatasetConfig),
        ("parameterization", ParameterizationConfig),
        ("optimizer", OptimizerConfig),
        ("solver", SolverConfig),
        ("head", HeadConfig),
        ("metrics", MetricsConfig),
        ("multitoken", MultitokenConfig),
        ("regpath", RegpathConfig),
        ("nexttoken", NexttokenConfig),
    ]:
        cs.store(group=group, name=f"base_{group}", node=node)
