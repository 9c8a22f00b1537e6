"""The C kernel (attnsvm/kernel/_fused.c, compiled here by setup.py) and the batch-invariant
products that use it (batchops.py): a leaf, so data (a draw's token scores), train (the fused
engine's whole trajectories), svm (the nuclear-norm solver's Schur complement) and the
experiments all call down to it. This module finds and loads the build once; it imports
nothing of attnsvm but the config's error type.

    lib = library()       # the first build this CPU runs, or None (no C compiler at install)
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from functools import cache

from attnsvm.config.checks import ConfigError

_P, _I, _D, _I64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_int64
_ARGTYPES = [_I] * 5 + [_P] * 8 + [_I, _D, _I, _D, _D, _I64, _P, _I] + [_P] * 7


BUILDS = (
    "attnsvm.kernel._fused_v4",
    "attnsvm.kernel._fused",
)  # 8 lanes for AVX-512 CPUs; 4 lanes, any CPU
BUILD_ENV = "ATTNSVM_FUSED_BUILD"  # names the one build to use (benchmarks, mixed clusters)


ABI = 4  # attnsvm_abi() of a build that matches _ARGTYPES; a stale build is not used


@cache
def _load() -> tuple[ctypes.CDLL | None, str]:
    """(the kernel build to use, or None; why none)."""
    names = BUILDS
    forced = os.environ.get(BUILD_ENV)
    if forced:
        if forced not in BUILDS:
            raise ConfigError(f"{BUILD_ENV}={forced!r}: accepted values {', '.join(BUILDS)}")
        names = (forced,)
    why = "the C extension attnsvm.kernel._fused was not built (no C compiler at install)"
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        lib = ctypes.CDLL(spec.origin)
        if not hasattr(lib, "attnsvm_abi") or lib.attnsvm_abi() != ABI:
            why = f"{name} is a stale build: reinstall (pip install -e .) to rebuild it"
        elif not lib.attnsvm_cpu_supported():
            why = f"{name} needs a CPU with AVX-512 (x86-64-v4)"
        else:
            lib.attnsvm_train_group.argtypes = _ARGTYPES
            lib.attnsvm_train_group.restype = _I
            lib.attnsvm_seq_matmul.argtypes = [_I64] * 4 + [_P] * 3
            lib.attnsvm_seq_matmul.restype = None
            lib.attnsvm_schur_lower.argtypes = [_I64] * 3 + [_P] * 9
            lib.attnsvm_schur_lower.restype = None
            lib.name = name
            return lib, ""
    return None, why


def library() -> ctypes.CDLL | None:
    """The first kernel build this CPU runs (setup.py builds both from attnsvm/kernel/_fused.c),
    or None when there is none (no C compiler at install). $ATTNSVM_FUSED_BUILD restricts the
    choice to one build (same numbers, other speed)."""
    return _load()[0]


def describe() -> str:
    """Which kernel build trains, for reports: 'attnsvm.kernel._fused_v4, 8 seeds per call'."""
    lib = library()
    return _load()[1] if lib is None else f"{lib.name}, {lib.attnsvm_lanes()} seeds per call"
