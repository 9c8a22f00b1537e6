"""A sweep's second worker is forked from its first once that one is warm (attnsvm/adopted.py):
it does not import again, it is the sweep's child (not the first worker's), the death of either
fails only its own job, and its own death is reported as the pool reports any worker's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

WARM = textwrap.dedent(
    """
    import gc, os
    with open(os.environ["WARM_LOG"], "a") as fh:   # who imported this module
        fh.write(f"{os.getpid()}\\n")
    with open(os.environ["WARM_LOG"] + ".gc", "a") as fh:  # with the collector paused?
        fh.write(f"{gc.isenabled()}\\n")
    """
)

SCRIPT = textwrap.dedent(
    """
    import gc, json, os, signal, sys, time
    from attnsvm import workers

    def where(victim):
        time.sleep(0.2)                  # both workers get jobs
        if os.getpid() == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        frozen = gc.get_freeze_count() > 1000  # the imports out of the collector's reach
        ready = "warmmod" in sys.modules and frozen and gc.isenabled()  # collecting again
        return [os.getpid(), os.getppid(), ready]

    if __name__ == "__main__":
        workers.start_early(("warmmod",), 2)
        first, second = (w.process for w in workers._EARLY[("warmmod",)])
        victim = {"none": 0, "first": first.pid, "second": second.pid}[sys.argv[1]]
        pool = workers.WorkerPool(2, warm=("warmmod",))
        ran = pool.run({k: (where, (victim,)) for k in range(6)})
        pool.close()
        print(json.dumps({
            "me": os.getpid(), "first": first.pid, "second": second.pid,
            "values": [o.value for o in ran.values() if o.error is None],
            "errors": [o.error for o in ran.values() if o.error is not None],
            "imported_by": open(os.environ["WARM_LOG"]).read().split(),
            "collector_at_import": open(os.environ["WARM_LOG"] + ".gc").read().split(),
            "started": pool.pids,
        }))
    """
)


def _run(tmp_path, victim: str) -> dict:
    (tmp_path / "warmmod.py").write_text(WARM)
    (tmp_path / "adopt.py").write_text(SCRIPT)
    return _json_run(tmp_path, "adopt.py", victim)


def test_the_second_worker_is_forked_warm_and_is_the_sweeps_child(tmp_path):
    out = _run(tmp_path, "none")
    assert out["imported_by"] == [str(out["first"])], "the second worker imported again"
    assert out["collector_at_import"] == ["False"], "imported with the collector running"
    ran_on = {pid: (parent, warm) for pid, parent, warm in out["values"]}
    assert set(ran_on) == {out["first"], out["second"]}, "a job ran outside the two workers"
    # each is the script's own child, and has what the first imported, frozen (gc.freeze),
    # with the collector running again
    assert ran_on == {out["first"]: (out["me"], True), out["second"]: (out["me"], True)}
    assert sorted(out["started"]) == sorted([out["first"], out["second"]])
    assert not out["errors"]


@pytest.mark.parametrize("victim", ["first", "second"])
def test_either_workers_death_fails_its_own_job_only(tmp_path, victim):
    out = _run(tmp_path, victim)
    dead = out[victim]
    # the job it ran is reported as any dead worker's (the adopted one is reaped here)
    assert out["errors"] == [f"worker process {dead} killed by SIGKILL"], out["errors"]
    survivor = out["second" if victim == "first" else "first"]
    ran_on = [pid for pid, _, _ in out["values"]]
    assert len(ran_on) == 5 and dead not in ran_on, out
    # the other worker kept running jobs (a pool's replacement may take some)
    assert survivor in ran_on, out


IDLE = textwrap.dedent(
    """
    import json, os, sys, time
    from attnsvm import workers

    def where(k):
        start = time.monotonic()
        time.sleep(1.0)
        return [os.getpid(), start, time.monotonic()]

    if __name__ == "__main__":
        workers.start_early(("warmmod",), 2)
        pool = workers.WorkerPool(2, warm=("warmmod",))
        start, calls = time.monotonic(), []

        def idle():              # what the sweep does while its workers start: here 2 s of it,
            calls.append(round(time.monotonic() - start, 3))   # past the second one's birth
            time.sleep(0.02)
            return time.monotonic() - start < 2.0

        ran = pool.run({k: (where, (k,)) for k in range(2)}, idle=idle)
        pool.close()
        print(json.dumps({"calls": calls, "ran": [o.value for o in ran.values()],
                          "errors": [o.error for o in ran.values() if o.error]}))
    """
)


def test_the_pool_works_while_the_second_worker_is_not_born_and_sends_it_a_job_at_birth(
    tmp_path,
):
    """The first worker takes 0.5 s to import; the pool sends it its job and, instead of
    waiting for the second worker's birth, calls ``idle`` at once (the sweep makes jobs ahead
    there); the birth interrupts that work: the second job starts while the first one runs."""
    (tmp_path / "warmmod.py").write_text("import time\ntime.sleep(0.5)\n")
    (tmp_path / "idle.py").write_text(IDLE)
    out = _json_run(tmp_path, "idle.py")
    assert out["calls"] and out["calls"][0] < 0.3, out  # nothing waited for a birth
    (pid0, start0, end0), (pid1, start1, end1) = out["ran"]
    assert pid0 != pid1 and not out["errors"], out
    assert max(start0, start1) < min(end0, end1), "the second worker waited for the first job"


FALLBACK = textwrap.dedent(
    """
    import json, os, sys, time
    from attnsvm import adopted, workers

    def where(k):
        time.sleep(0.3)                       # long enough for every worker to take some
        return os.getpid()

    if __name__ == "__main__":
        if sys.argv[1] == "no pidfd":         # an old kernel or a sandbox: each imports itself
            adopted.available.cache_clear()
            def refused(pid):
                raise OSError(38, "Function not implemented")
            os.pidfd_open = refused
        elif sys.argv[1] == "refused later":   # pidfds allowed at start, refused at the birth
            adopted.available()
            def refused(pid):
                raise PermissionError(1, "Operation not permitted")
            os.pidfd_open = refused
        workers.start_early(("warmmod",), 2)
        pool = workers.WorkerPool(2, warm=("warmmod",))
        ran = pool.run({k: (where, (k,)) for k in range(6)})
        pool.close()
        print(json.dumps({"ran": sorted({o.value for o in ran.values() if o.error is None}),
                          "errors": [o.error for o in ran.values() if o.error],
                          "imported_by": open(os.environ["WARM_LOG"]).read().split()}))
    """
)


@pytest.mark.parametrize("case", ["no pidfd", "refused later"])
def test_without_pidfds_each_worker_starts_on_its_own(tmp_path, case):
    """No pidfd (older kernel, seccomp): the old way, both workers import; one refused only at
    the second worker's birth: that one is killed and counts as never born, and the pool
    starts a fresh worker instead. Every job runs either way."""
    (tmp_path / "warmmod.py").write_text(WARM)
    (tmp_path / "fallback.py").write_text(FALLBACK)
    out = _json_run(tmp_path, "fallback.py", case)
    assert not out["errors"] and len(out["ran"]) == 2, out
    assert len(out["imported_by"]) == 2, out  # the fallback's second worker imported again


def _json_run(tmp_path, script: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    env["WARM_LOG"] = str(tmp_path / "imports")
    res = subprocess.run(
        [sys.executable, str(tmp_path / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


KILLED = textwrap.dedent(
    """
    import os, sys, time
    from attnsvm import workers

    def record():                         # every process forked from here, grandchildren too
        with open(os.environ["FORKED"], "a") as fh:
            fh.write(f"{os.getpid()}\\n")

    if __name__ == "__main__":
        os.register_at_fork(after_in_child=record)
        workers.start_early(("warmmod",), 2)
        print("started", flush=True)
        time.sleep(60)                    # killed meanwhile
    """
)


@pytest.mark.parametrize("after", [0.3, 2.5])
def test_a_sweep_killed_before_or_after_the_birth_leaves_no_worker(tmp_path, after):
    """kill -9 of the sweep while its first worker imports (0.3 s: the second is not born) or
    once both are idle (2.5 s): every process forked from it ends."""
    (tmp_path / "warmmod.py").write_text("import time\ntime.sleep(1.5)\n")
    (tmp_path / "killed.py").write_text(KILLED)
    forked = tmp_path / "forked"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    env["FORKED"] = str(forked)
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "killed.py")], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout.readline().strip() == "started"
    time.sleep(after)
    proc.kill()
    proc.wait()
    pids = [int(p) for p in forked.read_text().split()]
    assert len(pids) == (1 if after < 1.5 else 3), pids  # the first; then the middle and second
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids), "a worker outlived the sweep"


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
