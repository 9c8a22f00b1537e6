"""The package works without the checkout: a wheel built from the repository, installed in a
fresh environment, runs a job and a sweep from an unrelated directory, with conf/ and sweeps/
shipped inside it (``pkg://attnsvm.conf``); ``--help`` describes attnsvm (its experiments and
sweeps) and lists attnsvm's groups only, without the schemas (``base_*``), which are no option
either."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from attnsvm.cli_help import summary_line
from attnsvm.experiments import builtin_names
from cli_helpers import REPO, attnsvm_cmd, cli_env

GROUPS = "dataset experiment head metrics optimizer parameterization solver sweeps"


def _run(*cmd, cwd: Path) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> Path:
    """A venv with the built wheel installed (its dependencies come from this environment's
    site-packages through a .pth file, so nothing is downloaded); returns its python."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheel_cmd = ["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", REPO]
    _run(sys.executable, "-m", "pip", *wheel_cmd, cwd=tmp)
    _run(sys.executable, "-m", "venv", tmp / "venv", cwd=tmp)
    python = tmp / "venv" / "bin" / "python"
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp)
    deps = Path(site.stdout.strip()) / "attnsvm_deps.pth"
    deps.write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next((tmp / "dist").glob("attnsvm-*.whl"))
    # --force-reinstall: the attnsvm this environment has (seen through the .pth) is not this wheel
    _run(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        "--force-reinstall",
        wheel,
        cwd=tmp,
    )
    return python


@pytest.mark.slow
def test_the_wheel_runs_a_job_and_a_sweep_from_anywhere(installed_wheel, tmp_path):
    where = _run(installed_wheel, "-c", "import attnsvm; print(attnsvm.__file__)", cwd=tmp_path)
    assert str(REPO) not in where.stdout  # the installed copy, not the checkout
    run = _run(installed_wheel, "-m", "attnsvm.run", "seeds=2", "optimizer.steps=40", cwd=tmp_path)
    assert "seeds by status:    ok 2" in run.stdout, run.stdout
    sweep = _run(
        installed_wheel, "-m", "attnsvm.run", "-m", "+sweeps=local", "seeds=2",
        "optimizer.steps=40", "optimizer.checkpoint_every=20", "hydra.sweep.dir=sw",
        cwd=tmp_path,
    )  # fmt: skip
    assert "2 finished" in sweep.stdout, sweep.stdout
    assert {p.name for p in (tmp_path / "sw").glob("*/runs.parquet")} == {"runs.parquet"}
    assert len(list((tmp_path / "sw").glob("*/runs.parquet"))) == 2


@pytest.mark.slow
def test_help_lists_only_attnsvms_groups(installed_wheel, tmp_path):
    (tmp_path / "outputs" / "junk").mkdir(parents=True)  # never scanned for config groups
    res = _run(installed_wheel, "-m", "attnsvm.run", "--help", cwd=tmp_path)
    _check_help(res.stdout)


def _check_help(text: str) -> None:
    """The header names every built-in experiment with its docstring's first sentence and
    every sweep file; the groups are attnsvm's, without the schemas (base_*)."""
    header, rest = text.split("== Configuration groups ==")
    section = rest.split("== Config ==")[0]
    groups = {line.split(":")[0] for line in section.splitlines() if ": " in line}
    variants = {"sweeps/rank_shape", "sweeps/rankdyn_shape", "sweeps/geometry_adam_variant"}
    assert groups - variants == set(GROUPS.split()), section
    assert "base_" not in section, section
    flat = " ".join(header.split())
    for name in builtin_names():
        assert f" {name} {' '.join(summary_line(name).split())}" in flat, (name, header)
    assert "python -m attnsvm.run experiment=NAME" in header, header
    for sweep in sorted((REPO / "conf" / "sweeps").glob("*.yaml")):
        assert f" {sweep.stem}," in flat or f" {sweep.stem} " in flat, (sweep.stem, header)


def test_help_describes_attnsvm_and_refuses_the_schemas_as_options(tmp_path):
    def cli(*args: str) -> subprocess.CompletedProcess:
        cmd = attnsvm_cmd(*args)
        return subprocess.run(cmd, cwd=tmp_path, env=cli_env(), capture_output=True, text=True)

    res = cli("--help")
    assert res.returncode == 0, res.stderr[-3000:]
    _check_help(res.stdout)
    bad = cli("dataset=base_dataset", "seeds=1")
    assert bad.returncode != 0
    line = bad.stderr.strip()  # one line, the schema is no option: only the YAML options
    assert "no option 'base_dataset' in group 'dataset'; accepted: " in line, bad.stderr[-3000:]
    assert "base_dataset" not in line.split("accepted: ")[1] and "\n" not in line
    assert not (tmp_path / "outputs").exists()
