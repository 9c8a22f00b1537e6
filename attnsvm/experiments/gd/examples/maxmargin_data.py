"""The published examples of max-margin token selection
(docs/math.md#max-margin-token-selection-and-a-trained-head), hand-placed data: gd's own
(experiment=gd alone reads dataset=maxmargin; its entry, attnsvm/data/sets/maxmargin.py, declares
the keys, gd's entry this module's draw, resolution, rules and resolvers: examples/__init__.py).

Prompt attention f(X) = v^T X^T softmax(X~ p), X~ = X M^T, trained in p (and in v with
head.train=true). Each example fixes its data, its key-query map M and a list of published
starts; seed s is the s-th start (for ``loss``, the s-th value of C, from p(0) = 0):

    python -m attnsvm.run dataset=maxmargin dataset.example=single parameterization=p \
        parameterization.init=published seeds=6 optimizer.steps=1000 optimizer.eps=0
    python -m attnsvm.run -m +sweeps=maxmargin          # every example, float64 and float32

Examples (``dataset.example``):

* ``single``: one sequence, tokens (-0.1, 1, 1), (1, 0, 0.9), (0, 0, 0.9), v = (0, 0, 1),
  M = diag(1, 1, 0) (the third coordinate is the token's score, hidden from attention);
  p(0) = (0, c, 0) for c in (1, .5, 0, -.5, -1, -1.5). ``single_local``: last token (0, 0, 0).
* ``multi``: n = 3, T = 7, X = 0.2 randn from torch.Generator seeded 0 (float32), token 0
  moved by (1, 0, 0), tokens 1-3 by (-1, 1, 0), tokens 4-6 by (-0.5, -0.5, 0); scores 1 for
  token 0 and 0.5 for the others; p(0) = (c, 0, 0) for the same c.
* ``joint`` / ``joint_relaxed``: n = 3, T = 2, d = 2, M = I, Y = (1, -1, 1), v(0) = (-1, 0),
  p(0) = (0, -1); sequence 3's second token is (0.5, 1) (or (0.5, 1.5): it is then no support
  vector of v^mm and the relaxed p-SVM differs from the ordinary one).
* ``loss``: X = [[(0,0,0), (1,1,C)], [(0,0,0), (1,-1,1)]], Y = (1, 1), v = (0, 0, 1),
  M = diag(1, 1, 0), p(0) = 0, C in (1, ..., 10, 100) by seed; compare loss=correlation with
  loss=logistic.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnsvm.config.checks import ConfigError, fill_shape, require

INITS_C = (1.0, 0.5, 0.0, -0.5, -1.0, -1.5)  # the published starts' free coordinate
LOSS_C = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 100.0)
HIDE_SCORE = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 0.0))  # M = diag(1, 1, 0)


@dataclass
class Example:
    """One published example: X (n, T, d), Y (n,), v (d,), M (d, d) and per seed a start
    p(0) (and a data variant: ``loss`` changes C by seed)."""

    X: torch.Tensor
    Y: torch.Tensor
    v: torch.Tensor
    M: torch.Tensor
    seeds: tuple  # per seed: p(0) (d,), or for ``loss`` the value of C

    def instance(self, seed: int) -> tuple[torch.Tensor, ...]:
        """(X, Y, v, p(0)) of seed ``seed`` (float32, as published)."""
        X, start = self.X.clone(), self.seeds[seed]
        if isinstance(start, float):  # the loss example: C varies, p(0) = 0
            X[0, 1, 2] = start
            start = torch.zeros(X.shape[-1])
        return X, self.Y.clone(), self.v.clone(), start.clone()


def _single(last: tuple[float, float, float]) -> Example:
    X = torch.tensor([[[-0.1, 1.0, 1.0], [1.0, 0.0, 0.9], list(last)]])
    inits = tuple(torch.tensor([0.0, c, 0.0]) for c in INITS_C)
    return Example(X, torch.ones(1), torch.tensor([0.0, 0.0, 1.0]), torch.tensor(HIDE_SCORE), inits)


def _multi() -> Example:
    g = torch.Generator().manual_seed(0)
    X = 0.2 * torch.randn((3, 7, 3), generator=g)
    X[:, 0] += torch.tensor([1.0, 0.0, 0.0])
    X[:, 1:4] += torch.tensor([-1.0, 1.0, 0.0])
    X[:, 4:7] += torch.tensor([-0.5, -0.5, 0.0])
    X[:, 0, 2] = 1.0
    X[:, 1:, 2] = 0.5
    inits = tuple(torch.tensor([c, 0.0, 0.0]) for c in INITS_C)
    return Example(X, torch.ones(3), torch.tensor([0.0, 0.0, 1.0]), torch.tensor(HIDE_SCORE), inits)


def _joint(last_y: float) -> Example:
    X = torch.tensor(
        [[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]], [[0.0, 0.0], [0.5, last_y]]]
    )
    return Example(
        X, torch.tensor([1.0, -1.0, 1.0]), torch.tensor([-1.0, 0.0]), torch.eye(2),
        (torch.tensor([0.0, -1.0]),),
    )  # fmt: skip


def _loss() -> Example:
    X = torch.tensor([[[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], [[0.0, 0.0, 0.0], [1.0, -1.0, 1.0]]])
    return Example(
        X, torch.ones(2), torch.tensor([0.0, 0.0, 1.0]), torch.tensor(HIDE_SCORE), LOSS_C
    )


EXAMPLES = {
    "single": _single((0.0, 0.0, 0.9)),
    "single_local": _single((0.0, 0.0, 0.0)),
    "multi": _multi(),
    "joint": _joint(1.0),
    "joint_relaxed": _joint(1.5),
    "loss": _loss(),
}


def maxmargin_instances(cfg, seeds: list[int]):
    """(X, Y, Z, v, p(0)) stacked over ``seeds`` for ``cfg.example`` (float32). Z is a
    placeholder: the p-model's one query is p itself (``train.p_model_view``)."""
    ex = EXAMPLES[cfg.example]
    draws = [ex.instance(s) for s in seeds]
    X, Y, v, p0 = (torch.stack([dr[k] for dr in draws]) for k in range(4))
    Z = torch.zeros(X.shape[0], X.shape[1], X.shape[-1])
    return X, Y, Z, v, p0


