"""A local sweep's worker hands its computed job to the sweep's process (attnsvm/handoff.py):
the worker is sent its next job before the last one's files are written, and what is written
is what the job's own process writes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pandas as pd

import attnsvm
from attnsvm.handoff import Computed, deliver
from attnsvm.results.store import JOB, RUNS, TRAJECTORY, config_hash, read_job
from attnsvm.run import execute
from conftest import REPO

SMALL = ["dataset.d=4", "seeds=2", "optimizer.steps=50"]


def test_a_handed_off_job_is_written_as_its_own_process_writes_it(tmp_path, capsys):
    run = attnsvm.compose(SMALL)
    chash = config_hash(run)
    alone, handed, sweep = tmp_path / "alone", tmp_path / "handed", tmp_path / "sweep"
    for d in (alone, handed, sweep):
        d.mkdir()
    assert execute(None, alone, True, None, planned=(run, chash)) == "finished"
    done = execute(None, handed, True, sweep, planned=(run, chash), hand_off=True)
    assert isinstance(done, Computed)
    assert read_job(handed)["status"] == "running"  # nothing but the running record yet
    assert not (handed / RUNS).exists()
    capsys.readouterr()
    assert deliver(done) == "finished"
    assert f"results: {handed}" in capsys.readouterr().out
    assert read_job(handed)["status"] == "finished"
    ran = execute(None, tmp_path / "again", True, sweep, planned=(run, chash), hand_off=True)
    assert ran == "skipped"  # the sweep's index has it
    for name in (RUNS, TRAJECTORY):
        a, b = pd.read_parquet(alone / name), pd.read_parquet(handed / name)
        timing = [c for c in a.columns if c.endswith("seconds")]  # the clock's, not the math
        pd.testing.assert_frame_equal(a.drop(columns=timing), b.drop(columns=timing))
    assert (handed / JOB).exists()


def test_a_worker_on_every_core_writes_its_own_job(tmp_path, monkeypatch, capsys):
    """No core left for the sweep's process (as many workers as cores): run_planned writes the
    job and its summary in the worker and returns its status; the sweep's index has it."""
    from hydra_plugins.attnsvm_local import sweep as local
    from hydra_plugins.attnsvm_local.sweep import hands_off, run_planned

    monkeypatch.setattr(local, "configure_log", lambda *a: None)  # this process's logging kept
    monkeypatch.setattr(local, "usable_cores", lambda: 4)
    assert [hands_off(w) for w in (1, 3, 4, 8)] == [True, True, False, False]
    run = attnsvm.compose(SMALL)
    chash, out, sweep = config_hash(run), tmp_path / "job", tmp_path / "sweep"
    out.mkdir()
    assert run_planned(str(out), str(sweep), run, chash, None, False, hand_off=False) == "finished"
    assert f"results: {out}" in capsys.readouterr().out
    assert read_job(out)["status"] == "finished" and (out / RUNS).exists()
    ran = execute(None, tmp_path / "again", True, sweep, planned=(run, chash), hand_off=True)
    assert ran == "skipped"
    (tmp_path / "h").mkdir()
    handed = run_planned(str(tmp_path / "h"), str(tmp_path / "s2"), run, chash, None, False)
    assert isinstance(handed, Computed)


SCRIPT = textwrap.dedent(
    """
    import time
    from attnsvm.workers import WorkerPool

    def job(k):
        return k

    if __name__ == "__main__":
        pool = WorkerPool(1)
        seen = []

        def done(num, outcome):
            seen.append((num, sorted(pool.busy)))
            time.sleep(0.5)  # writing its files: the worker already computes the next job

        pool.run({k: (job, (k,)) for k in range(3)}, done=done)
        pool.close()
        print("|" + repr(seen))
    """
)


def test_the_worker_gets_its_next_job_before_the_last_one_is_reported(tmp_path):
    script = tmp_path / "pool_order.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 0, res.stderr
    seen = eval(res.stdout.rpartition("|")[2])  # noqa: S307  (our own repr of a list)
    assert seen == [(0, [1]), (1, [2]), (2, [])], seen
