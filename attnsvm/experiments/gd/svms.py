"""gd's SVMs of a batch: every configured norm at the chosen tokens of every seed, spread over
the job's workers and told to its progress reporter; the columns of the SVMs at alpha = opt
(a seed's status from its solutions: attnsvm/svm/status.py)."""

from __future__ import annotations

import time

import numpy as np

from attnsvm.config.schema import RunBase
from attnsvm.data.generators import Instances
from attnsvm.progress import Progress
from attnsvm.svm import norms
from attnsvm.svm import solve as svm
from attnsvm.svm.masked import masked_problem, unmask

from . import limits  # the module, not the package (no cycle)


def seed_mask(inst: Instances, r: int):
    return None if inst.mask is None else inst.mask[r].cpu().numpy()


class Reported:
    """A norm whose every ``solve`` call is told to a progress reporter (attnsvm/progress.py);
    everything else is the norm's own."""

    def __init__(self, norm, report: Progress):
        self.norm, self.report = norm, report

    def __getattr__(self, attr: str):
        return getattr(self.norm, attr)

    def solve(self, problems, cfg, **hints) -> list[svm.SVMSolution]:
        t0 = time.perf_counter()
        solutions = self.norm.solve(problems, cfg, **hints)  # hints: norms.solve_all's
        self.report.solved(self.norm.name, len(problems), time.perf_counter() - t0)
        return solutions


def solve_svms(
    cfg: RunBase,
    inst: Instances,
    alphas: dict[int, np.ndarray],
    report: Progress | None = None,
    where: str = "at opt",
) -> dict:
    """Every solved norm's SVM (attnsvm/svm/norms.py; ``limits.solved_norms``: solver.norms
    and the step rule's limit) for every seed position r in ``alphas`` (r -> alpha (n,)):
    {r: {norm name: SVMSolution}}, spread over ``cfg.threads`` workers.
    Norms that batch (Frobenius, the nuclear interior point) solve a worker's seeds in one
    call, on the job's device (a GPU solves them there); with a visibility mask (sequential
    attention) only visible tokens are constrained. ``report`` hears of each norm's calls,
    as the SVMs ``where``."""
    return solve_svm_sets(cfg, inst, [alphas], report, where)[0]


def solve_svm_sets(
    cfg: RunBase,
    inst: Instances,
    sets: list[dict[int, np.ndarray]],
    report: Progress | None = None,
    where: str = "at opt",
) -> list[dict]:
    """``solve_svms`` of several sets of tokens (e.g. at opt and at the selected tokens) as one
    set of problems: a batched solver pays per call (the interior point's iterations), so one
    call on all of them, split into ``cfg.threads`` shares, beats one call per set per worker.
    On the CPU an instance's answer never depends on its batch mates: the bits are those of one
    call per set (on a GPU, with no batch invariance promised, the last bits may differ)."""
    X, Z = inst.K.cpu().double().numpy(), inst.Z.cpu().double().numpy()  # keys: x~ for p
    items = [(r, alphas[r]) for alphas in sets for r in alphas]
    masks = {r: seed_mask(inst, r) for r, _ in items}
    problems = [masked_problem(X[r], Z[r], alpha, masks[r]) for r, alpha in items]
    solver = limits.solver(cfg)  # solver.norms and the step rule's limit (gd/limits.py)
    names = [norm.name for norm in norms.make_norms(solver)]
    if report is not None and problems:
        report.start_svms(where, {name: len(problems) for name in names})

    alone = cfg.threads <= 1  # one share: its norms report each call; else each share does

    def made():  # one set per worker (solve_spread): a norm may keep compiled models
        each = norms.make_norms(solver)
        return each if report is None or not alone else [Reported(n, report) for n in each]

    def done(share: list[dict]) -> None:
        for name in names:
            report.solved(name, len(share), sum(sols[name].seconds for sols in share))

    hear = None if report is None or alone else done
    solved = norms.solve_spread(made, problems, solver, cfg.threads, cfg.device.value, hear)
    for (r, alpha), sols in zip(items, solved, strict=True):
        for sol in sols.values():
            unmask(sol, X[r], Z[r], alpha, masks[r])
    out, start = [], 0
    for alphas in sets:  # items run set by set
        out.append(dict(zip(alphas, solved[start : start + len(alphas)], strict=True)))
        start += len(alphas)
    return out


def opt_svm_columns(cfg: RunBase, at_opt: dict[str, svm.SVMSolution]) -> dict:
    """The columns of the SVMs at alpha = opt: feasibility, ranks, statuses, norms."""
    cols = {"feasible": at_opt["fro"].status != svm.INFEASIBLE}
    named = [(norms.column(name), sol) for name, sol in at_opt.items()]
    cols.update({f"rank_{c}": sol.rank for c, sol in named})
    cols.update({f"svm_status_{c}": sol.status for c, sol in named})
    cols.update({f"svm_path_{c}": sol.path for c, sol in named})
    values = {n.name: n.value for n in norms.make_norms(limits.solver(cfg))}
    cols.update(
        {f"norm_{c}": float(values[sol.norm](sol.W)) if sol.ok else None for c, sol in named}
    )
    return cols
