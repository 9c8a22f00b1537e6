"""The two models of experiment=benign, their hand-written gradients and the start, all seeds
at once; every reduction, product and exp goes through ``attnsvm.kernel.batchops`` so a seed's
numbers never depend on its batch mates.

two_token:        f(X) = sum_t s_t x_t^T v,   s = softmax(X p)        trained: p, v
token_selection:  f(X) = sum_t s_t x_t^T nu,  s = softmax(X W p)      trained: W, p (nu fixed)

With g_i = dL/df_i and u_i = sum_t s_it (a_it - f_i) x_it (a_it = x_it^T v or x_it^T nu):
dL/dv = sum_i g_i X_i^T s_i, dL/dp = sum_i g_i u_i (two_token); with G = sum_i g_i u_i,
dL/dW = G p^T and dL/dp = W^T G (token_selection). L = mean_i log(1 + exp(-y_i f_i)).
"""

from __future__ import annotations

import math

import torch

from attnsvm.kernel.batchops import elementwise, matmul

from .config import Config, Init, Setting


def head(cfg: Config, dtype, device) -> torch.Tensor:
    """nu = (mu_1 - mu_2) / |mu_1 - mu_2| / s: the official fixed head of token_selection (d,)."""
    nu = torch.zeros(cfg.d, dtype=dtype, device=device)
    nu[0], nu[1] = 1 / (math.sqrt(2) * cfg.signal), -1 / (math.sqrt(2) * cfg.signal)
    return nu


def start(cfg: Config, gens: list, dtype, device) -> dict[str, torch.Tensor]:
    """The trained tensors at step 0, drawn per seed from its TRAIN generator (after its data):
    two_token p, v ~ init_scale N(0, 1); token_selection W ~ U(-1/sqrt(d), 1/sqrt(d)) (Kaiming
    uniform with a = sqrt 5, as torch's Linear and the official code), p = 0; init=normal: every
    entry init_scale N(0, 1)."""
    d, out = cfg.d, {}
    names = ("p", "v") if cfg.setting == Setting.two_token else ("W", "p")
    for name in names:
        shape = (d, d) if name == "W" else (d,)
        parts = []
        for g in gens:
            if cfg.init == Init.normal or cfg.setting == Setting.two_token:
                parts.append(cfg.init_scale * torch.randn(shape, generator=g, dtype=torch.float64))
            elif name == "W":
                u = torch.rand(shape, generator=g, dtype=torch.float64)
                parts.append((2 * u - 1) / math.sqrt(d))
            else:
                parts.append(torch.zeros(shape, dtype=torch.float64))
        out[name] = torch.stack(parts).to(dtype=dtype, device=device)
    return out


def _dot(A: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """A (R, ..., d) times q (R, d) or (d,) -> (R, ...): one sequential dot product per row
    (``batchops.matmul``), whatever the batch."""
    R, d = A.shape[0], A.shape[-1]
    q = q.expand(R, d) if q.dim() == 1 else q
    return matmul(A.reshape(R, -1, d), q[..., None]).reshape(A.shape[:-1])


def ordered_sum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The sum over a short axis ``dim`` added slice by slice in index order: exactly rounded
    adds in a fixed order, so the same bits whatever the batch."""
    parts = x.unbind(dim)
    out = parts[0]
    for part in parts[1:]:
        out = out + part
    return out


def attention_vector(state: dict[str, torch.Tensor]) -> torch.Tensor:
    """q (R, d): the scores are X q (p, or W p)."""
    if "W" in state:
        return _dot(state["W"], state["p"])
    return state["p"]


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis (exact shift by the max, batch-invariant exp and sum)."""
    e = elementwise(torch.exp, scores - scores.max(-1, keepdim=True).values)
    return e / ordered_sum(e, -1)[..., None]


def forward(state, X: torch.Tensor, nu) -> tuple[torch.Tensor, ...]:
    """f (R, m), s (R, m, T), a (R, m, T) with a_t = x_t^T v (or nu), for X (R, m, T, d)."""
    s = softmax(_dot(X, attention_vector(state)))
    a = _dot(X, state["v"] if "v" in state else nu)
    return ordered_sum(s * a, -1), s, a


def logistic(margins: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """mean log(1 + exp(-m)) (R,) and sigmoid(-m) (R, n), batch-invariant."""
    softplus = elementwise(torch.nn.functional.softplus, -margins)
    return ordered_sum(softplus, -1) / margins.shape[-1], elementwise(torch.sigmoid, -margins)


def loss_and_grads(state, X, y, nu) -> tuple:
    """Loss (R,), f (R, n), s (R, n, T) and {name: dL/dname} on the training set."""
    f, s, a = forward(state, X, nu)
    loss, sig = logistic(y * f)
    g = -y * sig / y.shape[-1]  # dL/df_i
    u = ordered_sum((s * (a - f[..., None]))[..., None] * X, -2)  # (R, n, d)
    G = ordered_sum(g[..., None] * u, 1)  # (R, d)
    if "v" in state:
        h = ordered_sum(s[..., None] * X, -2)  # X_i^T s_i (R, n, d)
        return loss, f, s, {"p": G, "v": ordered_sum(g[..., None] * h, 1)}
    W, p = state["W"], state["p"]
    gW = G[:, :, None] * p[:, None, :]
    gp = matmul(G[:, None, :], W)[:, 0]  # W^T G as the row G^T W: W read in place
    return loss, f, s, {"W": gW, "p": gp}


def grad_norm(grads: dict) -> torch.Tensor:
    """The joint Frobenius norm (R,) of the gradients."""
    total = sum(_dot(g.reshape(g.shape[0], 1, -1), g.reshape(g.shape[0], -1))[:, 0]
                for g in grads.values())  # fmt: skip
    return torch.sqrt(total)


def step(state, grads, norm, cfg: Config) -> dict:
    """One step of cfg.rule: x - lr g, or x - lr g / (|g| + eps) with the joint norm (ngd).
    In place (the state and the gradients are overwritten): at d = 2000 a fresh W per step
    cost more than the step's arithmetic; the rounding is that of x - (k g) either way."""
    lr = cfg.step_size
    scale = lr if cfg.rule.value == "gd" else lr / (norm + cfg.eps)
    for name, t in state.items():
        k = scale.reshape((-1,) + (1,) * (t.dim() - 1)) if torch.is_tensor(scale) else scale
        t.sub_(grads[name].mul_(k))
    return state
