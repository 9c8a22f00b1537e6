"""The cluster tier, Ray: sweeps through hydra/launcher=ray on a Ray cluster started here.

    python -m pytest -m cluster tests/test_cluster_ray.py

A head node (``ray start --head``, 2 CPUs, its own port, token authentication with a token of
this module's own) is started once for the module and always stopped at its end with
``ray stop --force`` (which stops every Ray process of this user on the machine). Ray comes
from pip (the dev extra): nothing to install. Where it cannot come up the tests fail saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cli_helpers import (
    REPO,
    SMALL,
    assert_same_tables,
    cli_env,
    job_dirs,
    read_job_json,
    run_cli,
    sweep_table,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SWEEP = ["dataset.d=2,4", "parameterization=w,kq", *SMALL]  # four jobs
# two jobs; the generator's process dies at d=3 (tests/crash_example.py): a worker killed
# mid-job
CRASH = [
    "dataset=callable",
    "dataset.target=crash_example.make",
    "+dataset.kwargs.exit_at_d=3",
    "dataset.d=2,3",
    *SMALL,
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_cli() -> str:
    """The ``ray`` command of the Python running the tests."""
    found = Path(sys.executable).with_name("ray")
    return str(found) if found.exists() else shutil.which("ray") or "ray"


@pytest.fixture(scope="module")
def ray_env():
    """Environment of the head and of every sweep: the tests' modules importable, and the
    cluster's token (Ray joins a cluster at an explicit address only when told the token), and
    every worker's log line shown (Ray's dedup would fold the jobs' similar lines into one)."""
    path = os.pathsep.join([str(REPO), str(REPO / "tests")])
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}
    return {"PYTHONPATH": path, "RAY_DEDUP_LOGS": "0", **token}


@pytest.fixture(scope="module")
def ray_head(ray_env):
    """The head's address; the cluster is stopped at the module's end whatever happened."""
    address = f"127.0.0.1:{free_port()}"
    port = address.rsplit(":", 1)[1]
    cmd = [ray_cli(), "start", "--head", "--port", port, "--num-cpus", "2"]
    cmd += ["--include-dashboard=false", "--disable-usage-stats"]
    start = time.perf_counter()
    try:
        res = subprocess.run(
            cmd, env=cli_env(**ray_env), capture_output=True, text=True, timeout=180, check=False
        )
        if res.returncode != 0:
            pytest.fail(
                f"the Ray head did not come up ({' '.join(cmd)}, exit {res.returncode}). "
                f'Deselect this tier with -m "not cluster".\n{res.stdout}{res.stderr}',
                pytrace=False,
            )
        print(f"ray head up at {address} in {time.perf_counter() - start:.1f} s")
        yield address
    finally:
        subprocess.run(
            [ray_cli(), "stop", "--force"], capture_output=True, timeout=180, check=False
        )


def ray_sweep(sweep_dir: Path, address: str, ray_env: dict, *overrides: str, rc: int = 0) -> str:
    """The sweep on the Ray cluster; ``rc``: its exit code (1 when some job failed)."""
    res = run_cli(
        *overrides,
        "hydra/launcher=ray",
        f"hydra.launcher.address={address}",
        f"hydra.sweep.dir={sweep_dir}",
        multirun=True,
        timeout=300,
        **ray_env,
    )
    assert res.returncode == rc, res.stdout
    assert "Connected to Ray cluster" in res.stdout, res.stdout  # joined, started none
    assert "Started a local Ray instance" not in res.stdout, res.stdout
    return res.stdout


def test_a_sweep_on_the_ray_cluster_gives_the_local_rows(tmp_path, ray_head, ray_env):
    out = ray_sweep(tmp_path / "ray", ray_head, ray_env, *SWEEP)
    assert "4 finished" in out, out
    local_dir = tmp_path / "local"
    local = run_cli(
        *SWEEP, "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={local_dir}", multirun=True
    )
    assert local.returncode == 0, local.stdout
    assert len(sweep_table(tmp_path / "ray")) == 4 * 3
    assert_same_tables(tmp_path / "ray", tmp_path / "local")


def test_a_killed_ray_task_is_a_failed_job_and_the_others_finish(tmp_path, ray_head, ray_env):
    out = ray_sweep(tmp_path, ray_head, ray_env, *CRASH, rc=1)
    assert "1 failed, 1 finished" in out, out
    jobs = {
        read_job_json(d)["config"]["dataset"]["d"]: read_job_json(d) for d in job_dirs(tmp_path)
    }
    assert sorted(jobs) == [2, 3], jobs
    killed = jobs.pop(3)
    # Ray names the task of a worker that died WorkerCrashedError, or NodeDiedError where its
    # raylet's report of the death comes late (seen with the machine loaded; the node lived on)
    assert killed["status"] == "failed", killed
    assert killed["ray_error"] in ("WorkerCrashedError", "NodeDiedError"), killed
    assert "ended without a result" in killed["error"], killed
    assert all(j["status"] == "finished" for j in jobs.values()), jobs
    finished = {p: p.read_bytes() for p in tmp_path.glob("*/runs.parquet")}
    assert len(finished) == 1

    # the re-run retries only the dead one (which dies again). The summary line is the driver's;
    # a task's own "already finished" log line comes through Ray's log forwarding, which may
    # lose it when the driver exits first (seen in CI), so the test reads the summary
    out = ray_sweep(tmp_path, ray_head, ray_env, *CRASH, rc=1)
    assert "1 failed, 1 finished" in out, out
    assert "0 run, 1 skipped, 1 failed, 0 not started" in out, out
    assert {p: p.read_bytes() for p in finished} == finished
    assert json.loads((tmp_path / "1" / "job.json").read_text())["status"] == "failed"
