"""A sweep worker with no job left ends at once (attnsvm.interrupt.exit_now: no interpreter
teardown): what its jobs printed is still flushed, and it exits 0, with output block-buffered
as it is when a sweep's output goes to a file or a pipe."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import REPO

SCRIPT = textwrap.dedent(
    """
    import sys
    from attnsvm.workers import WorkerPool

    def job():
        print("printed by the job, never flushed by it", end="")
        sys.stderr.write("and its stderr")
        return 7

    if __name__ == "__main__":
        pool = WorkerPool(1)
        outcome = pool.run([0], {0: (job, ())}.__getitem__)[0]
        worker = pool.idle[0].process
        pool.close()
        print(f"|value={outcome.value} exitcode={worker.exitcode}")
    """
)


def test_a_finished_worker_exits_0_with_its_output_flushed(tmp_path):
    script = tmp_path / "pool_exit.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(REPO)
    res = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "printed by the job, never flushed by it" in res.stdout
    assert res.stdout.rstrip().endswith("|value=7 exitcode=0"), res.stdout
    assert "and its stderr" in res.stderr
