"""The sweep's first worker starts with the command (hydra_plugins/attnsvm_local/early.py): only
for a local sweep, the pool takes it instead of starting another, the pool's close ends it
(forked, it must not hold the sweep's end of its own pipe), and one no pool took dies with
the command."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import REPO
from hydra_plugins.attnsvm_local.early import is_local_sweep


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


SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from attnsvm import workers

    def where():
        return os.getpid()

    if __name__ == "__main__":
        print("printed before the fork;", end="")   # block-buffered: stdout is a pipe
        workers.start_early(("json",))
        early = workers._EARLY[("json",)].process
        if sys.argv[1] == "taken":
            pool = workers.WorkerPool(1, warm=("json",))
            ran = pool.run({0: (where, ()), 1: (where, ())})
            start = time.monotonic()
            pool.close()
            print(f"|early={early.pid} ran={sorted({o.value for o in ran.values()})}"
                  f" started={pool.pids} exitcode={early.exitcode}"
                  f" close_s={time.monotonic() - start:.1f}")
        else:
            print(f"|early={early.pid}", flush=True)   # not taken: ends with this process
    """
)


def _script(tmp_path, mode: str) -> str:
    script = tmp_path / "early.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(REPO)
    res = subprocess.run(
        [sys.executable, str(script), mode], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 0, res.stderr
    # what the command printed before it forked the worker is printed once, not by both
    assert res.stdout.count("printed before the fork;") == 1, res.stdout
    return res.stdout.rstrip().rpartition("|")[2]


def test_the_pool_takes_the_early_worker_and_its_close_ends_it(tmp_path):
    fields = dict(f.split("=", 1) for f in _script(tmp_path, "taken").split())
    early = int(fields["early"])
    assert fields["ran"] == f"[{early}]", "the jobs did not run in the early worker"
    assert fields["started"] == f"[{early}]", "the pool started a worker of its own"
    # EOF on the pipe ends it at once: a worker that held the sweep's end too would be
    # killed after the pool's grace period
    assert fields["exitcode"] == "0", fields
    assert float(fields["close_s"]) < 5, fields


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_early_worker_no_pool_took_ends_with_the_command(tmp_path):
    early = int(_script(tmp_path, "untaken").partition("=")[2])
    deadline = time.monotonic() + 30
    while _alive(early) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(early), "the early worker outlived the command that started it"
