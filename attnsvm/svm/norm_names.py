"""The SVM norms by name: what ``solver.norms`` accepts, light enough for composition to check
it without importing the solvers (attnsvm/svm/norms.py implements each name listed here).

    norm_names(["l3", "nuc"])    # ['fro', 'l3', 'nuc']: the feasibility oracle first
    norm_names(None)             # ['fro', 'nuc']: the default set
    norm_names([])               # ['fro']: the feasibility oracle alone
"""

from __future__ import annotations

import re

from attnsvm.config.checks import require

FROBENIUS = "fro"  # the Frobenius norm's name
NUCLEAR = "nuc"  # the nuclear norm's name (sum of the singular values)
FEASIBILITY = FROBENIUS  # always solved, first: its exact dual decides feasibility for every norm
BUILTIN = (FROBENIUS, NUCLEAR, "max", "spectral")  # besides the entrywise lp norms "l<p>"
DEFAULT = (FROBENIUS, NUCLEAR)  # what a job solves when solver.norms is null (not set)
LP_NORM = re.compile(r"l(?P<p>\d+(\.\d+)?)")  # entrywise lp norm, p >= 1: l1, l1.75, l3


def lp_exponent(name: str) -> float | None:
    """p of an entrywise lp norm's name ("l1.75" -> 1.75), None for any other norm."""
    match = LP_NORM.fullmatch(str(name))
    return float(match["p"]) if match else None


def is_builtin(name: str) -> bool:
    return name in BUILTIN or lp_exponent(name) is not None


def norm_names(names, key: str = "solver.norms") -> list[str]:
    """Built-in names or plug-in paths, without repeats, the feasibility oracle first; None is
    the default set. A plug-in path is imported and checked at resolution."""
    out = [FEASIBILITY]
    for name in map(str, DEFAULT if names is None else names):
        p = lp_exponent(name)
        if p is not None:
            require(p >= 1, key, "l<p> with p >= 1 (l1, l1.75, l3)", name)
        if name not in out:
            out.append(name)
    return out
