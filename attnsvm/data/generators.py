"""Problem instances, batched over seeds: X (R, n, T, d), Y (R, n), Z (R, n, d), v (R, d).

The published generator (docs/math.md#the-published-data) is followed draw for draw, in float32 on
the CPU with one ``torch.Generator`` per seed, so seed s is exactly the published notebooks'
instance s; tensors are converted to the run's dtype and device afterwards. A seed's instance never
depends on which other seeds are drawn with it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from attnsvm.config.enums import Attention
from attnsvm.config.schema import DatasetBase
from attnsvm.data import sets
from attnsvm.kernel.batchops import dot_last, matmul, sum_last


@dataclass
class Instances:
    """R problem instances; ``opt`` are the globally optimal token ids argmax_t gamma_it."""

    seeds: list[int]
    X: torch.Tensor  # (R, n, T, d) tokens, unit rows
    Y: torch.Tensor  # (R, n) labels in {-1, +1}
    Z: torch.Tensor  # (R, n, d) queries z_i
    v: torch.Tensor  # (R, d) linear head
    gamma: torch.Tensor  # (R, n, T) token scores Y_i v^T x_it (ReLU head: Y_i 1^T ReLU(V^T x_it))
    opt: torch.Tensor  # (R, n) argmax_t gamma_it
    V: torch.Tensor | None = None  # (R, d, d) ReLU-head value matrix, ||V||_F = 1
    mask: torch.Tensor | None = None  # (R, n, T) visible tokens (sequential/causal attention)
    keys: torch.Tensor | None = None  # (R, n, T, d) x~_it = M x_it of the p-model; None: X
    p0: torch.Tensor | None = None  # (R, d) published starts of p (dataset=maxmargin)

    @property
    def R(self) -> int:
        return self.X.shape[0]

    @property
    def K(self) -> torch.Tensor:
        """(R, n, T, d) what attention scores: the keys x~ = M x (p-model), else the tokens."""
        return self.X if self.keys is None else self.keys

    def p_model_view(self, M: torch.Tensor) -> Instances:
        """The p-model as a W-model: keys x~_it = M x_it and the one query z_i = e_1, so that
        W = p e_1^T scores x~_it^T p and the W-SVM at (x~, e_1) is the p-SVM in column 0.
        The keys are formed on the CPU (as the scores are: ``finish_instances``), then moved."""
        X, M = self.X.cpu(), M.to(dtype=self.X.dtype, device="cpu")
        keys = matmul(X, M.T.expand(*X.shape[:2], *M.shape)).to(self.X.device)  # (R, n, T, d)
        Z = torch.zeros_like(self.Z)
        Z[..., 0] = 1.0
        return dataclasses.replace(self, keys=keys, Z=Z)

    def select(self, idx: list[int]) -> Instances:
        """The sub-batch at positions ``idx``."""
        ix = torch.as_tensor(idx, dtype=torch.long)
        return Instances(
            seeds=[self.seeds[i] for i in idx],
            **{
                k: getattr(self, k)[ix.to(self.X.device)]
                for k in ("X", "Y", "Z", "v", "gamma", "opt")
            },
            V=None if self.V is None else self.V[ix.to(self.X.device)],
            **{
                k: None if getattr(self, k) is None else getattr(self, k)[ix.to(self.X.device)]
                for k in ("mask", "keys", "p0")
            },
        )


def published_instance(
    seed: int, n: int, T: int, d: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One seed of the published generator: draws v, Y, X, Z in that order (float32)."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(d, generator=g)
    v = v / torch.norm(v)
    Y = 2 * torch.ones(n) * (torch.randn(n, generator=g) > 0) - 1
    X = torch.randn((n, T, d), generator=g)
    X = X / torch.norm(X, dim=-1, keepdim=True)
    Z = torch.randn((n, d), generator=g)
    Z = Z / torch.norm(Z, dim=-1, keepdim=True)
    return X, Y, Z, v


def queries(X: torch.Tensor, Z: torch.Tensor, attention: Attention, query_index: int):
    """z_i: its own vector (cross-attention) or the token x_{i, query_index} (self-attention)."""
    if attention == Attention.self:
        return X[..., query_index, :].clone()
    return Z


def flatten_queries(X: torch.Tensor, Y: torch.Tensor, causal: bool):
    """Sequential attention's rows, every token a query (their masked SVM: svm/masked.py).
    X (R, n, T, d), Y (R, n) -> X (R, nT, T, d), Z (R, nT, d), Y (R, nT), mask (R, nT, T)."""
    R, n, T, d = X.shape
    Xq = X.unsqueeze(2).expand(R, n, T, T, d).reshape(R, n * T, T, d)
    Z = X.reshape(R, n * T, d)  # query (i, k) is x_ik
    vis = torch.ones(T, T, dtype=torch.bool)
    if causal:
        vis = torch.tril(vis)  # row k: tokens t <= k
    mask = vis.repeat(n, 1).expand(R, n * T, T).clone()
    return Xq.contiguous(), Z.contiguous(), Y.repeat_interleave(T, dim=1), mask


def random_instances(cfg: DatasetBase, seeds: list[int]):
    """The published random generator for every seed, stacked (float32 draws)."""
    draws = [published_instance(s, cfg.n, cfg.T, cfg.d) for s in seeds]
    return tuple(torch.stack([dr[k] for dr in draws]) for k in range(4))


def relu_instance(seed: int, n: int, T: int, d: int):
    """One seed of the published ReLU-head generator: V, X, Y, Z in that order (float32).

    V ~ N(0, I) (d, d) scaled to ||V||_F = 1; v = 1/sqrt(d) is a placeholder (not drawn).
    """
    g = torch.Generator().manual_seed(seed)
    V = torch.randn((d, d), generator=g)
    V = V / torch.norm(V)
    X = torch.randn((n, T, d), generator=g)
    X = X / torch.norm(X, dim=-1, keepdim=True)
    Y = 2 * torch.ones(n) * (torch.randn(n, generator=g) > 0) - 1
    Z = torch.randn((n, d), generator=g)
    Z = Z / torch.norm(Z, dim=-1, keepdim=True)
    return X, Y, Z, torch.ones(d) / d**0.5, V


def relu_instances(cfg: DatasetBase, seeds: list[int]):
    """The ReLU-head generator for every seed, stacked: (X, Y, Z, v, V) in float32."""
    draws = [relu_instance(s, cfg.n, cfg.T, cfg.d) for s in seeds]
    return tuple(torch.stack([dr[k] for dr in draws]) for k in range(5))


def orthonormal_instances(cfg: DatasetBase, seeds: list[int]):
    """Orthonormal tokens (T <= d) with Y = +1, for the lambda head: v, X, Z drawn per seed.

    The tokens of sequence i are the right singular vectors of a Gaussian (T, d) matrix.
    """
    out = []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)
        v = torch.randn(cfg.d, generator=g)
        v = v / torch.norm(v)
        G = torch.randn((cfg.n, cfg.T, cfg.d), generator=g)
        X = torch.linalg.svd(G.double(), full_matrices=False).Vh.float()  # (n, T, d)
        Z = torch.randn((cfg.n, cfg.d), generator=g)
        Z = Z / torch.norm(Z, dim=-1, keepdim=True)
        out.append((X, torch.ones(cfg.n), Z, v))
    return tuple(torch.stack([o[k] for o in out]) for k in range(4))


# T -> (generator seed of the published picture, token noise std); the paths sweep
# (docs/math.md#global-convergence)
PATHS_LAYOUTS = {3: (1, 0.3), 5: (3, 0.5)}


def paths_instance(seed: int, T: int) -> tuple[torch.Tensor, ...]:
    """One 2-D path data set (n = 2, d = 2), hand-placed as in the published path pictures.

    Draws v, then X, then Z from one generator; Y = (+1, +1) and tokens are not normalised.
    T = 3: sequence 1 is a noisy cluster around (-1, 0), sequence 2 around (1, 0).
    T = 5: token 0 of sequence 1 (2) sits at (1, 0.5) ((1, -0.5)), the others cluster at (-1, 0).
    Generator seed ``published + seed``, so seed 0 is the published data set.
    """
    base, scale = PATHS_LAYOUTS[T]
    g = torch.Generator().manual_seed(base + seed)
    v = torch.randn(2, generator=g)
    v = v / torch.norm(v)
    Y = torch.ones(2)
    X = scale * torch.randn((2, T, 2), generator=g)  # (n, T, d)
    if T == 3:
        X[0] += torch.tensor([-1.0, 0.0])
        X[1] += torch.tensor([1.0, 0.0])
    else:
        X[0, 0] = torch.tensor([1.0, 0.5])
        X[1, 0] = torch.tensor([1.0, -0.5])
        X[:, 1:] += torch.tensor([-1.0, 0.0])
    Z = torch.randn((2, 2), generator=g)
    Z = Z / torch.norm(Z, dim=-1, keepdim=True)
    return X, Y, Z, v


def paths_instances(cfg: DatasetBase, seeds: list[int]):
    """The 2-D path data sets (n = 2, d = 2, T = 3 or 5: dataset=paths checks) for every seed."""
    draws = [paths_instance(s, cfg.T) for s in seeds]
    return tuple(torch.stack([dr[k] for dr in draws]) for k in range(4))


# the published 2-D joint-training example (AttentionMD, docs/math.md#mirror-descent-and-lp-svms):
# queries x_i0
JOINT2D_X = [[[-2.7, 1.2], [1.4, 2.1], [1.3, -0.1]], [[0.4, -2.2], [-1.1, -0.4], [0.9, 0.1]]]


def joint2d_instances(cfg: DatasetBase, seeds: list[int]):
    """The same hand-placed data for every seed: X (2, 3, 2), Y = (1, -1), z_i = x_i0,
    v = 0 (the head starts at zero and is trained: head.train=true)."""
    X = torch.tensor(JOINT2D_X)
    draw = (X, torch.tensor([1.0, -1.0]), X[:, 0].clone(), torch.zeros(2))
    return tuple(torch.stack([t] * len(seeds)) for t in draw)


def relu_accepted_seeds(cfg: DatasetBase, first: int, count: int) -> list[int]:
    """The ReLU-head generator skips instances whose labels are all +1 (the published notebook
    draws further seeds until enough are accepted)."""
    seeds, seed = [], first
    while len(seeds) < count:
        if bool((relu_instance(seed, cfg.n, cfg.T, cfg.d)[1] < 0).any()):
            seeds.append(seed)
        seed += 1
    return seeds


def accepted_seeds(cfg: DatasetBase, first: int, count: int) -> list[int]:
    """The first ``count`` seeds from ``first`` on that the data set accepts (its
    ``accepted_seeds``; every seed where it declares none)."""
    accept = sets.hook(sets.name_of(cfg), "accepted_seeds")
    return list(range(first, first + count)) if accept is None else accept(cfg, first, count)


def make_instances(
    cfg: DatasetBase,
    seeds: list[int],
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
    draw=None,
) -> Instances:
    """Draw the instances of ``seeds`` with the configured data set and stack them (``draw``:
    the data set's draw where its entry names none, an experiment's own data)."""
    name = sets.name_of(cfg)
    draw = draw or sets.hook(name, "instances")
    if draw is None:
        raise NotImplementedError(f"dataset={name} is drawn by its own experiment only")
    X, Y, Z, v, *rest = (t.to(dtype) for t in draw(cfg, seeds))
    extra = dict(zip(sets.entry(name).extra, rest, strict=False))
    mask = None
    if cfg.attention == Attention.sequential:  # every token a query: (i, k) rows, n -> n T
        X, Z, Y, mask = flatten_queries(X, Y, cfg.causal)
    else:
        Z = queries(X, Z, cfg.attention, cfg.query_index)
    inst = finish_instances(seeds, X, Y, Z, v, device, V=extra.pop("V", None), mask=mask)
    for key, tensor in extra.items():  # e.g. p0, the published starts
        setattr(inst, key, tensor.to(device=device))
    return inst


def finish_instances(seeds, X, Y, Z, v, device, V=None, mask=None) -> Instances:
    """Derive the token scores and optimal tokens on the CPU, then move all to ``device``.

    With a ReLU-head matrix V the score is gamma_it = Y_i 1^T ReLU(V^T x_it)
    (docs/math.md#the-published-data); hidden tokens (``mask`` false) score -inf, so opt is always
    visible. Scoring on the CPU (batch-invariant products) makes opt the same on every device, not
    only X, Y, Z, v."""
    X, Y, Z, v = (t.cpu() for t in (X, Y, Z, v))
    if V is None:
        gamma = Y[..., None] * dot_last(X, v[:, None, None, :])  # (R, n, T)
    else:
        V = V.cpu()
        relu = torch.relu(matmul(X, V.unsqueeze(1)))  # (R, n, T, d) ReLU(V^T x_it)
        gamma = Y[..., None] * sum_last(relu)  # (R, n, T)
    if mask is not None:
        mask = mask.cpu()
        gamma = gamma.masked_fill(~mask, float("-inf"))
    opt = gamma.argmax(dim=-1)
    X, Y, Z, v, gamma, opt = (t.to(device) for t in (X, Y, Z, v, gamma, opt))
    V, mask = (None if t is None else t.to(device) for t in (V, mask))
    return Instances(seeds, X, Y, Z, v, gamma, opt, V=V, mask=mask)
