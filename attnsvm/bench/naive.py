"""The naive way of doing attnsvm's math, what the published notebooks do: one seed at a time
through an nn-style model and autograd, and one cvxpy model per SVM built constraint by
constraint in the full d x d space. The bench's ratios are against these."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import torch

from attnsvm.svm.norm_names import FROBENIUS


class NaiveAttention(torch.nn.Module):
    """The published notebooks' model: W (or K, Q) as bias-free nn.Linear, linear head v."""

    def __init__(self, d: int, kq: bool):
        super().__init__()
        self.kq = kq
        if kq:
            self.K = torch.nn.Linear(d, d, bias=False)
            self.Q = torch.nn.Linear(d, d, bias=False)
        else:
            self.W = torch.nn.Linear(d, d, bias=False)

    def forward(self, X, Z, v):  # X (n, T, d), Z (n, d), v (d,)
        Wz = self.K(self.Q(Z)) if self.kq else self.W(Z)  # (n, d) rows (W z_i)^T
        s = torch.softmax(torch.einsum("ntd,nd->nt", X, Wz), dim=-1)
        return torch.einsum("nt,ntd,d->n", s, X, v)


def naive_train(X, Y, Z, v, kq: bool, steps: int, lr: float = 0.1, eps: float = 2.22e-16):
    """One seed, autograd, normalized GD: p <- p - lr * grad / (||grad|| + eps)."""
    model = NaiveAttention(X.shape[-1], kq).double()
    for _ in range(steps):
        loss = torch.log1p(torch.exp(-Y * model(X, Z, v))).mean()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad / (p.grad.norm() + eps)
    return model


def naive_svm(X: np.ndarray, Z: np.ndarray, alpha: np.ndarray, norm: str):
    """Per-constraint cvxpy model in the full d x d space, default solver settings: the
    Frobenius norm's (norm_names.FROBENIUS) or else the nuclear norm's."""
    n, T, d = X.shape
    W = cp.Variable((d, d))
    cons = []
    for i in range(n):
        for t in range(T):
            if t != alpha[i]:
                cons.append((X[i, alpha[i]] - X[i, t]) @ W @ Z[i] >= 1)
    # the Frobenius norm as cp.norm builds it for a matrix: the 2-norm of W's entries
    obj = cp.pnorm(cp.vec(W, order="F"), 2) if norm == FROBENIUS else cp.normNuc(W)
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve()
    return prob.status, W.value
