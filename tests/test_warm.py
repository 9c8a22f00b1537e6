"""A process's imports are frozen out of the garbage collector's reach once (attnsvm/warm.py):
before its first job, never the garbage of later jobs."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]  # after the jobs' summaries


def test_a_job_runs_with_the_imports_frozen_once_and_later_garbage_is_collected(tmp_path):
    out = _run(
        f"""
        import gc
        from pathlib import Path
        from attnsvm.composition import RunConfig
        from attnsvm.results.store import config_hash
        from attnsvm.run import execute

        run = RunConfig(seeds=2)
        run.optimizer.steps = 20
        assert gc.get_freeze_count() == 0
        for k in (1, 2):
            out = Path(r"{tmp_path}") / f"job{{k}}"
            out.mkdir()
            assert execute(None, out, True, None, (run, config_hash(run))) == "finished"
            if k == 1:
                frozen = gc.get_freeze_count()
        # the first job froze the imports; the second froze nothing more (a frozen object can
        # still be freed by its reference count: the count may fall)
        assert frozen > 100_000 and gc.get_freeze_count() <= frozen
        assert gc.isenabled()  # the job's imports paused the collector, and only them

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle made after the freeze
        del a, b
        print(gc.collect() >= 2)
        """
    )
    assert out == "True"


def test_imports_run_without_collections_and_the_collector_is_back_however_they_end():
    out = _run(
        """
        import gc
        from attnsvm.warm import imports_uncollected

        seen = []
        with imports_uncollected():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
        try:
            with imports_uncollected():
                raise ImportError("no such module")
        except ImportError:
            seen.append(gc.isenabled())
        gc.disable()  # a caller that paused it itself keeps it paused
        with imports_uncollected():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
        print(seen)
        """
    )
    assert out == "[False, True, True, False, False]"


def test_import_frozen_skips_a_missing_warm_module_only_when_asked_and_freezes_once():
    out = _run(
        """
        import gc
        from attnsvm.warm import import_frozen

        import_frozen(("no_such_module_xyz", "json"), missing_ok=True)  # a worker's warm list
        frozen = gc.get_freeze_count()
        try:
            import_frozen(("no_such_module_xyz",))  # a job's own: its error is the job's
            raised = False
        except ImportError:
            raised = True
        print(frozen > 0, raised, gc.isenabled())
        """
    )
    assert out == "True True True"
