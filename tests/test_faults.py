"""Faults and extreme inputs: non-finite training is ``diverged`` (never ``ok``), a finished job
is one whose files verify, and each bad input of the docs' table is one ``attnsvm:`` line at
composition (or before a job directory is written) that leaves no output directory behind."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

import attnsvm
from attnsvm.composition import DatasetConfig
from attnsvm.config import ConfigError, Engine, HeadConfig, OptimizerConfig, ParameterizationConfig
from attnsvm.data.generators import make_instances
from attnsvm.experiments import entry
from attnsvm.results.aggregate import load_sweep
from attnsvm.results.aggregate import main as aggregate_main
from attnsvm.results.store import JOB, RUNS, TRAJECTORY, find_broken, is_finished, read_job
from attnsvm.train.divergence import divergence
from attnsvm.train.heads import make_head
from attnsvm.train.loop import train
from cli_helpers import REPO, SMALL, cli_env, job_dirs, read_job_json, run_cli, sweep_table

SIZES = ["dataset.n=3", "dataset.T=4", "dataset.d=5"]


# --- item 1: non-finite training is diverged, in every engine -----------------------------


@pytest.mark.parametrize("extra", [["engine=auto"], ["engine=torch"], ["parameterization=kq"]])
def test_lr_1e300_is_diverged_for_every_seed_with_step_and_quantity(extra):
    res = attnsvm.run_job(attnsvm.compose([*SMALL, "optimizer.lr=1e300", *extra]))
    assert set(res.runs.status) == {"diverged"}
    for reason in res.runs.reason:
        assert "non-finite at step 20" in reason, reason
        assert "W" in reason  # ||W||_F overflows (w) or W itself is inf/NaN (kq)


def test_lr_1e300_is_diverged_in_the_nexttoken_loop_too():
    nt = ["experiment=nexttoken", "dataset=nexttoken", "seeds=2", "optimizer.steps=40"]
    res = attnsvm.run_job(attnsvm.compose([*nt, "optimizer.lr=1e300"]))
    assert set(res.runs.status) == {"diverged"}
    assert all("non-finite at step 20" in reason for reason in res.runs.reason)


HUGE_STEP = {  # every experiment's own step size at 1e300: every seed diverged, and its
    # summary (printed after the job) still works with no seed ok
    "multitoken": ["experiment=multitoken", "seeds=2", "optimizer.steps=40", "optimizer.lr=1e300"],
    "rankdyn": ["experiment=rankdyn", "seeds=2", "rankdyn.steps=100", "rankdyn.checkpoints=10",
                "rankdyn.lr=1e300"],
    "icl": ["experiment=icl", "seeds=2", "icl.steps=50", "icl.lr=1e300"],
    "regpath": ["experiment=regpath", "seeds=2", "regpath.points=4", "regpath.steps=30",
                "regpath.lr=1e308"],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(HUGE_STEP))
def test_a_huge_step_is_diverged_in_every_experiment_and_summarised(name):
    res = attnsvm.run_job(attnsvm.compose(HUGE_STEP[name]))
    assert set(res.runs.status) == {"diverged"}, res.runs[["status", "reason"]]
    assert all("non-finite" in reason for reason in res.runs.reason)
    text = entry(name).summary_text(res.runs, res.seconds)
    assert "diverged: 2 seeds" in text or "no seed finished" in text, text


def test_a_finite_run_is_not_diverged():
    res = attnsvm.run_job(attnsvm.compose(SMALL))
    assert "diverged" not in set(res.runs.status)


@pytest.mark.parametrize("engine", [Engine.torch, Engine.fused])
def test_a_head_scaled_by_1e300_is_diverged_in_both_engines(engine):
    """The gradient's norm overflows: W never moves. Seeds 1 and 2 of this draw show it."""
    inst = make_instances(DatasetConfig(n=4, T=8, d=10), [0, 1, 2], dtype=torch.float64)
    inst = dataclasses.replace(inst, v=inst.v * 1e300)
    ocfg = OptimizerConfig(steps=40, checkpoint_every=20)
    traj = train(inst, make_head(HeadConfig(), inst), ParameterizationConfig(), ocfg, engine=engine)
    whys = [
        divergence(traj.steps, loss=traj.loss[:, r], grad_norm=traj.grad_norm[:, r], W=traj.W[:, r])
        for r in (1, 2)
    ]
    assert whys == ["||grad|| non-finite at step 0, the first checkpoint that shows it"] * 2


