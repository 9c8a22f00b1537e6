"""The cluster tier, Ray on several nodes: a sweep spread over two worker nodes loses one.

    python -m pytest -m cluster -k node tests/test_cluster_ray_nodes.py

A head (no CPUs: it only schedules) and two worker nodes of one CPU each run on this machine as
separate raylets (``ray.cluster_utils.Cluster``), so a job can only run on a worker node and the
sweep's jobs land on both. Each job records its node in job.json (``node``: host and Ray node
id). While a job runs on the second worker node, that node is killed (every one of its
processes, SIGKILL): its job is recorded ``failed`` with Ray's error, no finished job is lost or
duplicated, and a re-run on what is left of the cluster completes the sweep with rows
bit-identical to the local launcher's. The cluster is shut down at the test's end whatever
happened.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from cli_helpers import (
    REPO,
    SMALL,
    assert_same_tables,
    attnsvm_cmd,
    cli_env,
    job_dirs,
    read_job_json,
    run_cli,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# six jobs of about 2 s each (the draw sleeps; the numbers are the published draw's)
SWEEP = [
    "dataset=callable",
    "dataset.target=crash_example.make",
    "+dataset.kwargs.sleep_s=2",
    "dataset.d=2,3,4,5,6,7",
    *SMALL,
]
LOST = {"NodeDiedError", "WorkerCrashedError", "LocalRayletDiedError", "ObjectLostError"}


@pytest.fixture
def cluster(monkeypatch, tmp_path):
    """(Cluster, [worker node 1, worker node 2]); shut down at the end whatever happened. Its
    jobs' draws are listed in ``tmp_path/calls`` (tests/crash_example.py)."""
    from ray.cluster_utils import Cluster

    path = os.pathsep.join([str(REPO), str(REPO / "tests")])
    monkeypatch.setenv("PYTHONPATH", path)  # the raylets' workers import the tests' modules
    monkeypatch.setenv("RAY_DEDUP_LOGS", "0")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("CRASH_EXAMPLE_CALLS", str(tmp_path / "calls"))
    start = time.perf_counter()
    try:
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        workers = [c.add_node(num_cpus=1) for _ in range(2)]
        c.wait_for_nodes()
    except Exception as exc:
        pytest.fail(f"the Ray cluster did not come up: {exc!r}", pytrace=False)
    print(f"ray head and 2 worker nodes up in {time.perf_counter() - start:.1f} s")
    try:
        yield c, workers
    finally:
        c.shutdown()


def jobs_of(sweep_dir: Path) -> list[dict]:
    found = []
    for d in job_dirs(sweep_dir):
        try:
            found.append({**read_job_json(d), "dir": d})
        except ValueError:  # being replaced at this moment
            pass
    return found


def wait_for(what: str, check, proc, timeout: float = 180) -> None:
    end = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended before {what}:\n{proc.stdout.read()}", pytrace=False)
        if time.monotonic() > end:
            proc.kill()
            pytest.fail(f"no {what} in {timeout:.0f} s:\n{proc.stdout.read()}", pytrace=False)
        time.sleep(0.2)


def ray_overrides(sweep_dir: Path, address: str) -> list[str]:
    return [
        *SWEEP,
        "hydra/launcher=ray",
        f"hydra.launcher.address={address}",
        f"hydra.sweep.dir={sweep_dir}",
    ]


def test_a_sweep_over_two_nodes_survives_losing_one_node(tmp_path, cluster):
    c, (kept, victim) = cluster
    sweep_dir = tmp_path / "ray"
    proc = subprocess.Popen(
        attnsvm_cmd(*ray_overrides(sweep_dir, c.address), multirun=True),
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def on_victim(status: str) -> list[dict]:
        return [
            j
            for j in jobs_of(sweep_dir)
            if j["status"] == status and j.get("node", "").endswith(victim.node_id)
        ]

    try:  # the victim has finished a job and runs another: kill it now
        wait_for("job finished on the second node", lambda: on_victim("finished"), proc)
        wait_for("second job running on the second node", lambda: on_victim("running"), proc)
        running = on_victim("running")[0]["config_hash"]
        finished_there = {j["config_hash"] for j in on_victim("finished")}
        c.remove_node(victim, allow_graceful=False)
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode is not None, out
    assert "Connected to Ray cluster" in out and "Started a local Ray" not in out, out

    jobs = jobs_of(sweep_dir)
    hashes = [j["config_hash"] for j in jobs]
    assert len(hashes) == 6 and len(set(hashes)) == 6, jobs  # none duplicated, none missing
    by_hash = {j["config_hash"]: j for j in jobs}
    lost = by_hash[running]
    assert lost["status"] == "failed" and lost.get("ray_error") in LOST, lost
    assert "ended without a result" in lost["error"], lost
    assert lost["node"].endswith(victim.node_id), lost  # where it ran: its running record's
    for chash in finished_there:  # finished on the lost node before it went: still finished
        assert by_hash[chash]["status"] == "finished", by_hash[chash]
    finished = [j for j in jobs if j["status"] == "finished"]
    nodes = {j["node"].rsplit("/", 1)[-1] for j in finished}
    assert nodes == {kept.node_id, victim.node_id}, nodes  # the sweep used both nodes
    assert {j["status"] for j in jobs} <= {"finished", "failed"}, jobs
    kept_bytes = {j["dir"]: (j["dir"] / "runs.parquet").read_bytes() for j in finished}

    # the re-run, on what is left: the head and one worker node; only the failed job draws
    (tmp_path / "calls").unlink()
    rerun = run_cli(*ray_overrides(sweep_dir, c.address), multirun=True, timeout=240)
    assert rerun.returncode == 0, rerun.stdout
    failed_before = len(jobs) - len(finished)
    assert f"{failed_before} run, {len(finished)} skipped, 0 failed" in rerun.stdout, rerun.stdout
    redrawn = {int(d) for d in (tmp_path / "calls").read_text().split()}
    assert redrawn == {j["config"]["dataset"]["d"] for j in jobs if j["status"] != "finished"}
    after = jobs_of(sweep_dir)
    assert len(after) == 6 and all(j["status"] == "finished" for j in after), after
    assert {j["dir"]: (j["dir"] / "runs.parquet").read_bytes() for j in finished} == kept_bytes
    assert all(j["node"].endswith(kept.node_id) for j in after if j["config_hash"] == running)

    local_dir = f"hydra.sweep.dir={tmp_path / 'local'}"  # two workers: the draws' sleeps overlap
    local = run_cli(*SWEEP, "hydra.launcher.n_jobs=2", local_dir, multirun=True)
    assert local.returncode == 0, local.stdout
    assert_same_tables(sweep_dir, tmp_path / "local")
