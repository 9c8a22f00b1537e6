"""Local convergence from a cone (``parameterization.init=cone``): start GD at
c W^mm_alpha / ||W^mm_alpha|| + noise for a locally-optimal alpha that is not opt, to check the
local-convergence theorem directly (GD should then converge in direction to W^mm_alpha).

alpha is searched per seed: first every single-sequence deviation from opt (sequence i takes
its t-th best token, best first), then random token choices, until a feasible, locally
optimal alpha != opt is found (``svm.is_locally_optimal``). For (K,Q) the start is the
balanced factorisation K = U sqrt(S), Q = V sqrt(S) of c W^mm_*,alpha / ||W^mm_*,alpha||.
A seed without such alpha starts from c W^mm / ||W^mm|| (alpha = opt) and says so in
``cone_found``.

    python -m attnsvm.run parameterization.init=cone parameterization.cone_scale=100 dataset.d=4
"""

from __future__ import annotations

import numpy as np
import torch

from attnsvm.config.enums import Parameterization
from attnsvm.config.schema import RunBase
from attnsvm.data.generators import Instances
from attnsvm.svm import solve as svm
from attnsvm.svm.masked import w_mm_masked
from attnsvm.svm.norm_names import FEASIBILITY
from attnsvm.train.loop import INIT_SEED_OFFSET, Params
from attnsvm.train.parameterizations import SVM_NORM

MAX_TRIES = 200  # candidate alphas per seed


def _candidates(gamma: np.ndarray, opt: np.ndarray, seed: int):
    n, T = gamma.shape
    order = np.argsort(-gamma, axis=-1)  # (n, T) tokens best first
    for rank in range(1, T):
        for i in range(n):
            alpha = opt.copy()
            alpha[i] = order[i, rank]
            yield alpha
    rng = np.random.default_rng(seed)
    while True:
        yield rng.integers(0, T, size=n)


def find_local_alpha(X, Z, gamma, opt, cfg, seed: int, mask=None):
    """A feasible, locally optimal alpha != opt and its W^mm_alpha, or (None, None)."""
    visible = np.ones_like(gamma, bool) if mask is None else mask
    for k, alpha in enumerate(_candidates(gamma, opt, seed)):
        if k >= MAX_TRIES:
            break
        if np.array_equal(alpha, opt) or not visible[np.arange(len(alpha)), alpha].all():
            continue
        sol = w_mm_masked(X, Z, alpha, mask, cfg, FEASIBILITY)
        if sol.ok and svm.is_locally_optimal(sol, gamma, alpha, cfg):
            return alpha, sol
    return None, None


def cone_params(cfg: RunBase, inst: Instances) -> tuple[Params, list[dict]]:
    """Per-seed starts c W^mm_alpha / ||.|| + init_scale N(0, 1), and what was found."""
    pcfg, scfg = cfg.parameterization, cfg.solver
    kq = pcfg.kind == Parameterization.kq
    d = inst.X.shape[-1]
    m = pcfg.m or d
    starts, info = [], []
    for r, seed in enumerate(inst.seeds):
        X, Z, gamma = (t[r].cpu().double().numpy() for t in (inst.X, inst.Z, inst.gamma))
        opt = inst.opt[r].cpu().numpy()
        mask = None if inst.mask is None else inst.mask[r].cpu().numpy()
        alpha, sol = find_local_alpha(X, Z, gamma, opt, scfg, seed, mask)
        found = alpha is not None
        if not found:
            alpha, sol = opt, w_mm_masked(X, Z, opt, mask, scfg, FEASIBILITY)
        W = sol.W if sol is not None and sol.ok else np.zeros((d, d))
        if kq and sol is not None and sol.ok:
            nuc = w_mm_masked(X, Z, alpha, mask, scfg, SVM_NORM[Parameterization.kq])
            W = nuc.W if nuc.ok else W
        W = pcfg.cone_scale * W / max(np.linalg.norm(W), 1e-300)
        g = torch.Generator().manual_seed(seed + INIT_SEED_OFFSET)
        if kq:
            U, S, Vt = np.linalg.svd(W)
            K = U[:, :m] * np.sqrt(S[:m]) + pcfg.init_scale * torch.randn(d, m, generator=g).numpy()
            Q = Vt[:m].T * np.sqrt(S[:m]) + pcfg.init_scale * torch.randn(d, m, generator=g).numpy()
            starts.append((K, Q))
        else:
            starts.append((W + pcfg.init_scale * torch.randn(d, d, generator=g).numpy(),))
        info.append({"cone_found": found, "cone_alpha": ",".join(map(str, alpha))})

    def stack(k):
        return torch.as_tensor(np.stack([s[k] for s in starts]), dtype=inst.X.dtype).to(
            inst.X.device
        )

    params = Params(K=stack(0), Q=stack(1)) if kq else Params(W=stack(0))
    return params, info