def test_divergence_names_the_first_checkpoint_and_the_quantity():
    steps = [0, 20, 40]
    W = np.ones((3, 2, 2))
    assert divergence(steps, W=W, loss=np.zeros(3)) is None
    W[2, 0, 0] = np.nan
    assert divergence(steps, W=W).startswith("W non-finite at step 40")
    W[1] = 1e200  # finite entries whose norm overflows float64
    assert divergence(steps, W=W).startswith("||W||_F (float64 overflow) non-finite at step 20")
    assert divergence(steps, loss=np.array([0.1, np.inf, 0.2])).startswith("loss non-finite")


# --- item 2: a finished job is one whose files verify ---------------------------------------


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_table_fails_verification_and_job_json_list_is_no_job(tmp_path):
    res = attnsvm.run_job(attnsvm.compose(SMALL), out_dir=tmp_path / "job")
    job = read_job(tmp_path / "job")
    assert set(job["files"]) == {RUNS, TRAJECTORY, "arrays.npz"}  # gd's arrays: verified too
    assert job["files"][RUNS]["rows"] == len(res.runs)
    assert is_finished(tmp_path / "job", res.config_hash)
    _truncate(tmp_path / "job" / TRAJECTORY)
    assert not is_finished(tmp_path / "job", res.config_hash)
    where, problem = find_broken(res.config_hash, tmp_path / "job")
    assert where == tmp_path / "job" and problem.startswith("trajectory.parquet: ")
    (tmp_path / "job" / JOB).write_text("[]")
    assert read_job(tmp_path / "job") is None


@pytest.mark.slow
def test_a_truncated_parquet_is_recomputed_on_rerun_and_aggregate_goes_on(tmp_path, capsys):
    args = ["dataset.d=2,3", *SMALL, f"hydra.sweep.dir={tmp_path}", "hydra/launcher=basic"]
    assert run_cli(*args, multirun=True).returncode == 0
    before = sweep_table(tmp_path)
    broken = next(d for d in job_dirs(tmp_path) if read_job_json(d)["config"]["dataset"]["d"] == 3)
    _truncate(broken / RUNS)
    assert aggregate_main([str(tmp_path), "--no-figures"]) == 0  # the other job is summarised
    report = capsys.readouterr().out
    assert f"not finished (broken): {broken}  runs.parquet: " in report, report
    assert len(load_sweep(tmp_path).runs) == 3
    res = run_cli(*args, multirun=True)
    assert res.returncode == 0
    assert f"results in {broken} fail verification (runs.parquet: " in res.stdout, res.stdout
    assert res.stdout.count("already finished") == 1  # the intact job is skipped
    pd.testing.assert_frame_equal(sweep_table(tmp_path), before)
    assert aggregate_main([str(tmp_path), "--no-figures"]) == 0
    assert len(load_sweep(tmp_path).runs) == 6


@pytest.mark.slow
def test_a_job_json_holding_a_list_does_not_crash_the_sweep(tmp_path):
    args = ["dataset.d=2", *SMALL, f"hydra.sweep.dir={tmp_path}", "hydra/launcher=basic"]
    (tmp_path / "0").mkdir(parents=True)
    (tmp_path / "0" / JOB).write_text("[]")
    res = run_cli(*args, multirun=True)
    assert res.returncode == 0, res.stdout
    assert read_job_json(tmp_path / "0")["status"] == "finished"


# --- item 5: bad inputs, one line at composition, nothing left behind ------------------------


def _file(tmp_path, name, transform=None, **change):
    inst = make_instances(DatasetConfig(n=3, T=4, d=5), [0, 1])
    arrays = {k: getattr(inst, k).numpy().astype(np.float64) for k in ("X", "Y", "Z", "v")}
    path = tmp_path / name
    np.savez(path, **{**arrays, **change})
    if transform is not None:
        transform(path, arrays)
    return str(path)


