"""attnsvm: reproduce and extend *Transformers as Support Vector Machines* (arXiv:2308.16898)."""

import os

# MKL (torch's BLAS/LAPACK on x86) picks code paths by memory alignment unless its Conditional
# Numerical Reproducibility mode is on: a LAPACK result would depend on where an instance sits
# in a batch. Strict CNR must be chosen before MKL's first call, so it is set on import; a
# user's own MKL_CBWR wins. attnsvm.runtime.mkl_cnr_mode() reports what MKL took.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

from attnsvm._version import __version__  # noqa: E402  (after MKL's mode is chosen)

__all__ = ["__version__", "compose", "run_job", "load_sweep", "sql"]


def __getattr__(name: str):
    """The Python API (attnsvm/api.py), imported on first use: ``import attnsvm`` stays light
    and sets MKL's mode before torch is loaded."""
    if name == "sql":
        from attnsvm.results.query import sql

        return sql
    if name in __all__:
        from attnsvm import api

        return getattr(api, name)
    raise AttributeError(f"module 'attnsvm' has no attribute {name!r}")
