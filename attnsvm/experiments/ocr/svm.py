"""The output-value SVMs of experiment ``ocr``: which W_OV does gradient descent approach?

For each training example i (every name's fact, the trained names' implications) with context
features z_i = e_name + e_relation and answer y_i, the hard-margin multiclass SVM over the answer
set (every city and animal):

    min ||W||  s.t.  (e_{y_i} - e_y')^T W z_i >= 1  for every answer y' != y_i,

the Frobenius norm (the merged W_OV's implicit bias) and the nuclear norm (the factorized
W_O W_V's). It is attnsvm's attention SVM with X_i = the answers' embeddings, Z_i = z_i and
alpha_i = y_i's place among them, so attnsvm's solvers solve it (a solver's failure is a
solver_error, never an infeasible problem). Held-out implications are never among the
constraints: what each SVM predicts for them is the question.
"""

from __future__ import annotations

import numpy as np
import torch

from attnsvm import metrics
from attnsvm.svm import norms
from attnsvm.svm import solve as svm

from . import data
from .config import Config


def examples(cfg: Config, which: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X (n, A, d), Z (n, d), alpha (n,)) of the training examples (``which="train"``) or of the
    held-out implications (``"heldout"``)."""
    v = data.vocab(cfg)
    eye = np.eye(cfg.d)
    answers = v.answers.numpy()
    n_tr = v.train_names
    if which == "train":
        names = [*range(cfg.names), *range(n_tr)]
        rels = [data.FACT] * cfg.names + [data.IMPL] * n_tr
    else:
        names = list(range(n_tr, cfg.names))
        rels = [data.IMPL] * len(names)
    names_t = torch.tensor(names)
    tok = v.names[names_t].numpy()
    target = np.where(np.array(rels) == data.FACT, v.city_of[names_t], v.animal_of[names_t])
    Z = eye[tok] + eye[rels]
    X = np.broadcast_to(eye[answers], (len(names), len(answers), cfg.d)).copy()
    alpha = np.searchsorted(answers, target)
    return X, Z, alpha


def solve(cfg: Config, solver) -> dict[str, svm.SVMSolution]:
    """The Frobenius and nuclear OV-SVMs of the training examples (the same for every seed)."""
    made = [norms.make_norm("fro", solver), norms.make_norm("nuc", solver)]
    return norms.solve_all(made, [examples(cfg, "train")], solver)[0]


def answer_accuracy(W: np.ndarray | None, cfg: Config, which: str = "heldout") -> float:
    """Share of the examples whose best-scoring answer under W (d, d) is the right one."""
    if W is None:
        return float("nan")
    X, Z, alpha = examples(cfg, which)
    scores = np.einsum("nad,nd->na", X, Z @ W.T)
    return float((scores.argmax(1) == alpha).mean())


def model_margins(Ws: np.ndarray, cfg: Config) -> np.ndarray:
    """(...,) least margin min_i,y' (e_y_i - e_y')^T W z_i of stacked W (..., d, d) over the
    training examples, before any normalization."""
    X, Z, alpha = examples(cfg, "train")
    answers = X[0].argmax(-1)  # (A,) the answer tokens (one-hot rows)
    scores = np.swapaxes(Ws[..., answers, :] @ Z.T, -1, -2)  # (..., n, A)
    right = np.take_along_axis(scores, np.broadcast_to(alpha[:, None], (*scores.shape[:-1], 1)), -1)
    gap = right - scores
    gap[..., np.arange(len(alpha)), alpha] = np.inf
    return gap.min((-1, -2))


def effective(Ws: np.ndarray, qs: np.ndarray, cfg: Config) -> np.ndarray:
    """The block of the trained map from token counts to logits that the SVMs constrain:
    W_OV diag(q) (linear attention; W_OV under softmax, whose weights are normalized) on the
    answer rows and the name and relation columns, zero elsewhere; (..., d, d)."""
    v = data.vocab(cfg)
    M = Ws * qs[..., None, :] if cfg.attention == "linear" else Ws.copy()
    rows = np.zeros(cfg.d, dtype=bool)
    rows[v.answers.numpy()] = True
    cols = np.zeros(cfg.d, dtype=bool)
    cols[v.names.numpy()] = cols[[data.FACT, data.IMPL]] = True
    return np.where(rows[:, None] & cols[None, :], M, 0.0)


def alignment(Ms: np.ndarray, sols: dict[str, svm.SVMSolution]) -> dict[str, np.ndarray]:
    """corr(M, each SVM) over stacked M (..., d, d); NaN where an SVM has no solution."""
    return {f"corr_{k}": metrics.corr(Ms, sol.W) for k, sol in sols.items()}
