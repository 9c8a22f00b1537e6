"""A gd job's memory, checked when its config is composed: a batch that cannot fit in this
machine's memory is refused with its estimate, before anything is written, instead of ending
in an allocation traceback mid-job.

The estimate is a lower bound: the largest tensors a batch of R seeds holds at once during
training, the head's token differences (R, n, T, T) and the tokens (R, n, T, d), in the job's
dtype. A run whose shape comes from its data (n, T or d null) is not estimated here.
"""

from __future__ import annotations

import os

from attnsvm.config.checks import ConfigError
from attnsvm.config.enums import Device

ITEM_BYTES = {"float64": 8, "float32": 4}


def batch_bytes(run) -> int | None:
    """Bytes a batch of ``min(seeds, batch_size)`` seeds needs at least, or None (shape unknown)."""
    n, T, d = run.dataset.n, run.dataset.T, run.dataset.d
    if None in (n, T, d):
        return None
    seeds = min(run.seeds, run.batch_size)
    return seeds * n * T * (T + d) * ITEM_BYTES[run.dtype.value]


def physical_memory() -> int | None:
    """This machine's memory in bytes, where the system says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _size(nbytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} TiB"


def check_memory(run) -> None:
    """Refuse a CPU job whose batch cannot fit in this machine's memory (module doc)."""
    need, have = batch_bytes(run), physical_memory()
    if run.device != Device.cpu or need is None or have is None or need <= have:
        return
    ds = run.dataset
    raise ConfigError(
        f"dataset.T={ds.T} (n={ds.n}, d={ds.d}): a batch of {min(run.seeds, run.batch_size)} "
        f"seeds needs at least {_size(need)} (its (R, n, T, T) token differences in "
        f"{run.dtype.value}), more than this machine's {_size(have)} of memory: lower dataset.T "
        f"or dataset.n, or batch_size"
    )