def _as_npy(path, arrays):
    npy = path.with_name("X.npy")
    np.save(npy, arrays["X"])
    npy.replace(path)  # a .npy under an .npz name


GOOD_X = make_instances(DatasetConfig(n=3, T=4, d=5), [0, 1]).X.numpy().astype(np.float64)
GOOD_V = make_instances(DatasetConfig(n=3, T=4, d=5), [0, 1]).v.numpy().astype(np.float64)
# (name, how the file is made, what the message must contain)
BAD_FILES = [
    ("empty", lambda p, a: p.write_bytes(b""), ["the file is empty (0 bytes)", "np.savez"]),
    ("npy renamed npz", _as_npy, ["a .npy file (one unnamed array), not an .npz"]),
    ("complex X", {"X": GOOD_X + 1j}, ["array 'X' is complex (complex128)", "real numbers"]),
    ("X times 1e300", {"X": GOOD_X * 1e300}, ["array 'X'", "[1e-50, 1e+50]", "rescale"]),
    ("X times 1e-300", {"X": GOOD_X * 1e-300}, ["array 'X'", "[1e-50, 1e+50]", "rescale"]),
    ("v times 1e300", {"v": GOOD_V * 1e300}, ["array 'v'", "[1e-50, 1e+50]"]),
]


@pytest.mark.parametrize("name,make,expected", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_data_file_fails_at_composition(tmp_path, name, make, expected):
    change = make if isinstance(make, dict) else {}
    path = _file(tmp_path, "data.npz", None if isinstance(make, dict) else make, **change)
    with pytest.raises(ConfigError) as err:
        attnsvm.compose(["seeds=2", "dataset=file", f"dataset.path={path}"])
    message = str(err.value)
    assert message.startswith("dataset.path=") and "\n" not in message
    for text in expected:
        assert text in message, message


def test_a_5000_character_path_is_one_short_line():
    with pytest.raises(ConfigError) as err:
        attnsvm.compose(["dataset=file", "dataset.path=" + "a" * 5000])
    assert "too long for this file system" in str(err.value)
    assert len(str(err.value)) < 300


CALLABLE = [*SMALL, *SIZES, "dataset=callable"]
# (target, raised at compose (True) or before the job runs (False), what the message says)
BAD_TARGETS = [
    ("faulty_userdata.nothing", True, ["cannot be imported"]),
    ("faulty_userdata.no_arguments", True, ["cannot be called as make(seeds, n, T, d"]),
    ("faulty_userdata.returns_list", False, ["returned list, not a dict of arrays"]),
    ("faulty_userdata.raises", False, ["raised RuntimeError for seeds [0, 1]", "server is down"]),
    ("faulty_userdata.huge_tokens", False, ["array 'X' of instance 0", "[1e-50, 1e+50]"]),
    ("faulty_userdata.tiny_tokens", False, ["array 'X' of instance 0", "[1e-50, 1e+50]"]),
]


@pytest.mark.parametrize("target,at_compose,expected", BAD_TARGETS, ids=[b[0] for b in BAD_TARGETS])
def test_a_bad_callable_fails_before_any_work(tmp_path, monkeypatch, target, at_compose, expected):
    import attnsvm.experiments.gd.job

    monkeypatch.setattr(
        attnsvm.experiments.gd.job, "run_job", lambda *a, **k: pytest.fail("it ran")
    )
    overrides = [*CALLABLE, f"dataset.target={target}"]
    with pytest.raises(ConfigError) as err:
        attnsvm.run_job(attnsvm.compose(overrides), out_dir=tmp_path / "out")
    if not at_compose:
        cfg = attnsvm.compose(overrides)  # composes: what it returns is known only when called
        assert cfg.dataset.target == target
    for text in expected:
        assert text in str(err.value), str(err.value)
    assert not (tmp_path / "out").exists()


def test_run_job_checks_out_dir_before_training(tmp_path, monkeypatch):
    import attnsvm.experiments.gd.job

    monkeypatch.setattr(
        attnsvm.experiments.gd.job, "run_job", lambda *a, **k: pytest.fail("it trained")
    )
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ConfigError, match="out_dir=.*a_file/out.* cannot be written"):
        attnsvm.run_job(attnsvm.compose(SMALL), out_dir=tmp_path / "a_file" / "out")


