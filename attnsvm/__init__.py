"""attnsvm: reproduce and extend *Transformers as Support Vector Machines* (arXiv:2308.16898)."""

import os

# MKL (torch's BLAS/LAPACK on x86) picks code paths by memory alignment unless its Conditional
# Numerical Reproducibility mode is on: a LAPACK result would depend on where an instance sits
# in a batch. Strict CNR must be chosen before MKL's first call, so it is set on import; a
# user's own MKL_CBWR wins. attnsvm.runtime.mkl_cnr_mode() reports what MKL took.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")

__version__ = "0.1.0"
