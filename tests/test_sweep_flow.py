"""Local sweeps end to end: the same ad-hoc command resumes computing nothing; the
sweep's workers die with it (kill -9 included); a dead worker, a full disk or a signal fails
only the jobs it hits, and every sweep ends with ``N run, M skipped, K failed, L not started``.

The fault injections live in a ``sitecustomize`` loaded by every Python process of the sweep
(the workers too), as in test_failures.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnsvm.results.sweep_status import sweep_line
from attnsvm.results.sweepdir import adhoc_name, adhoc_sweep_dir
from bits import assert_frames_identical
from cli_helpers import (
    REPO,
    SMALL,
    attnsvm_cmd,
    cli_env,
    job_dirs,
    read_job_json,
    run_cli,
    sweep_table,
)

HOOK = """
import os, sys
if os.environ.get("ATTNSVM_TEST_PIDS"):
    if "--multiprocessing-fork" in sys.argv:                  # a worker spawned by the pool
        with open(os.environ["ATTNSVM_TEST_PIDS"], "a") as fh:
            fh.write(f"{os.getpid()}\\n")
if os.environ.get("ATTNSVM_TEST_CALLS"):
    import attnsvm.experiments.gd.job as _pipeline
    _counted = _pipeline.run_job

    def counted_run_job(cfg, progress=None):                 # a job computed, in any process
        with open(os.environ["ATTNSVM_TEST_CALLS"], "a") as fh:
            fh.write(f"{cfg.dataset.d} {cfg.parameterization}\\n")
        return _counted(cfg, progress)

    _pipeline.run_job = counted_run_job
if os.environ.get("ATTNSVM_TEST_COMPOSE"):
    from hydra._internal.config_loader_impl import ConfigLoaderImpl as _Loader
    _load = _Loader.load_sweep_config

    def load_sweep_config(self, master, overrides):   # a Hydra composition, in any process
        with open(os.environ["ATTNSVM_TEST_COMPOSE"], "a") as fh:
            fh.write(" ".join(overrides) + "\\n")
        return _load(self, master, overrides)

    _Loader.load_sweep_config = load_sweep_config
if os.environ.get("ATTNSVM_TEST_D"):
    import signal
    import attnsvm.experiments.gd.job as _pipeline
    _run_job = _pipeline.run_job

    def run_job(cfg, progress=None):
        if cfg.dataset.d == int(os.environ["ATTNSVM_TEST_D"]):
            if os.environ.get("ATTNSVM_TEST_FILL"):   # the disk fills up during this job,
                import glob, time                     # once the job before it is written
                deadline = time.monotonic() + 60      # (the sweep's process writes it)
                while time.monotonic() < deadline and not any(
                    '"finished"' in open(p).read()
                    for p in glob.glob(os.environ["ATTNSVM_TEST_FILL_AFTER"] + "/*/job.json")
                ):
                    time.sleep(0.05)
                with open(os.environ["ATTNSVM_TEST_FILL"], "wb") as fh:
                    try:
                        while True:
                            fh.write(bytes(1 << 16))
                            fh.flush()
                    except OSError:
                        pass
            else:                                     # this job's worker is killed
                os.kill(os.getpid(), signal.SIGKILL)
        return _run_job(cfg, progress)

    _pipeline.run_job = run_job
"""
# jobs that run until a test stops them; the torch engine returns to Python every step, so a
# signal is handled at once (the fused kernel handles it when its call returns)
LONG = ["engine=torch", "optimizer.steps=1000000", "optimizer.checkpoint_every=1000", "seeds=2"]


@pytest.fixture
def hook(tmp_path):
    """Environment that loads HOOK in every process; ``pids`` lists the workers started."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    pids = tmp_path / "worker_pids"
    path = os.pathsep.join([str(tmp_path / "hook"), str(REPO)])
    return {"PYTHONPATH": path, "ATTNSVM_TEST_PIDS": str(pids)}


def _workers(pids_file: Path) -> list[int]:
    return [int(x) for x in pids_file.read_text().split()] if pids_file.exists() else []


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _assert_all_end(pids: list[int], within: float = 30) -> None:
    """Every process of ``pids`` is gone within ``within`` seconds (survivors are killed)."""
    deadline = time.monotonic() + within
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [p for p in pids if _alive(p)]
    for p in survivors:
        os.kill(p, signal.SIGKILL)
    assert not survivors, f"workers outlived their sweep by {within} s"


