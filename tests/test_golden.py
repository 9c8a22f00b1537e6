"""The golden fixtures (tests/golden/make.py): every sweep in sweeps/ (shortened) and every
README example, on both training engines, reproduce their committed tables bit for bit, and
their config hashes, the full ones included (so sweep directories made before the house move
resume), stay the same. Each machine kind (CPU vendor and x86-64 level) has its own set of
tables: make.py says why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from bits import assert_frames_identical

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(GOLDEN))
CASES = json.loads((GOLDEN / "cases.json").read_text())
# one computation per shortened config: auto and torch share a hash where auto picks torch
UNIQUE = {case["hash"]: name for name, case in reversed(list(CASES.items()))}


def test_the_fixtures_cover_every_sweep_and_both_engines():
    sweeps = {p.stem for p in (GOLDEN.parents[1] / "sweeps").glob("*.yaml")}
    covered = {
        name.split("_", 1)[1].rsplit("_", 2)[0] for name in CASES if name.startswith("sweep")
    }
    assert sweeps == covered
    assert {name.rsplit("_", 1)[1] for name in CASES} == {"torch", "auto"}


def test_every_machine_kinds_set_holds_every_case():
    """A set of tables per machine kind (make.py --this-machine), each complete."""
    import make

    want = {f"{name}.{table}.parquet" for name in CASES for table in ("runs", "trajectory")}
    assert make.known_kinds(), "no set of golden tables"
    for kind in make.known_kinds():
        assert {p.name for p in make.tables(kind).glob("*.parquet")} == want, kind


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_hashes_unchanged(name):
    import attnsvm
    from attnsvm.results.store import config_hash

    case = CASES[name]
    full = [o for o in case["overrides"] if o not in make_short()]
    assert config_hash(attnsvm.compose(full)) == case["full_hash"]
    assert config_hash(attnsvm.compose(case["overrides"])) == case["hash"]


def make_short() -> list[str]:
    import make

    return make.SHORT


@pytest.fixture(scope="module")
def own_tables() -> Path:
    """This machine kind's set of tables: bits are promised per kind (make.machine_kind)."""
    import make

    kind = make.machine_kind()
    if kind not in make.known_kinds():
        pytest.fail(
            f"no golden tables for this machine kind, {kind} (there are: "
            f"{', '.join(make.known_kinds())}): add them with `python tests/golden/make.py "
            "--this-machine` once the other tests pass, and compare them with a known set"
        )
    return make.tables(kind)


@pytest.fixture(scope="module")
def recomputed(tmp_path_factory, own_tables) -> Path:
    """Every distinct case computed afresh at the fixtures' kernel level (make.recompute)."""
    import make

    out = tmp_path_factory.mktemp("golden")
    make.recompute(out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(UNIQUE.values()))
def test_tables_bit_identical(name, recomputed, own_tables):
    case = CASES[name]
    runs = pd.read_parquet(recomputed / f"{name}.runs.parquet")
    assert set(runs.pop("config_hash_check")) == {case["hash"]}
    traj = pd.read_parquet(recomputed / f"{name}.trajectory.parquet")
    want = pd.read_parquet(own_tables / f"{name}.runs.parquet")
    assert_frames_identical(runs, want, f"{name} runs")
    want = pd.read_parquet(own_tables / f"{name}.trajectory.parquet")
    assert_frames_identical(traj, want, f"{name} trajectory")
