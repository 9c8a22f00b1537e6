"""A process's imports: made without the garbage collector, then put out of its reach once.

torch, pandas and Hydra leave ~240k objects that live as long as the process. While they are
imported, the collector runs again and again over the growing heap and finds nothing to free:
~0.25 s of 1.5 s in a fresh interpreter on a 2-core Xeon, 0.12-0.15 s of a sweep worker's
start (forked with Hydra already imported) (``imports_uncollected``). Once they
are imported, every full collection walks all of them, inside whatever runs then: ~120 ms of
a sweep worker's first job (270 -> 150 ms), and again whenever a process that runs many jobs
(a worker, a Ray actor, Hydra's basic launcher) collects in full. ``gc.freeze`` moves them to
a generation no collection looks at; in a process forked after it, no collection writes to
the pages it shares with its parent either. Called by a worker once warm and by
``run.execute`` before a job, but once per process (a forked child inherits the frozen set and
the flag): a frozen object is never collected, so the garbage of later jobs must stay
collectable. What a process made before it and drops later stays: in a worker nothing (it
freezes before any job); in Hydra's basic launcher the first job's config, a few thousand
objects once, not per job.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
from collections.abc import Iterator


@contextlib.contextmanager
def imports_uncollected() -> Iterator[None]:
    """No collection while the block imports (module doc); the collector as it was after it,
    however the block ends. What the imports leave as garbage is frozen with them by
    ``freeze_imports``: ~9k objects (~1 MB) for torch and pandas, once per process."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@functools.cache
def freeze_imports() -> None:
    """Freeze every object tracked so far (module doc); later calls do nothing."""
    gc.freeze()


def import_frozen(modules: tuple[str, ...], missing_ok: bool = False) -> None:
    """``modules`` imported without the collector, then the process's imports frozen (module
    doc): a worker's warm imports (``missing_ok``: the job that needs one fails, not the
    worker) and a job's own."""
    with imports_uncollected():
        for module in modules:
            try:
                importlib.import_module(module)
            except ImportError:
                if not missing_ok:
                    raise
    freeze_imports()
