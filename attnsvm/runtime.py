"""The settings a job runs under: thread pools and MKL's reproducibility mode.

Every experiment runs inside ``limit_threads(cfg.threads)`` (attnsvm.job.run_job): torch's pool
and the BLAS pools numpy/scipy use are bounded, and given back as they were when it ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys

import torch
from threadpoolctl import ThreadpoolController


@contextlib.contextmanager
def _torch_threads(threads: int):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def limit_threads(threads: int):
    """torch and every BLAS/OpenMP pool (eigh, svd, nnls) use at most ``threads`` threads: on
    busy cores a BLAS with more threads than its share is many times slower."""
    with _torch_threads(threads), _pools().limit(limits=threads):
        yield


_FOUND: list = [None, None]  # (len(sys.modules), ThreadpoolController) of the last scan


def _pools() -> ThreadpoolController:
    """The BLAS/OpenMP pools loaded in this process, scanned again only after an import (a pool
    comes with an extension's import; a scan costs as much as a small job's dispatch)."""
    if _FOUND[0] != len(sys.modules):
        _FOUND[:] = [len(sys.modules), ThreadpoolController()]
    return _FOUND[1]


def one_thread():
    """LAPACK on one thread: MKL's blocked factorisations split work by thread count, so the
    result for a large matrix differs between 1 and 2 threads, even in strict CNR mode."""
    return _torch_threads(1)


@functools.cache
def _mkl():
    """torch's statically linked MKL service functions, or None (no MKL in this build)."""
    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        return lib if hasattr(lib, "mkl_serv_cbwr_get") else None
    except OSError:
        return None


def mkl_cnr_mode() -> str:
    """MKL's reproducibility mode: "strict" (alignment-independent), "off", "other" or "no mkl".
    "off": MKL ran before attnsvm was imported, and batched LAPACK results may depend on an
    instance's position in the batch (import attnsvm first, or set MKL_CBWR=AUTO,STRICT)."""
    lib = _mkl()
    if lib is None:
        return "no mkl"
    mode = lib.mkl_serv_cbwr_get(-1)  # MKL_CBWR_ALL: branch | STRICT (0x10000)
    return "off" if mode == 1 else "strict" if mode & 0x10000 else "other"
