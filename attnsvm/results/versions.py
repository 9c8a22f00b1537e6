"""Versions recorded next to every result."""

import platform

import cvxpy
import numpy
import scipy
import torch


def versions() -> dict:
    import clarabel
    import scs

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "cvxpy": cvxpy.__version__,
        "clarabel": clarabel.__version__,
        "scs": scs.__version__,
    }
