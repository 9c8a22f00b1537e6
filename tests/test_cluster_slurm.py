"""The cluster tier: sweeps through hydra/launcher=slurm on a real single-node Slurm cluster.

    python -m pytest -m cluster          # this tier alone (CI runs it with the rest)

The cluster (slurmctld, slurmd, slurmdbd with MariaDB, munge: Debian's Slurm 22.05) is brought
up by .ci/slurm-cluster.sh, which installs the packages when they are missing; that needs root
on a Debian machine. Because it installs and starts system daemons, the tier runs only in CI
(CI=true) or when asked for (ATTNSVM_SYSTEM_TESTS=1); elsewhere it skips saying so. Where the
cluster cannot come up the tests fail saying why.
Deselect them with ``-m "not cluster"``. A cluster this module started is torn down at its end.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

from cli_helpers import REPO, attnsvm_cmd, cli_env, read_job_json, run_cli, sweep_table

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.system("Slurm and MariaDB")]

SCRIPT = REPO / ".ci" / "slurm-cluster.sh"
STATE = Path(os.environ.get("ATTNSVM_SLURM_DIR", "/var/tmp/attnsvm-slurm"))
# four jobs that each last ~6 s after their ~6 s of start-up: the draw sleeps 3 s, once when
# the job checks its data set (before job.json says running) and once when it draws them
# (tests/crash_example.py; the numbers are the published draw's). Long enough to be cancelled
# and killed mid-way (a running job has 3 s of sleep left), and the sleep costs no CPU that the
# suite's other tests could use
SWEEP = [
    "dataset=callable",
    "dataset.target=crash_example.make",
    "+dataset.kwargs.sleep_s=3",
    "dataset.d=3,4",
    "parameterization=w,kq",
    "seeds=6",
    "optimizer.steps=200",
    "optimizer.checkpoint_every=50",
]
SEEDS = 6
TESTS_ON_PATH = {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
SLURM = ["hydra/launcher=slurm", "hydra.launcher.timeout_min=10"]


def cluster(cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), cmd], capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running cluster, held under a lock so two test sessions never share it at once."""
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / "pytest.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        was_up = cluster("status").returncode == 0
        start = time.perf_counter()
        res = cluster("up")
        if res.returncode != 0:
            pytest.fail(
                f"the Slurm cluster did not come up (.ci/slurm-cluster.sh up, exit "
                f"{res.returncode}); it needs root on Debian with apt. Deselect this tier "
                f'with -m "not cluster".\n{res.stdout}{res.stderr}',
                pytrace=False,
            )
        print(f"slurm cluster up in {time.perf_counter() - start:.1f} s (was up: {was_up})")
        yield
        if not was_up:
            down = cluster("down")
            assert down.returncode == 0, down.stderr


@pytest.fixture
def job_name(slurm_cluster):
    """A Slurm job name of this test's own; whatever happens, none of its jobs stays queued."""
    name = f"attnsvm-test-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run(["scancel", "--name", name], check=False, timeout=60)


