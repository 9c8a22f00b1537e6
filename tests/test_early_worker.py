"""The sweep's workers start with the command (hydra_plugins/attnsvm_local/early.py): only for
a local sweep, as many as its command line says it will use; the pool takes them instead of
starting others, its close ends them (forked, none may hold the sweep's end of its own pipe),
and those no pool took die with the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import REPO
from hydra_plugins.attnsvm_local import early
from hydra_plugins.attnsvm_local.early import early_workers, is_local_sweep, least_jobs


@pytest.mark.parametrize(
    ("argv", "local"),
    [
        (["-m", "dataset.d=2,3"], True),
        (["--multirun", "dataset.d=2,3"], True),
        (["-m", "hydra/launcher=local", "dataset.d=2,3"], True),
        (["dataset.d=2"], False),  # a single run
        (["-m", "hydra/launcher=ray"], False),
        (["-m", "hydra/launcher=slurm", "hydra.launcher.partition=cpu"], False),
        (["-m", "hydra/launcher=dryrun"], False),
        (["-m", "--cfg", "job"], False),  # prints, runs nothing
        (["-m", "--help"], False),
        (["-m", "--info"], False),
    ],
)
def test_only_a_local_sweep_starts_a_worker_with_the_command(argv, local):
    assert is_local_sweep(argv) is local


@pytest.mark.parametrize(
    ("argv", "jobs"),
    [
        (["-m", "dataset.d=2"], 1),
        (["-m", "dataset.d=2,3,4", "parameterization=w,kq"], 6),
        (["-m", "dataset.d=range(2,22)"], 2),  # at least two
        (["-m", "+sweeps=overparam"], 2),
        (["-m", "solver.norms=[fro,l1.75,l3]"], 1),  # one list value
        (["-m", "solver.norms=[fro,l1],[fro,l3]"], 2),
        (["-m", "dataset.file='a,b.npz'"], 1),  # quoted: one value
    ],
)
def test_the_least_jobs_a_command_line_sweeps(argv, jobs):
    assert least_jobs(argv) == jobs


@pytest.mark.parametrize(
    ("argv", "cores", "workers"),
    [
        (["-m", "dataset.d=2,3,4", "hydra.launcher.n_jobs=4"], 8, 3),  # no more than jobs
        (["-m", "dataset.d=2"], 8, 1),
        (["-m", "dataset.d=2,3", "hydra.launcher.n_jobs=1"], 8, 1),
        (["-m", "dataset.d=2,3,4,5,6", "hydra.launcher.n_jobs=8"], 4, 4),  # one per core
        (["-m", "dataset.d=2,3,4,5,6", "hydra.launcher.n_jobs=8"], 2, 2),
        (["-m", "dataset.d=2,3,4,5,6", "hydra.launcher.n_jobs=1"], 2, 1),
        (["-m", "dataset.d=2,3"], 1, 0),  # one core: the sweep's own start comes first
        (["-m", "dataset.d=2,3", "hydra.launcher.n_jobs=x"], 4, 0),  # Hydra's error to give
    ],
)
def test_as_many_workers_start_early_as_the_sweep_will_use(monkeypatch, argv, cores, workers):
    monkeypatch.setattr(early, "cores", lambda: cores)
    assert early_workers(argv) == workers


SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from attnsvm import workers

    def where():
        return os.getpid()

    if __name__ == "__main__":
        print("printed before the fork;", end="")   # block-buffered: stdout is a pipe
        count, pool_size = int(sys.argv[2]), int(sys.argv[3])
        workers.start_early(("json",), count)
        early = [w.process for w in workers._EARLY[("json",)]]
        pids = sorted(p.pid for p in early)
        if sys.argv[1] == "taken":
            pool = workers.WorkerPool(pool_size, warm=("json",))
            ran = pool.run({k: (where, ()) for k in range(4 * pool_size)})
            start = time.monotonic()
            pool.close()
            fields = {"early": pids, "ran": sorted({o.value for o in ran.values()}),
                      "started": sorted(pool.pids), "exitcodes": [p.exitcode for p in early],
                      "close_s": round(time.monotonic() - start, 1)}
            print("|" + " ".join(f"{k}={str(v).replace(' ', '')}" for k, v in fields.items()))
        else:
            print(f"|early={pids}".replace(" ", ""), flush=True)   # not taken: ends with us
    """
)


def _script(tmp_path, mode: str, count: int = 1, pool_size: int = 1) -> str:
    script = tmp_path / "early.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(REPO)
    res = subprocess.run(
        [sys.executable, str(script), mode, str(count), str(pool_size)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    # what the command printed before it forked the worker is printed once, not by both
    assert res.stdout.count("printed before the fork;") == 1, res.stdout
    return res.stdout.rstrip().rpartition("|")[2]


@pytest.mark.parametrize(("count", "pool_size"), [(1, 1), (2, 2), (2, 1)])
def test_the_pool_takes_the_early_workers_and_its_close_ends_them(tmp_path, count, pool_size):
    fields = dict(f.split("=", 1) for f in _script(tmp_path, "taken", count, pool_size).split())
    early = json.loads(fields["early"])
    taken = json.loads(fields["started"])
    assert len(early) == count
    assert set(taken) <= set(early) and len(taken) == pool_size, "the pool started its own"
    assert set(json.loads(fields["ran"])) <= set(taken), "a job ran outside the pool"
    # EOF on the pipe ends each at once: a worker that held the sweep's end of its own pipe
    # would be killed after the pool's grace period; one the pool had no room for is killed at
    # once (-9)
    expected = [0] * pool_size + [-9] * (count - pool_size)  # the pool takes the first
    assert json.loads(fields["exitcodes"]) == expected, fields
    assert float(fields["close_s"]) < 5, fields


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_early_worker_no_pool_took_ends_with_the_command(tmp_path):
    early = json.loads(_script(tmp_path, "untaken", count=2).partition("=")[2])
    deadline = time.monotonic() + 30
    while any(map(_alive, early)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, early)), "an early worker outlived the command that started it"


def _marked(marker: str) -> list[int]:
    """The live processes whose environment holds ``marker`` (a command and what it forked)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    marked = marker.encode() in fh.read()
            except OSError:
                continue
            if marked and _alive(int(entry)):
                found.append(int(entry))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sweep_refused_for_a_bad_key_names_it_and_leaves_no_worker(tmp_path):
    # the command forks its workers before it checks its keys (attnsvm.run.cli): a refusal
    # must still end them with it
    marker = f"ATTNSVM_TEST_MARK={os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(REPO), marker.split("=")[0]: marker.split("=")[1]}
    argv = ["-m", "dataset.d=2,3", "optimizer.stepz=5", f"hydra.sweep.dir={tmp_path / 'sw'}"]
    res = subprocess.run(
        [sys.executable, "-m", "attnsvm.run", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert res.returncode == 1, res.stderr
    assert "unknown key 'optimizer.stepz'" in res.stderr and "steps" in res.stderr, res.stderr
    deadline = time.monotonic() + 10
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _marked(marker), "a worker outlived the refused command"
    assert not (tmp_path / "sw").exists()
