"""The ``ocr.*`` keys of experiment ``ocr`` and what each accepts: a leaf schema that imports
nothing of attnsvm but the config's constraints.

python -m attnsvm.run experiment=ocr ocr.ov=merged ocr.rule=gd
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from attnsvm.config.constraints import Interval, NoneOr, Rule, Several, check_constraints
from attnsvm.config.schema import RunBase, SolverConfig

RELATIONS = 2  # relation tokens: 0 asks for the city (a fact), 1 for the animal (an implication)


class OV(str, Enum):
    merged = "merged"  # one d x d matrix W_OV (the official code's --reparameterize_ov: W_V = I)
    factorized = "factorized"  # W_O (d x r) W_V (r x d), both trained


class Attention(str, Enum):
    linear = "linear"  # the paper's: weights q[token], no normalization
    softmax = "softmax"  # softmax(q[token] / sqrt(d)) over the prompt


class StepRule(str, Enum):
    adamw = "adamw"  # the paper's: Adam with decoupled weight decay
    gd = "gd"  # plain gradient descent
    ngd = "ngd"  # each trained tensor along its own normalized gradient (per seed)


class Init(str, Enum):
    identity = "identity"  # the official start: q, W_O all init_scale; W_V = init_scale I
    normal = "normal"  # every trained entry init_scale * N(0, 1)


DEFAULT_LR = {StepRule.adamw: 5e-3, StepRule.gd: 1.0, StepRule.ngd: 0.3}
DEFAULT_WEIGHT_DECAY = {StepRule.adamw: 0.03, StepRule.gd: 0.0, StepRule.ngd: 0.0}
DEFAULT_INIT_SCALE = {StepRule.adamw: 1e-4, StepRule.gd: 0.1, StepRule.ngd: 0.1}


@dataclass
class Config:
    """Out-of-context reasoning with a one-layer attention-only model (docs/ocr.md): smaller
    than the paper's 80 names, 20 cities, 20 animals, 2000 steps (docs/ocr.md has the
    official settings as overrides)."""

    names: int = 40  # name n lives in city n mod cities
    cities: int = 10  # the facts' answers
    animals: int = 10  # city c's animal is animal c mod animals
    noise: int = 5  # noise tokens; the vocabulary adds 2 relation tokens and EOS
    T: int = 16  # prompt length: name, relation, T - 3 noise tokens, EOS last
    train_frac: float = 0.25  # the first round(train_frac * names) names' implications train
    ov: OV = OV.factorized  # merged: one W_OV; factorized: W_O W_V, both trained
    rank: int | None = None  # factorized: the inner width r of W_O W_V (null: d)
    attention: Attention = Attention.linear  # linear: h = q * counts (the paper's); softmax
    init: Init = Init.identity  # identity: the official constant start; normal: scale N(0, 1)
    init_scale: float | None = None  # null: 1e-4 for adamw (the official), 0.1 for gd and ngd
    rule: StepRule = StepRule.adamw  # the step rule (docs/ocr.md)
    lr: float | None = None  # null: 5e-3 for adamw (the paper's), 1 for gd, 0.3 for ngd
    weight_decay: float | None = None  # decoupled (p -= lr wd p); null: 0.03 adamw, 0 else
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # adamw
    eps: float = 1e-8  # adamw's denominator; ngd's g / (||g|| + eps)
    batch: int = 120  # prompts per step and seed: thirds of facts, implications, held-out facts
    steps: int = 1000  # training steps
    checkpoint_every: int = 50  # steps between the trajectory's checkpoints
    eval_prompts: int = 400  # fresh prompts per seed for each accuracy
    rank_frac: float = 0.01  # rank of W_OV: #{sigma_k > rank_frac * sigma_max}

    CONSTRAINTS: ClassVar = {
        **{k: Interval(int, 1) for k in ("cities", "animals", "noise", "steps")},
        "names": Interval(int, 2),
        "T": Interval(int, 4, note="name, relation, EOS and at least one noise token"),
        "train_frac": Interval(float, 0, 1, closed="neither"),
        "rank": NoneOr(Interval(int, 1)),
        "init_scale": NoneOr(Interval(float, 0, closed="neither", finite=True)),
        "lr": NoneOr(Interval(float, 0, closed="neither", finite=True)),
        "weight_decay": NoneOr(Interval(float, 0, finite=True)),
        "betas": Several(Interval(float, 0, 1, closed="left"), 2),
        "eps": Interval(float, 0, finite=True),
        "batch": Interval(int, 3, note="a third each of three kinds of prompt"),
        "checkpoint_every": Interval(int, 1),
        "eval_prompts": Interval(int, 1),
        "rank_frac": Interval(float, 0, 1, closed="neither"),
    }
    RULES: ClassVar = (
        Rule(
            "rank",
            "null with ocr.ov=merged; null or at most d (the vocabulary) with factorized",
            lambda c: (c.rank is None) or (c.ov == OV.factorized and c.rank <= c.d),
            lambda c: f"d = {c.d}",
        ),
        Rule(
            "train_frac",
            "a fraction that leaves at least one name on each side",
            lambda c: 1 <= c.train_names < c.names,
            lambda c: f"{c.train_names} of {c.names} names",
        ),
    )

    def __post_init__(self) -> None:
        check_constraints(self, "ocr")

    @property
    def d(self) -> int:
        """The vocabulary size, the model width (one-hot embeddings)."""
        return RELATIONS + self.cities + self.animals + self.names + self.noise + 1

    @property
    def train_names(self) -> int:
        """How many names' implications train (the first ones)."""
        return round(self.train_frac * self.names)

    @property
    def width(self) -> int:
        """The inner width of W_O W_V (d when merged or rank is null)."""
        return self.rank or self.d

    @property
    def step_size(self) -> float:
        """``lr``, or the rule's default."""
        return self.lr if self.lr is not None else DEFAULT_LR[StepRule(self.rule)]

    @property
    def scale(self) -> float:
        """``init_scale``, or the rule's default."""
        s = self.init_scale
        return s if s is not None else DEFAULT_INIT_SCALE[StepRule(self.rule)]

    @property
    def decay(self) -> float:
        """``weight_decay``, or the rule's default."""
        wd = self.weight_decay
        return wd if wd is not None else DEFAULT_WEIGHT_DECAY[StepRule(self.rule)]


@dataclass
class OcrRun(RunBase):
    """One job of experiment=ocr: the keys every job has, its own group, and the solver of its
    output-value SVMs."""

    experiment: str = "ocr"
    ocr: Config = field(default_factory=Config)
    solver: SolverConfig = field(default_factory=SolverConfig)