@pytest.fixture(scope="module")
def local_table(tmp_path_factory):
    """The sweep on the local launcher: the rows every cluster run must reproduce."""
    sweep_dir = tmp_path_factory.mktemp("local")
    res = run_cli(
        *SWEEP, "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep_dir}", multirun=True,
        **TESTS_ON_PATH,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout
    return sweep_table(sweep_dir), sweep_table(sweep_dir, "trajectory.parquet")


def start_sweep(sweep_dir: Path, name: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        attnsvm_cmd(
            *SWEEP,
            *SLURM,
            f"hydra.launcher.name={name}",
            f"hydra.sweep.dir={sweep_dir}",
            multirun=True,
        ),
        cwd=REPO,
        env=cli_env(**TESTS_ON_PATH, **env),  # the Slurm tasks inherit it (crash_example)
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # a suite started in the background (`.ci/run &`) inherits SIGINT ignored, and Python
        # then installs no KeyboardInterrupt handler: the launcher must hear Ctrl-C anyway
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def finish(proc: subprocess.Popen, timeout: float = 300, rc: int | None = 0) -> str:
    """The sweep's output; its exit code must be ``rc`` (1: some job failed; None: either)."""
    out, _ = proc.communicate(timeout=timeout)
    assert rc is None or proc.returncode == rc, out
    return out


def squeue(name: str, *states: str) -> list[str]:
    """Slurm ids of the tasks named ``name`` still in the queue (pending, running, completing),
    or in ``states``."""
    state_args = ["-t", ",".join(states)] if states else []
    res = subprocess.run(
        ["squeue", "-h", "-r", "--name", name, *state_args, "-o", "%i"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return res.stdout.split()


def computing_task(sweep_dir: Path, name: str, timeout: float = 120) -> tuple[str, Path]:
    """(Slurm id, job dir) of an array task that is running and computing (job.json running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for task in squeue(name, "RUNNING"):
            job_dir = sweep_dir / task.split("_")[1]
            try:
                if read_job_json(job_dir)["status"] == "running":
                    return task, job_dir
            except (FileNotFoundError, json.JSONDecodeError):
                pass
        time.sleep(0.2)
    raise AssertionError(f"no task of {name} computing after {timeout} s: {squeue(name)}")


def sacct_states(name: str, timeout: float = 60) -> dict[str, str]:
    """Each task's final Slurm state. A sweep ends once every task has written its result, and
    a task's process may still be exiting then: its state is final only once it has left. The
    accounting database hears of a job from slurmctld a moment later: no record yet is no
    answer either (a CI run read {} right after the cancelled sweep drained)."""
    deadline = time.monotonic() + timeout
    while True:
        res = subprocess.run(
            ["sacct", "-n", "-X", "--name", name, "-o", "JobID,State", "--parsable2"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        states = dict(line.split("|", 1) for line in res.stdout.splitlines())
        if states and not set(states.values()) & {"RUNNING", "COMPLETING", "PENDING"}:
            return states
        if time.monotonic() > deadline:
            return states  # the caller's assertion shows what stayed
        time.sleep(0.5)


def drained(name: str, timeout: float = 60) -> list[str]:
    """The tasks of ``name`` still queued after at most ``timeout`` s: [] once all have left
    (a task whose result the sweep has read may take a moment to exit)."""
    deadline = time.monotonic() + timeout
    while (left := squeue(name)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def assert_same_rows(sweep_dir: Path, local_table) -> None:
    runs, trajectory = local_table
    pd.testing.assert_frame_equal(sweep_table(sweep_dir), runs, check_exact=True)
    pd.testing.assert_frame_equal(
        sweep_table(sweep_dir, "trajectory.parquet"), trajectory, check_exact=True
    )


def test_slurm_job_array_gives_the_local_rows(tmp_path, job_name, local_table):
    out = finish(start_sweep(tmp_path, job_name))
    assert "4 finished" in out, out
    states = sacct_states(job_name)
    array = {task.split("_")[0] for task in states}
    assert len(array) == 1 and len(states) == 4, states  # one array of four tasks
    assert set(states.values()) == {"COMPLETED"}, states
    assert_same_rows(tmp_path, local_table)
    assert drained(job_name) == []


def test_scancel_of_one_task_is_a_failed_job_and_a_rerun_resumes_it(
    tmp_path, job_name, local_table
):
    proc = start_sweep(tmp_path, job_name)
    task, cancelled = computing_task(tmp_path, job_name)
    subprocess.run(["scancel", task], check=True, timeout=60)
    out = finish(proc, rc=1)
    assert "3 run, 0 skipped, 1 failed, 0 not started" in out, out
    job = read_job_json(cancelled)
    # scancel sends SIGTERM: the job records itself interrupted, or, killed before it could,
    # the launcher records it failed with Slurm's state
    assert job["status"] in ("interrupted", "failed"), job
    if job["status"] == "interrupted":
        assert job["signal"] == "SIGTERM" and "1 interrupted" in out, job
    else:
        assert job["slurm_state"].startswith("CANCELLED"), job
        assert job["slurm_job_id"] == task and task in job["error"], job
    others = {p: p.read_bytes() for p in tmp_path.glob("*/job.json") if p.parent != cancelled}
    assert len(others) == 3
    assert all(json.loads(b)["status"] == "finished" for b in others.values())
    runs, _ = local_table
    done = sweep_table(tmp_path)
    expected = runs[runs.config_hash.isin(done.config_hash)].reset_index(drop=True)
    pd.testing.assert_frame_equal(done, expected, check_exact=True)  # intact: 3 whole jobs
    assert len(done) == 3 * SEEDS

    calls = tmp_path / "calls"  # the re-run computes only the cancelled job: only it draws
    out = finish(start_sweep(tmp_path, job_name, CRASH_EXAMPLE_CALLS=str(calls)))
    assert "4 finished" in out, out
    assert {p: p.read_bytes() for p in others} == others
    logs = "".join(p.read_text() for p in tmp_path.glob(".submitit/*/*_log.out"))
    assert logs.count("already finished") == 3, logs
    assert set(calls.read_text().split()) == {str(job["config"]["dataset"]["d"])}
    assert_same_rows(tmp_path, local_table)
    assert drained(job_name) == []


def test_killed_slurmd_and_a_restart_end_in_complete_identical_tables(
    tmp_path, job_name, local_table
):
    proc = start_sweep(tmp_path, job_name)
    computing_task(tmp_path, job_name)
    slurmd = int((STATE / "run" / "slurmd.pid").read_text())
    os.kill(slurmd, signal.SIGKILL)
    time.sleep(3)
    assert cluster("status").returncode != 0  # the script sees slurmd gone
    restart = cluster("up")
    assert restart.returncode == 0 and "starting slurmd" in restart.stderr, restart.stderr
    assert "starting slurmctld" not in restart.stderr  # only what was down is restarted
    out = finish(proc, rc=None)  # 1 when a task was lost with slurmd
    if "4 finished" not in out:  # a task lost with slurmd is a failed job: a re-run resumes
        print(f"first pass after the slurmd kill:\n{out}")
        out = finish(start_sweep(tmp_path, job_name))
    assert "4 finished" in out, out
    assert_same_rows(tmp_path, local_table)
    assert drained(job_name) == []


def test_an_interrupted_sweep_leaves_no_job_in_the_queue(tmp_path, job_name):
    proc = start_sweep(tmp_path, job_name)
    computing_task(tmp_path, job_name)
    assert len(squeue(job_name)) >= 2  # tasks queued or running when the sweep is stopped
    proc.send_signal(signal.SIGINT)  # Ctrl-C on the launching process
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out
    assert "cancelled Slurm job" in out, out
    assert drained(job_name, timeout=30) == []
    states = sacct_states(job_name)
    assert any(s.startswith("CANCELLED") for s in states.values()), states
