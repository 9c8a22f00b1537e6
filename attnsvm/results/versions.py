"""Versions recorded next to every result: read from the installed metadata, so that a job
that never builds a cvxpy model does not import cvxpy (seconds) to write its version; read once
per process (a sweep's worker records them for every job)."""

import functools
import platform
from importlib.metadata import PackageNotFoundError, version

import numpy
import torch


def _installed(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def versions() -> dict:
    return dict(_versions())


@functools.cache
def _versions() -> dict:
    return {
        "python": platform.python_version(),
        "torch": str(torch.__version__),  # a str: torch's TorchVersion would pickle as torch's
        "numpy": numpy.__version__,
        **{name: _installed(name) for name in ("scipy", "cvxpy", "clarabel", "scs")},
    }