def _start(*overrides: str, env: dict, cwd: Path = REPO, multirun=True) -> subprocess.Popen:
    return subprocess.Popen(
        attnsvm_cmd(*overrides, multirun=multirun),
        cwd=cwd,
        env=cli_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _wait_running(root: Path, count: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until ``count`` job.json files below ``root`` say ``running``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        states = [json.loads(p.read_text()).get("status") for p in root.rglob("job.json")]
        if states.count("running") >= count:
            time.sleep(1.0)  # inside training
            return
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"{count} running jobs never seen:\n{proc.communicate()[0]}")


def test_adhoc_name_ignores_order_and_non_result_keys():
    a = adhoc_name(["dataset.d=2,4,8", "parameterization=w,kq", "seeds=5"])
    assert a.startswith("dataset.d=2,4,8_parameterization=kq,w_seeds=5-")
    assert a == adhoc_name(["seeds=5", "threads=2", "parameterization=w,kq", "dataset.d=2,4,8"])
    assert a != adhoc_name(["dataset.d=2,4,8", "parameterization=w,kq", "seeds=6"])
    odd = adhoc_name(["dataset.path=/data/my file.pt", "+x=" + "9" * 200])
    assert "/" not in odd and " " not in odd and len(odd) <= 80 + 9


def test_adhoc_name_ignores_the_order_of_a_grids_values():
    a = adhoc_name(["dataset.d=8,4,2", "parameterization=w,kq"])
    assert a == adhoc_name(["parameterization=kq,w", "dataset.d=2,4,8"])
    assert a.startswith("dataset.d=2,4,8_parameterization=kq,w-")
    assert adhoc_name(["optimizer.lr=0.1,1,0.01"]) == adhoc_name(["optimizer.lr=0.01,0.1,1"])
    assert adhoc_name(["dataset.d=2,4,8"]) != adhoc_name(["dataset.d=2,4,8,16"])


@pytest.mark.parametrize(
    "grid",
    [
        ["dataset.d=2,4,8,16", "parameterization=kq,w", "seeds=5"],
        ["dataset.d=2,3,4,5,6,7,8,9,10,11,12", "optimizer.lr=1e-3,1e-2,0.1"],
        ["+sweeps=rank", "dataset.n=4"],
        ["dataset.d=range(2,8)", "seed=0,10,20"],
    ],
)
def test_an_already_sorted_grid_keeps_the_name_it_always_had(grid):
    assert adhoc_name(grid) == adhoc_name(grid, canonical=False)  # the name before sorting


def test_a_sweep_dir_named_before_values_were_sorted_is_resumed(tmp_path):
    grid = ["dataset.d=2,4,8", "parameterization=w,kq", "seeds=3"]
    base = str(tmp_path)
    new = adhoc_sweep_dir(base, grid)
    assert new == adhoc_sweep_dir(base, ["dataset.d=8,4,2", "parameterization=kq,w", "seeds=3"])
    (tmp_path / adhoc_name(grid, canonical=False)).mkdir()  # a sweep of the version before
    assert adhoc_sweep_dir(base, grid) == f"{base}/{adhoc_name(grid, canonical=False)}"
    (tmp_path / adhoc_name(grid)).mkdir()  # both exist: the canonical one wins
    assert adhoc_sweep_dir(base, grid) == new


def test_n_jobs_counts_workers_as_joblib_does():
    from hydra_plugins.attnsvm_local import worker_count

    assert worker_count(-1, jobs=40, cores=8) == 8 and worker_count(-2, jobs=40, cores=8) == 7
    assert worker_count(3, jobs=40, cores=8) == 3 and worker_count(16, jobs=40, cores=8) == 16
    assert worker_count(-1, jobs=2, cores=8) == 2  # never more than the jobs to run
    assert worker_count(-8, jobs=40, cores=2) == 1 and worker_count(-1, jobs=0, cores=2) == 1


def test_sweep_line_counts_every_status():
    line = sweep_line(["finished", "skipped", "failed", "interrupted", None, "finished"])
    assert line == "2 run, 1 skipped, 2 failed, 1 not started"


@pytest.mark.slow
def test_same_adhoc_command_twice_computes_nothing(tmp_path, hook):
    grid = ["dataset.d=2,4,8", "parameterization=w,kq", "seeds=3", "hydra.launcher.n_jobs=1"]
    grid += ["optimizer.steps=100"]  # short jobs: none is timed
    pids, calls = Path(hook["ATTNSVM_TEST_PIDS"]), tmp_path / "calls"
    composed = tmp_path / "composed"
    env = {**hook, "ATTNSVM_TEST_CALLS": str(calls), "ATTNSVM_TEST_COMPOSE": str(composed)}
    for attempt in range(2):
        proc = _start(*grid, env=env, cwd=tmp_path)
        out = proc.communicate(timeout=600)[0]
        assert proc.returncode == 0, out
        # planning and dispatch compose once per config group choice (w, kq), not per job
        assert len(composed.read_text().splitlines()) == 2, composed.read_text()
        composed.unlink()
        if attempt == 0:
            assert out.rstrip().endswith("attnsvm sweep: 6 run, 0 skipped, 0 failed, 0 not started")
            assert len(_workers(pids)) == 1, "the first run should start its one worker"
            assert len(calls.read_text().splitlines()) == 6, "each job computed once"
            jobs = {p: p.read_bytes() for p in tmp_path.rglob("job.json")}
            pids.unlink()
            calls.unlink()
    assert out.rstrip().endswith("attnsvm sweep: 0 run, 6 skipped, 0 failed, 0 not started")
    # at most the worker started as the launcher was set up (before planning), ended with it
    assert len(_workers(pids)) <= 1, "an all-finished sweep started the pool's workers"
    _assert_all_end(_workers(pids))
    assert not calls.exists(), f"an all-finished sweep computed jobs: {calls.read_text()}"
    assert {p: p.read_bytes() for p in tmp_path.rglob("job.json")} == jobs
    (sweep_dir,) = (tmp_path / "outputs" / "sweeps" / "adhoc").iterdir()
    name = "dataset.d=2,4,8_optimizer.steps=100_parameterization=kq,w_seeds=3-"
    assert sweep_dir.name.startswith(name), sweep_dir.name
    assert len(job_dirs(sweep_dir)) == 6


@pytest.mark.slow
def test_kill_9_of_the_sweep_leaves_no_worker_alive(tmp_path, hook):
    sweep = tmp_path / "s"
    proc = _start(
        "dataset.d=2,3", *LONG, "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", env=hook
    )
    _wait_running(sweep, 2, proc)
    # both are the sweep's own children (one kind of worker: spawned by its pool)
    workers = [p for p in _workers(Path(hook["ATTNSVM_TEST_PIDS"])) if _alive(p)]
    assert len(workers) == 2 and all(_parent(p) == proc.pid for p in workers), workers
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    _assert_all_end(workers)
    # the workers had time to say why their jobs stopped
    for d in job_dirs(sweep):
        job = read_job_json(d)
        assert (job["status"], job["signal"]) == ("interrupted", "SIGTERM"), job["status"]


@pytest.mark.slow
def test_a_killed_worker_fails_its_job_only(tmp_path, hook):
    sweep = tmp_path / "s"
    env = {**hook, "ATTNSVM_TEST_D": "3"}
    res = run_cli(
        "dataset.d=2,3,4",
        *SMALL,
        "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={sweep}",
        multirun=True,
        **env,
    )
    assert res.returncode == 1, res.stdout  # a sweep with failed jobs exits 1, after its summary
    assert res.stdout.rstrip().endswith("1 failed, 0 not started"), res.stdout
    assert "attnsvm sweep: 2 run, 0 skipped, 1 failed, 0 not started" in res.stdout
    assert "Traceback" not in res.stdout
    jobs = {read_job_json(d)["config"]["dataset"]["d"]: read_job_json(d) for d in job_dirs(sweep)}
    assert {d: j["status"] for d, j in jobs.items()} == {2: "finished", 3: "failed", 4: "finished"}
    assert "killed by SIGKILL" in jobs[3]["error"], jobs[3]["error"]

    again = run_cli(
        "dataset.d=2,3,4",
        *SMALL,
        "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={sweep}",
        multirun=True,
    )
    assert "attnsvm sweep: 1 run, 2 skipped, 0 failed, 0 not started" in again.stdout, again.stdout
    assert again.returncode == 0, again.stdout


@contextlib.contextmanager
def small_disk(where: Path):
    """A 16 MiB tmpfs at ``where`` (as root)."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def again_as_root_of_a_namespace(request, tmp_path: Path) -> None:
    """Run the calling test again as root of a new user and mount namespace (``unshare -rm``),
    where a user who is not root may mount a tmpfs, and assert that it passed there; skip
    saying why where this Linux forbids unprivileged user namespaces."""
    try:
        allowed = subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0
    except OSError:
        allowed = False
    if not allowed:
        pytest.skip("mounting a 16 MiB tmpfs needs root or unprivileged user namespaces")
    inner = subprocess.run(
        ["unshare", "-rm", sys.executable, "-m", "pytest", request.node.nodeid, "-n", "0",
         "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'inner'}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
    )  # fmt: skip
    assert inner.returncode == 0 and " 1 passed" in inner.stdout, inner.stdout


@pytest.mark.slow
def test_a_full_disk_fails_the_jobs_it_hits_and_the_sweep_ends_with_its_summary(
    tmp_path, hook, request
):
    if os.geteuid() != 0:
        again_as_root_of_a_namespace(request, tmp_path)
        return
    with small_disk(tmp_path / "disk") as disk:
        _fill_the_disk_mid_sweep(disk, hook)


def _fill_the_disk_mid_sweep(disk: Path, hook: dict) -> None:
    sweep, filler = disk / "s", disk / "filler"
    args = ["dataset.d=2,3,4", *SMALL, "hydra.launcher.n_jobs=1", f"hydra.sweep.dir={sweep}"]
    env = {**hook, "ATTNSVM_TEST_D": "3", "ATTNSVM_TEST_FILL": str(filler)}
    env["ATTNSVM_TEST_FILL_AFTER"] = str(sweep)
    res = run_cli(*args, multirun=True, **env)
    assert res.returncode == 1, res.stdout
    assert res.stdout.rstrip().endswith("attnsvm sweep: 1 run, 0 skipped, 2 failed, 0 not started")
    assert "Traceback" not in res.stdout, res.stdout
    assert "No space left on device" in res.stdout
    done = [
        read_job_json(d)["config"]["dataset"]["d"]
        for d in job_dirs(sweep)
        if read_job_json(d)["status"] == "finished"
    ]
    assert done == [2]

    filler.unlink()  # space again: the same command computes the two jobs the disk failed
    again = run_cli(*args, multirun=True)
    assert again.returncode == 0, again.stdout
    assert again.stdout.rstrip().endswith(
        "attnsvm sweep: 2 run, 1 skipped, 0 failed, 0 not started"
    ), again.stdout


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signalled_single_job_records_interrupted(tmp_path, sig, code):
    run_dir = tmp_path / "run"
    proc = _start(*LONG, f"hydra.run.dir={run_dir}", env={}, multirun=False)
    _wait_running(run_dir, 1, proc)
    proc.send_signal(sig)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == code, out
    assert "Traceback" not in out, out
    job = read_job_json(run_dir)
    assert (job["status"], job["signal"]) == ("interrupted", sig.name)


@pytest.mark.slow
def test_sigterm_of_the_sweep_interrupts_its_jobs_and_aggregate_names_the_rest(tmp_path, hook):
    sweep = tmp_path / "s"
    proc = _start(
        "dataset.d=2,3,4,5", *LONG, "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}", env=hook
    )
    _wait_running(sweep, 2, proc)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 143, out
    assert out.rstrip().endswith("attnsvm sweep: 0 run, 0 skipped, 2 failed, 2 not started"), out
    assert "Traceback" not in out, out
    assert [read_job_json(d)["status"] for d in job_dirs(sweep)] == ["interrupted"] * 2
    assert not any(_alive(p) for p in _workers(Path(hook["ATTNSVM_TEST_PIDS"])))

    agg = subprocess.run(
        [sys.executable, "-m", "attnsvm.results.aggregate", str(sweep), "--no-figures"],
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    started = {read_job_json(d)["config"]["dataset"]["d"] for d in job_dirs(sweep)}
    never = [line for line in agg.stdout.splitlines() if "never started" in line]
    assert len(never) == 2, agg.stdout
    for d in {2, 3, 4, 5} - started:
        assert any(f"dataset.d={d} " in line for line in never), agg.stdout


@pytest.mark.slow
def test_rows_are_the_bits_of_the_joblib_launcher(tmp_path):
    # n_jobs=-1, both launchers' default: one worker per core
    grid = ["dataset.d=3,4", "parameterization=w,kq", *SMALL, "hydra.launcher.n_jobs=-1"]
    for launcher in ("local", "joblib"):
        res = run_cli(
            *grid,
            f"hydra/launcher={launcher}",
            f"hydra.sweep.dir={tmp_path / launcher}",
            multirun=True,
        )
        assert res.returncode == 0, res.stdout
    for table in ("runs.parquet", "trajectory.parquet"):
        got, want = sweep_table(tmp_path / "local", table), sweep_table(tmp_path / "joblib", table)
        assert len(got) == 4 * 3 * (1 if table == "runs.parquet" else 4)
        assert_frames_identical(got, want, table)


@pytest.mark.slow
def test_a_job_whose_message_cannot_be_made_fails_as_a_job(tmp_path):
    """A job that cannot start (its log config does not resolve when the worker sets up its
    log) fails as that job, with the reason, not the sweep."""
    sweep = tmp_path / "s"
    res = run_cli(
        "dataset.d=2,3,4,5",
        *SMALL,
        "hydra.job_logging.root.level=${oc.env:ATTNSVM_NOT_SET_ANYWHERE}",
        "hydra.launcher.n_jobs=1",
        f"hydra.sweep.dir={sweep}",
        multirun=True,
    )
    assert res.returncode == 1, res.stdout
    assert "Traceback" not in res.stdout, res.stdout
    assert res.stdout.rstrip().endswith("attnsvm sweep: 0 run, 0 skipped, 4 failed, 0 not started")
    for d in job_dirs(sweep):
        job = read_job_json(d)
        assert job["status"] == "failed" and "ATTNSVM_NOT_SET_ANYWHERE" in job["error"], job