CLI_BAD = [
    (["dataset=callable", "dataset.target=faulty_userdata.returns_list"], "returned list"),
    (["dataset=file", "dataset.path={tmp}/empty.npz"], "the file is empty (0 bytes)"),
    (["optimizer.lr=inf"], "optimizer.lr=inf is invalid: accepted values are finite floats"),
]


@pytest.mark.slow
@pytest.mark.parametrize("overrides,expected", CLI_BAD, ids=["callable list", "0 bytes", "inf"])
def test_cli_bad_input_is_one_line_and_leaves_no_output_dir(tmp_path, overrides, expected):
    (tmp_path / "empty.npz").write_bytes(b"")
    overrides = [o.format(tmp=tmp_path) for o in overrides]
    path = os.pathsep.join([str(REPO), str(REPO / "tests")])  # faulty_userdata importable
    res = run_cli(*SMALL, *SIZES, *overrides, f"hydra.run.dir={tmp_path}/run", PYTHONPATH=path)
    assert res.returncode != 0
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    assert lines[-1].startswith("attnsvm: invalid config: ") and expected in lines[-1], res.stdout
    assert "Traceback" not in res.stdout
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_refused_run_leaves_no_empty_dated_directories(tmp_path):
    """Hydra's default run dir outputs/runs/<date>/<time>: the job dir and the dated dirs made
    for it go; a directory that holds something else (a day's other run) stays."""
    cmd = [sys.executable, "-m", "attnsvm.run", *SMALL, "dataset.d=-1"]

    def refused() -> list[str]:
        res = subprocess.run(cmd, cwd=tmp_path, env=cli_env(), capture_output=True, text=True)
        assert res.returncode != 0 and "dataset.d=-1 is invalid" in res.stdout + res.stderr
        return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))

    assert refused() == []
    (tmp_path / "outputs" / "runs" / "2000-01-01" / "00-00-00").mkdir(parents=True)
    left = refused()
    assert left == ["outputs", "outputs/runs", "outputs/runs/2000-01-01",
                    "outputs/runs/2000-01-01/00-00-00"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", [".", "mine"])
def test_a_refused_run_into_a_directory_of_ones_own_removes_nothing_of_it(tmp_path, run_dir):
    """hydra.run.dir=. (or any directory that holds files of one's own): only what Hydra wrote
    may go, never the directory or its files."""
    (tmp_path / "mine").mkdir()
    for where in (tmp_path, tmp_path / "mine"):
        (where / "notes.txt").write_text("mine")
    cmd = [sys.executable, "-m", "attnsvm.run", *SMALL, "dataset.d=-1", f"hydra.run.dir={run_dir}"]
    res = subprocess.run(cmd, cwd=tmp_path, env=cli_env(), capture_output=True, text=True)
    assert res.returncode != 0 and "dataset.d=-1 is invalid" in res.stdout + res.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_cli_unwritable_output_dir_is_one_line(tmp_path):
    (tmp_path / "a_file").write_text("")
    res = run_cli(*SMALL, f"hydra.run.dir={tmp_path}/a_file/run", timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stdout
    assert "hydra.run.dir=" in res.stdout and "is not a directory" in res.stdout, res.stdout


def test_aggregate_that_cannot_write_is_one_line(tmp_path, capsys):
    attnsvm.run_job(attnsvm.compose(SMALL), out_dir=tmp_path / "job")
    (tmp_path / "summary").write_text("")  # where the summary would go: not a directory
    assert aggregate_main([str(tmp_path), "--no-figures"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("attnsvm.aggregate: --out (default SWEEP_DIR/summary)=") and "\n" not in err
    )
    assert "accepted: a directory you can write" in err


def test_job_json_records_files_as_plain_json(tmp_path):
    attnsvm.run_job(attnsvm.compose(SMALL), out_dir=tmp_path)
    files = json.loads((tmp_path / JOB).read_text())["files"]
    assert all(len(f["sha256"]) == 64 and f["bytes"] > 0 for f in files.values())


def test_a_path_component_over_name_max_is_one_line_before_anything_is_made(tmp_path):
    from attnsvm.config.input_checks import check_output_dir_overrides

    long = "x" * 290
    for key in ("hydra.run.dir", "hydra.sweep.dir"):
        with pytest.raises(ConfigError, match=f"{key}=.*is 290 bytes, over the file system's"):
            check_output_dir_overrides([f"{key}={tmp_path}/a/{long}/b"])
    assert list(tmp_path.iterdir()) == []
    check_output_dir_overrides([f"hydra.run.dir={tmp_path}/a/{'x' * 200}"])  # within the limit


@pytest.mark.slow
def test_cli_a_290_character_directory_name_is_one_line_and_leaves_nothing(tmp_path):
    res = run_cli(*SMALL, f"hydra.run.dir={tmp_path}/long/{'x' * 290}", timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stdout, res.stdout
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    assert (
        lines[-1].startswith("attnsvm: invalid config: hydra.run.dir=") and "290 bytes" in lines[-1]
    )
    assert list(tmp_path.iterdir()) == []


def _tree(root):
    """Every path below ``root`` with its size and modification time: what a write changes."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in [root, *root.rglob("*")]}


@pytest.mark.slow
def test_cli_rerun_of_a_read_only_sweep_runs_when_finished_else_one_line(tmp_path):
    """A finished read-only sweep reruns: every job skipped, exit 0, nothing written (no
    multirun.yaml either); its report goes elsewhere. With a job left: one line naming the
    directory, nothing written; the dry run lists it. Read-only as root too
    (sweep_dirs.read_only: chattr +i)."""
    from sweep_dirs import read_only

    where = tmp_path / "s"
    sweep = [*SMALL, f"hydra.sweep.dir={where}"]
    assert run_cli("dataset.d=2,3", *sweep, multirun=True).returncode == 0
    before = _tree(where)
    with read_only(where):
        done = run_cli("dataset.d=2,3", *sweep, multirun=True, timeout=120)
        more = run_cli("dataset.d=2,3,4", *sweep, multirun=True, timeout=120)
        dry = run_cli("dataset.d=2,3,4", *sweep, "hydra/launcher=dryrun", multirun=True)
        page = tmp_path / "page.html"
        report = subprocess.run(
            [sys.executable, "-m", "attnsvm.report", str(where), "--out", str(page)],
            cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stdout, done.stdout
    assert done.stdout.strip().splitlines()[-1] == (
        "attnsvm sweep: 0 run, 2 skipped, 0 failed, 0 not started"
    )
    assert more.returncode != 0 and "Traceback" not in more.stdout, more.stdout
    line = more.stdout.strip().splitlines()[-1]
    assert line.startswith(f"attnsvm: hydra.sweep.dir={where} is a sweep that cannot be written")
    assert "1 of its 3 jobs still to run" in line and "attnsvm.report DIR --out FILE" in line
    assert report.returncode == 0 and page.stat().st_size > 0, report.stderr
    assert dry.returncode == 0 and "total: 1 run, 0 rerun, 2 skip, 0 invalid" in dry.stdout, (
        dry.stdout
    )
    assert _tree(where) == before


def test_a_read_only_sweep_is_refused_at_once_for_another_sweeper(tmp_path, monkeypatch):
    """Hydra's own sweeper writes multirun.yaml before planning: the CLI's check refuses a
    read-only sweep for it; attnsvm's sweeper (the default) decides after planning."""
    from attnsvm.config.input_checks import check_output_dir_overrides

    (tmp_path / "multirun.yaml").write_text("{}")
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as for a user without rights
    given = f"hydra.sweep.dir={tmp_path}"
    check_output_dir_overrides([given])
    check_output_dir_overrides([given, "hydra/sweeper=attnsvm"])
    with pytest.raises(ConfigError, match="cannot be written .* is read-only.*attnsvm.report"):
        check_output_dir_overrides([given, "hydra/sweeper=basic"])