def key_query(cfg_matrix, generator_example: str | None, d: int) -> torch.Tensor:
    """M of x~ = M x: ``parameterization.key_query`` if given, else the example's (dataset=
    maxmargin), else the identity."""
    if cfg_matrix is not None:
        return torch.tensor(cfg_matrix, dtype=torch.float32)
    if generator_example is not None:
        return EXAMPLES[generator_example].M.clone()
    return torch.eye(d)


def resolve_dataset(ds) -> dict:
    """n, T, d of the published example (null) or checked against it."""
    require(ds.example in EXAMPLES, "dataset.example", ", ".join(EXAMPLES), ds.example)
    shape = dict(zip(("n", "T", "d"), EXAMPLES[ds.example].X.shape, strict=True))
    return fill_shape(ds, shape, f"dataset.example={ds.example}")


def maxmargin_setting(what: str, value: str):
    """``${maxmargin:what,value}`` in sweeps/maxmargin.yaml: ``starts`` of an example (how many
    seeds it has), whether it trains the head (``joint``), and per dtype the optimizer's
    ``eps`` and ``gradient``: float64 follows the theory (exact gradient, eps 0), float32 the
    published notebooks (autograd, eps 1e-9)."""
    table = {
        "starts": lambda ex: len(EXAMPLES[ex].seeds),
        "joint": lambda ex: ex.startswith("joint"),
        "eps": lambda dtype: 0.0 if dtype == "float64" else 1e-9,
        "gradient": lambda dtype: "exact" if dtype == "float64" else "autograd",
    }
    return table[what](value)


def check_run(run) -> None:
    """The examples are the p-model's, with as many seeds as published starts."""
    kind = run.parameterization.kind.value
    if kind != "p":
        raise ConfigError(
            f"dataset=maxmargin holds the examples of the p-model: it needs "
            f"parameterization=p; got parameterization={kind}"
        )
    count = len(EXAMPLES[run.dataset.example].seeds)
    require(
        run.seed + run.seeds <= count,
        "seed/seeds",
        f"seed + seeds <= {count}, the published inits of dataset.example={run.dataset.example}"
        f" (seeds={count - run.seed})",
        (run.seed, run.seeds),
    )
