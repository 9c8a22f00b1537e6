"""Sweep directories built from the golden fixtures (tests/golden/): for a sweep file of sweeps/,
its fixture cases (shortened jobs of its grid, tests/golden/make.py) laid out as
``python -m attnsvm.run -m +sweeps=NAME`` lays them out: a multirun.yaml with the sweep file's
grid, and per job its overrides.yaml, runs.parquet, trajectory.parquet and job.json. Nothing is
computed: the tables are the committed ones, so every sweep aggregates in a second."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pandas as pd
import yaml

GOLDEN = Path(__file__).resolve().parent / "golden"
REPO = GOLDEN.parents[1]
TIMING = ("seconds", "train_seconds", "svm_seconds")
SWEEPS = sorted(p.stem for p in (REPO / "sweeps").glob("*.yaml"))


@cache
def _cases() -> dict[str, dict]:
    return json.loads((GOLDEN / "cases.json").read_text())


def sweep_cases(name: str) -> list[tuple[str, dict]]:
    """(fixture, case) of two jobs of sweep ``name`` (the auto engine's): the grid's first
    point and the last axis at its last value (sequential's: its second experiment)."""
    found = {}
    for case, spec in _cases().items():
        stem = case.split("_", 1)[1].rsplit("_", 2)[0]
        if case.startswith("sweep_") and stem == name and case.endswith("_auto"):
            found.setdefault(spec["hash"], (case, spec))
    cases = list(found.values())
    return cases[:1] + cases[1:][-1:]


@cache
def sweep_params(name: str) -> dict[str, str]:
    """hydra.sweeper.params of sweep file ``name``, as multirun.yaml records them."""
    from hydra import compose, initialize_config_dir

    from attnsvm.composition import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        hydra = compose("config", [f"+sweeps={name}"], return_hydra_config=True).hydra
    return {str(k): str(v) for k, v in dict(hydra.sweeper.params or {}).items()}


def _grid_point(overrides: list[str]) -> list[str]:
    """The case's overrides without the engine and the shortening (tests/golden/make.py)."""
    import make  # tests/golden on sys.path (added below)

    return [o for o in overrides if not o.startswith("engine=") and o not in make.SHORT]


def make_golden_sweep(name: str, sweep: Path) -> list[Path]:
    """The fixture jobs of sweep file ``name`` as a finished sweep in ``sweep``; its job dirs."""
    import sys

    import attnsvm
    from attnsvm.composition.identity import config_hash
    from attnsvm.config.checks import plain
    from attnsvm.results.store import write_json

    sys.path.insert(0, str(GOLDEN))
    import make

    hydra = {
        "sweep": {"dir": str(sweep), "subdir": "${hydra.job.num}"},
        "sweeper": {
            "_target_": "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
            "params": sweep_params(name),
        },
        "overrides": {"hydra": ["hydra.mode=MULTIRUN"], "task": [f"+sweeps={name}"]},
    }
    sweep.mkdir(parents=True, exist_ok=True)
    (sweep / "multirun.yaml").write_text(yaml.safe_dump({"hydra": hydra}))
    dirs = []
    for num, (case, spec) in enumerate(sweep_cases(name)):
        job = sweep / str(num)
        (job / ".hydra").mkdir(parents=True)
        (job / ".hydra" / "overrides.yaml").write_text(
            yaml.safe_dump(_grid_point(spec["overrides"]))
        )
        tables = make.tables()  # this machine kind's set, or any: only their layout matters here
        runs = pd.read_parquet(tables / f"{case}.runs.parquet")  # the timings make.py drops
        runs.assign(**dict.fromkeys(TIMING, 0.25)).to_parquet(job / "runs.parquet")
        shutil.copy(tables / f"{case}.trajectory.parquet", job / "trajectory.parquet")
        cfg = attnsvm.compose(spec["overrides"])
        assert config_hash(cfg) == spec["hash"], case
        record = {"config_hash": spec["hash"], "config": plain(cfg), "status": "finished"}
        write_json({**record, "started": float(num), "seconds": 1.0}, job / "job.json")
        dirs.append(job)
    return dirs
