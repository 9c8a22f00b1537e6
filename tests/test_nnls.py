"""The SVM stage's NNLS (attnsvm/svm/nnls.py) is scipy.optimize.nnls, bit for bit, without
importing scipy.optimize (0.2 s of every job's start)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import nnls as scipy_nnls

from attnsvm.svm import nnls as ours


def _problems(count: int = 600):
    rng = np.random.default_rng(7)
    for k in range(count):
        m, n = (int(v) for v in rng.integers(1, 40, size=2))
        A = rng.standard_normal((m, n))
        if k % 3 == 0:  # rank-deficient: zeroed columns
            A[:, rng.random(n) < 0.5] = 0.0
        if k % 5 == 0:  # a Gram-like, Fortran-ordered float32 input: converted as scipy does
            A = np.asfortranarray(A.astype(np.float32))
        yield A, rng.standard_normal(m), (None if k % 2 else int(rng.integers(1, 4 * n + 2)))


def _solve(fn, A, b, maxiter):
    try:
        return fn(A, b, maxiter=maxiter)
    except RuntimeError as exc:
        return str(exc)


def test_the_compiled_routine_is_loaded_and_gives_scipys_numbers_bit_for_bit():
    assert ours._COMPILED is not None, "scipy's compiled nnls did not load: the fallback runs"
    errors = 0
    for A, b, maxiter in _problems():
        want, got = _solve(scipy_nnls, A, b, maxiter), _solve(ours.nnls, A, b, maxiter)
        if isinstance(want, str):
            assert got == want
            errors += 1
            continue
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    assert errors > 0  # some maxiter runs out: the same RuntimeError as scipy's


def test_a_column_b_is_taken_as_scipy_takes_it():
    A, b = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), np.array([[2.0], [1.0], [1.0]])
    got, want = ours.nnls(A, b), scipy_nnls(A, b)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def test_bad_input_is_refused_as_scipy_refuses_it():
    with pytest.raises(ValueError):
        ours.nnls(np.ones((3, 2)), np.ones(4))
    with pytest.raises(ValueError):
        ours.nnls(np.array([[1.0, np.nan]]), np.ones(1))


def test_a_scipy_whose_wrapper_reads_otherwise_gets_scipy_optimize_itself(monkeypatch):
    monkeypatch.setattr(ours, "WRAPPER_LINES", (*ours.WRAPPER_LINES, "a line scipy never had"))
    assert ours._load_compiled() is None
    monkeypatch.setattr(ours, "_COMPILED", None)
    A, b = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), np.array([2.0, 1.0, 1.0])
    got, want = ours.nnls(A, b), scipy_nnls(A, b)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def _fresh_python(*lines: str) -> str:
    """What ``lines`` print, run in a fresh interpreter (nothing imported yet)."""
    code = "\n".join(lines)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_nnls_path_does_not_import_scipy_optimize():
    """The reference Frobenius SVM (``solve.w_mm``: the batch's fallback, large instances)
    solves by NNLS, in a fresh process that never imports scipy.optimize."""
    printed = _fresh_python(
        "import sys",
        "import numpy as np",
        "from attnsvm.config.schema import SolverConfig",
        "from attnsvm.svm.solve import w_mm",
        "rng = np.random.default_rng(0)",
        "X, Z = rng.standard_normal((3, 4, 8)), rng.standard_normal((3, 8))",
        "sol = w_mm(X, Z, np.array([0, 1, 2]), SolverConfig())",
        "assert sol.status == 'optimal' and sol.margins.min() > 1 - 1e-6, sol",
        "print('scipy.optimize' in sys.modules)",
    )
    assert printed == "False"


def test_scipy_optimize_imported_after_it_works_as_ever():
    """The routine's module is loaded under its own name: a later ``import scipy.optimize``
    (a user's experiment) takes that module, and SLSQP, which shares it, still solves."""
    printed = _fresh_python(
        "import numpy as np",
        "from attnsvm.svm import nnls as ours",
        "from scipy.optimize import minimize, nnls",
        "rng = np.random.default_rng(1)",
        "A, b = rng.standard_normal((6, 4)), rng.standard_normal(6)",
        "assert np.array_equal(nnls(A, b)[0], ours.nnls(A, b)[0])",
        "con = {'type': 'ineq', 'fun': lambda x: x[0] - 0.5}",
        "r = minimize(lambda x: (x**2).sum(), np.ones(3), method='SLSQP', constraints=[con])",
        "print(r.success and abs(r.x[0] - 0.5) < 1e-6)",
    )
    assert printed == "True"
