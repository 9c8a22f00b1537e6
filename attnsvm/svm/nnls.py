"""Non-negative least squares, without importing ``scipy.optimize``.

The SVM stage needs one routine of scipy.optimize, ``nnls`` (``solve.least_distance_dual``),
but the package's import brings linprog, scipy.fft, scipy.sparse and more: 0.22-0.26 s of
every job's start on a 2-core Xeon, a sweep worker's included. Here the compiled Lawson-Hanson
routine that scipy's ``nnls`` calls is loaded from its own file (3 ms) and called exactly as
scipy's wrapper calls it, after the same argument checks: the same numbers, bit for bit
(tests/test_nnls.py). Where scipy's wrapper does not read as the one this follows (another
scipy), or the file will not load, ``scipy.optimize.nnls`` itself is used. The routine's
module is in ``sys.modules`` under its own name, its package not: a later
``import scipy.optimize`` takes that module (SLSQP shares it) and works as ever.
"""

from __future__ import annotations

import glob
import importlib.machinery
import importlib.util
import os

import numpy as np

# what scipy's own wrapper (scipy/optimize/_nnls.py) must say for the direct call to be its call
WRAPPER_LINES = (
    "from ._slsqplib import nnls as _nnls",
    "A = np.asarray_chkfinite(A, dtype=np.float64, order='C')",
    "b = np.asarray_chkfinite(b, dtype=np.float64)",
    "maxiter = 3*n",
    "x, rnorm, info = _nnls(A, b, maxiter)",
    "if info == 3:",
)
MODULE = "scipy.optimize._slsqplib"  # its own name: its init function is named after it


def _load_compiled():
    """scipy's compiled ``nnls`` (``scipy/optimize/_slsqplib``), or None (module doc)."""
    spec = importlib.util.find_spec("scipy")
    if spec is None or spec.origin is None:
        return None
    where = os.path.join(os.path.dirname(spec.origin), "optimize")
    try:
        with open(os.path.join(where, "_nnls.py"), encoding="utf-8") as fh:
            wrapper = fh.read()
    except OSError:
        return None
    found = glob.glob(os.path.join(where, "_slsqplib.*"))
    if not all(line in wrapper for line in WRAPPER_LINES) or len(found) != 1:
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader(MODULE, found[0])
        module = importlib.util.module_from_spec(
            importlib.util.spec_from_file_location(MODULE, found[0], loader=loader)
        )
        loader.exec_module(module)
    except (ImportError, OSError):
        return None
    return getattr(module, "nnls", None)


_COMPILED = _load_compiled()  # at import: its BLAS is loaded before a job bounds the pools


def nnls(A: np.ndarray, b: np.ndarray, maxiter: int | None = None) -> tuple[np.ndarray, float]:
    """``scipy.optimize.nnls(A, b, maxiter=maxiter)``: x >= 0 minimizing ||A x - b||, and that
    norm; RuntimeError when ``maxiter`` iterations do not reach the solution."""
    if _COMPILED is None:
        from scipy.optimize import nnls as scipys

        return scipys(A, b, maxiter=maxiter)
    A = np.asarray_chkfinite(A, dtype=np.float64, order="C")
    b = np.asarray_chkfinite(b, dtype=np.float64)
    if b.ndim == 2 and b.shape[1] == 1:  # a column, as scipy takes it
        b = b.ravel()
    if A.ndim != 2 or b.ndim != 1 or A.shape[0] != b.shape[0]:
        raise ValueError(f"nnls: A must be 2-D and b 1-D of its rows, not {A.shape}, {b.shape}")
    x, rnorm, info = _COMPILED(A, b, maxiter or 3 * A.shape[1])
    if info == 3:
        raise RuntimeError("Maximum number of iterations reached.")
    return x, rnorm
