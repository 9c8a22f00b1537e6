"""A seed's status from its SVM solutions, worst first: what every experiment that solves
attention SVMs per seed writes in its ``status`` and ``reason`` columns."""

from __future__ import annotations

from attnsvm.svm import solve as svm


def seed_status(finite: bool, solutions: dict[str, list[svm.SVMSolution]]) -> tuple[str, str]:
    """Worst-first: diverged, solver_error, infeasible (alpha = opt), inaccurate, ok.

    ``solutions`` maps where the SVMs were solved ("opt", "selected") to them; a solution
    shared by both (GD selected opt) is named once, as "at opt = selected"."""
    if not finite:
        return "diverged", "non-finite parameters or loss during training"
    named: dict[int, tuple[svm.SVMSolution, list[str]]] = {}
    for where, sols in solutions.items():
        for sol in sols:
            named.setdefault(id(sol), (sol, []))[1].append(where)
    for status in (svm.SOLVER_ERROR, svm.INFEASIBLE, svm.INACCURATE):
        bad = [(sol, where) for sol, where in named.values() if sol.status == status]
        if bad:
            return status, "; ".join(
                f"W^mm[{sol.norm}] at {' = '.join(where)}: {sol.reason}" for sol, where in bad
            )
    return "ok", ""
