"""What each parameterization's GD direction is measured against: the SVM norm of its
implicit bias (docs/math.md). W and the p-model: the Frobenius SVM W^mm (a step rule's
geometry may point elsewhere: attnsvm/train/step_rules.py); (K,Q): the nuclear-norm SVM
W^mm_*, which resolution therefore always adds to ``solver.norms``.
"""

from __future__ import annotations

from attnsvm.config.enums import Parameterization

SVM_NORM = {Parameterization.w: "fro", Parameterization.kq: "nuc", Parameterization.p: "fro"}


def svm_norm(kind: Parameterization) -> str:
    return SVM_NORM[Parameterization(kind)]
