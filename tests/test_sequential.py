"""Sequential/causal attention: mask respected in the softmax, SVM constraints per query."""

import cvxpy as cp
import numpy as np
import pytest
import torch

from attnsvm.composition import DatasetConfig
from attnsvm.config import (
    Attention,
    Backend,
    HeadConfig,
    OptimizerConfig,
    ParameterizationConfig,
    SolverConfig,
)
from attnsvm.data.generators import make_instances
from attnsvm.svm.masked import masked_problem, w_mm_masked
from attnsvm.svm.solve import SVMSolution, w_mm_nuc, w_mm_nuc_batch
from attnsvm.svm.status import seed_status
from attnsvm.train.heads import make_head
from attnsvm.train.loop import loss_and_grad_w, softmax_probs, train
from bits import assert_tensors_identical

SEQ = dict(n=2, T=4, d=6, attention=Attention.sequential)


def test_causal_mask_hides_future_tokens():
    inst = make_instances(DatasetConfig(**SEQ, causal=True), [0])
    assert inst.X.shape == (1, 8, 4, 6) and inst.Z.shape == (1, 8, 6)
    W = torch.randn(1, 6, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    s = softmax_probs(W, inst.X, inst.Z, inst.mask)
    future = ~torch.tril(torch.ones(4, 4, dtype=torch.bool)).repeat(2, 1)
    assert (s[0][future] == 0).all() and torch.allclose(s.sum(-1), torch.ones(1, 8).double())
    # changing the last token of each sequence changes no output of an earlier query
    X2 = inst.X.clone()
    X2[:, :, -1] = torch.roll(X2[:, :, -1], 1, dims=-1)
    s2 = softmax_probs(W, X2, inst.Z, inst.mask)
    early = torch.tensor([k < 3 for _ in range(2) for k in range(4)])
    assert torch.equal(s[0, early, :3], s2[0, early, :3])
    assert (inst.opt[0, ~early] >= 0).all() and (inst.opt[0] <= torch.arange(4).repeat(2)).all()


def test_masked_gradient_matches_autograd():
    inst = make_instances(DatasetConfig(**SEQ, causal=True), [0, 1])
    head = make_head(HeadConfig(), inst)
    W = torch.randn(2, 6, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    _, _, grad = loss_and_grad_w(W, inst, head)
    Wg = W.clone().requires_grad_(True)
    s = softmax_probs(Wg, inst.X, inst.Z, inst.mask)
    loss = torch.nn.functional.softplus(-inst.Y * head.output(s)).mean(-1).sum()
    (auto,) = torch.autograd.grad(loss, Wg)
    np.testing.assert_allclose(grad.numpy(), auto.numpy(), atol=1e-13)


def _explicit_svm(X, Z, alpha, mask):
    W = cp.Variable((X.shape[-1], X.shape[-1]))
    cons = [
        (X[i, alpha[i]] - X[i, t]) @ W @ Z[i] >= 1
        for i in range(len(alpha))
        for t in range(X.shape[1])
        if mask[i, t] and t != alpha[i]
    ]
    cp.Problem(cp.Minimize(cp.sum_squares(W)), cons).solve(solver="CLARABEL")
    return W.value


def test_sequential_svm_constraints_hold_and_match_the_explicit_model():
    for causal in (False, True):
        inst = make_instances(DatasetConfig(**SEQ, causal=causal), [3])
        X, Z, opt, mask = (t[0].numpy() for t in (inst.X, inst.Z, inst.opt, inst.mask))
        sol = w_mm_masked(X, Z, opt, mask, SolverConfig(), "fro")
        assert sol.ok
        m = sol.margins
        assert np.isinf(m[~mask]).all()
        visible = mask & (np.arange(4)[None, :] != opt[:, None])
        assert m[visible].min() > 1 - 1e-8 and abs(m[visible].min() - 1) < 1e-8
        np.testing.assert_allclose(sol.W, _explicit_svm(X, Z, opt, mask), atol=1e-6)


def test_gd_on_causal_attention_follows_the_sequential_svm():
    inst = make_instances(DatasetConfig(**SEQ, causal=True), [0])
    traj = train(
        inst,
        make_head(HeadConfig(), inst),
        ParameterizationConfig(),
        OptimizerConfig(steps=1000, checkpoint_every=1000, eps=0.0),
    )
    X, Z, mask = (t[0].numpy() for t in (inst.X, inst.Z, inst.mask))
    sel = traj.selected[-1, 0].numpy()
    sol = w_mm_masked(X, Z, sel, mask, SolverConfig(), "fro")
    W = traj.final_W[0].numpy()
    assert np.sum(W * sol.W) / np.linalg.norm(W) / np.linalg.norm(sol.W) > 0.99


def test_sequential_nuclear_svms_reach_tolerance():
    """The sweep's instances (n=2, T=4, d=8, queries = tokens) are degenerate: 12-17 active
    constraints at a rank-2 solution. The interior point reaches tol=1e-10 on every one
    (iterative refinement of the Schur solve), and agrees with Clarabel."""
    ds = DatasetConfig(n=2, T=4, d=8, attention=Attention.sequential)
    inst = make_instances(ds, list(range(20)))
    X, Z, opt = inst.X.numpy(), inst.Z.numpy(), inst.opt.numpy()
    problems = [(X[r], Z[r], opt[r]) for r in range(20)]
    sols = w_mm_nuc_batch(problems, SolverConfig())
    assert [s.status for s in sols] == ["optimal"] * 20, [s.reason for s in sols]
    for (Xr, Zr, a), sol in zip(problems[:4], sols[:4], strict=True):
        ref = w_mm_nuc(Xr, Zr, a, SolverConfig(backend=Backend.CLARABEL))
        assert sol.margins.min() >= 1 - 1e-9
        nuc = np.linalg.norm(sol.W, "nuc")
        assert nuc == pytest.approx(np.linalg.norm(ref.W, "nuc"), rel=1e-6)


def test_a_failing_svm_shared_by_opt_and_selected_is_named_once():
    bad = SVMSolution("nuc", "inaccurate", W=np.eye(2), reason="stalled")
    ok = SVMSolution("fro", "optimal", W=np.eye(2))
    status, reason = seed_status(True, {"opt": [ok, bad], "selected": [ok, bad]})
    assert (status, reason) == ("inaccurate", "W^mm[nuc] at opt = selected: stalled")
    other = SVMSolution("nuc", "inaccurate", W=np.eye(2), reason="stalled")
    _, reason = seed_status(True, {"opt": [ok, bad], "selected": [ok, other]})
    assert reason == "W^mm[nuc] at opt: stalled; W^mm[nuc] at selected: stalled"


def test_masked_nuclear_svms_same_bits_alone_and_batched():
    """The interior point regularises a failed Schur factorisation per instance: solving the
    causal problems of four seeds together gives each seed's solution alone, bit for bit (it
    once regularised the whole batch when one instance needed it)."""
    inst = make_instances(
        DatasetConfig(attention=Attention.sequential, causal=True, T=4), [0, 1, 2, 3]
    )
    X, Z, opt, mask = (t.numpy() for t in (inst.X, inst.Z, inst.opt, inst.mask))
    probs = [masked_problem(X[r], Z[r], opt[r], mask[r]) for r in range(4)]
    together = w_mm_nuc_batch(probs, SolverConfig(), feasible=[True] * 4)
    for r, prob in enumerate(probs):
        alone = w_mm_nuc_batch([prob], SolverConfig(), feasible=[True])[0]
        assert together[r].status == alone.status == "optimal"
        assert_tensors_identical(
            torch.as_tensor(together[r].W), torch.as_tensor(alone.W), f"seed {r}"
        )
