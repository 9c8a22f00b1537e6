"""The golden fixtures (tests/golden/make.py): every sweep in sweeps/ (shortened) and every
README example, on both training engines, reproduce their committed tables, and their config
hashes, the full ones included (so sweep directories made before the house move resume), stay the
same. A machine kind (CPU vendor and x86-64 level) with its own set of tables reproduces it bit
for bit; any other kind is compared with the nearest known set within the tolerances that
tests/golden/tolerances.py declares per column (the session's header says which set and how)."""

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


def test_every_case_has_tables_and_no_set_holds_a_stale_one():
    """Each set's tables are of current cases, made for their current config hash (make.py
    removes the others); every case is held by some set, and by this kind's own set if any."""
    import make

    assert make.known_kinds(), "no set of golden tables"
    held = {}
    for kind in make.known_kinds():
        for path in sorted(make.tables(kind).glob("*.parquet")):
            name, table = path.name.split(".")[:2]
            assert name in CASES and table in ("runs", "trajectory"), f"{kind}: {path.name}"
            assert make.holds(kind, name, CASES), f"{kind}: {name} is stale (make.py prunes it)"
            held.setdefault(name, set()).add(kind)
    assert set(held) == set(CASES), sorted(set(CASES) - set(held))
    own = make.machine_kind()
    if own in make.known_kinds():
        assert all(own in kinds for kinds in held.values()), own


@pytest.mark.parametrize("name", sorted(CASES))
def test_config_hashes_unchanged(name):
    import attnsvm
    from attnsvm.composition.identity import config_hash

    case = CASES[name]
    full = [o for o in case["overrides"] if o not in make_short()]
    assert config_hash(attnsvm.compose(full)) == case["full_hash"]
    assert config_hash(attnsvm.compose(case["overrides"])) == case["hash"]


def make_short() -> list[str]:
    import make

    return make.SHORT


@pytest.fixture(scope="module")
def reference():
    """case -> (its set of tables, bit for bit or not): this machine kind's own set bit for bit
    where it holds the case, else the nearest known set within tolerances.py
    (make.reference_kind; the session's header says which)."""
    import make

    def of(name: str) -> tuple[Path, bool]:
        kind, own = make.reference_kind(name, CASES)
        return make.tables(kind), own

    return of


@pytest.fixture(scope="module")
def recomputed(tmp_path_factory, reference) -> Path:
    """Every distinct case computed afresh at the fixtures' kernel level (make.recompute)."""
    import make

    out = tmp_path_factory.mktemp("golden")
    make.recompute(out)
    return out


def assert_matches(got: pd.DataFrame, want: pd.DataFrame, what: str, own: bool, first=()) -> None:
    if own:
        assert_frames_identical(got, want, what)
        return
    import tolerances

    bad = tolerances.mismatches(got, want, first)
    assert not bad, f"{what}: outside the tolerances of tests/golden/tolerances.py:\n" + "\n".join(
        bad
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(UNIQUE.values()))
def test_tables_match_the_reference(name, recomputed, reference):
    import tolerances

    case = CASES[name]
    tables, own = reference(name)
    runs = pd.read_parquet(recomputed / f"{name}.runs.parquet")
    assert set(runs.pop("config_hash_check")) == {case["hash"]}
    traj = pd.read_parquet(recomputed / f"{name}.trajectory.parquet")
    assert_matches(runs, pd.read_parquet(tables / f"{name}.runs.parquet"), f"{name} runs", own)
    loose = tolerances.LOOSE_TRAJECTORY.get(name.rsplit("_", 1)[0], ())
    want = pd.read_parquet(tables / f"{name}.trajectory.parquet")
    assert_matches(traj, want, f"{name} trajectory", own, loose)


def _pairs():
    import make

    kinds = make.known_kinds()
    return [(a, b) for i, a in enumerate(kinds) for b in kinds[i + 1 :]]


def test_the_known_sets_agree_within_the_declared_tolerances():
    """The tolerances cover what is known to move between machine kinds: every committed set
    against every other, every column of every case both hold."""
    import make
    import tolerances

    if not _pairs():
        pytest.skip("one set of tables only: no two machine kinds to compare")
    for a, b in _pairs():
        for path in sorted(make.tables(a).glob("*.parquet")):
            case, table = path.name.split(".")[:2]
            if not make.holds(b, case, CASES):  # a set made before the case changed
                continue
            first = tolerances.LOOSE_TRAJECTORY.get(case.rsplit("_", 1)[0], ())
            first = first if table == "trajectory" else ()
            other = pd.read_parquet(make.tables(b) / path.name)
            bad = tolerances.mismatches(pd.read_parquet(path), other, first)
            assert not bad, f"{a} vs {b}, {path.name}: {bad}"


def test_a_table_moved_beyond_its_tolerance_fails():
    """The comparison a new machine kind gets is not vacuous: each kind of change beyond its
    declared tolerance is caught, and one inside it passes."""
    import make
    import tolerances

    want = pd.read_parquet(make.tables() / "readme_0_torch.runs.parquet")
    assert tolerances.mismatches(want.copy(), want) == []
    corr = tolerances.rule("corr_fro")
    for factor, caught in ((0.1, False), (10.0, True)):
        got = want.copy()
        got.loc[0, "corr_fro"] += factor * (corr.atol + corr.rtol * abs(got.loc[0, "corr_fro"]))
        bad = tolerances.mismatches(got, want)
        assert bool(bad) == caught, (factor, bad)
        assert not caught or "'corr_fro'" in bad[0]
    got = want.copy()
    got.loc[1, "norm_fro"] *= 1 + 1e-5  # a norm: relative 1e-6
    assert "'norm_fro'" in tolerances.mismatches(got, want)[0]
    got = want.copy()
    got.loc[0, "status"] = "not_converged"
    assert "'status'" in tolerances.mismatches(got, want)[0]
    got = want.copy()
    got.loc[0, "margin_fro"] = float("nan")
    assert "'margin_fro'" in tolerances.mismatches(got, want)[0]
    got = want.drop(columns=["corr_nuc"])
    assert "columns differ" in tolerances.mismatches(got, want)[0]


KNOWN = ["AuthenticAMD-x86-64-v3", "GenuineIntel-x86-64-v4"]


@pytest.mark.parametrize(
    "kind, reference",
    [
        ("AuthenticAMD-x86-64-v3", ("AuthenticAMD-x86-64-v3", True)),
        ("AuthenticAMD-x86-64-v4", ("AuthenticAMD-x86-64-v3", False)),
        ("GenuineIntel-x86-64-v3", ("GenuineIntel-x86-64-v4", False)),
        ("HygonGenuine-x86-64-v3", ("AuthenticAMD-x86-64-v3", False)),
        ("HygonGenuine-x86-64-v4", ("GenuineIntel-x86-64-v4", False)),
        ("aarch64", ("AuthenticAMD-x86-64-v3", False)),
    ],
)
def test_a_machine_kind_takes_its_own_set_else_the_nearest(monkeypatch, kind, reference):
    import make

    monkeypatch.delenv("ATTNSVM_GOLDEN_REFERENCE", raising=False)
    monkeypatch.setattr(make, "known_kinds", lambda: KNOWN)
    monkeypatch.setattr(make, "machine_kind", lambda: kind)
    assert make.reference_kind() == reference
    monkeypatch.setenv("ATTNSVM_GOLDEN_REFERENCE", "GenuineIntel-x86-64-v4")
    assert make.reference_kind() == ("GenuineIntel-x86-64-v4", False)
    monkeypatch.setenv("ATTNSVM_GOLDEN_REFERENCE", "nope")
    with pytest.raises(ValueError, match="no such set"):
        make.reference_kind()


def test_a_case_its_own_set_lacks_is_compared_with_the_nearest_set_that_holds_it(monkeypatch):
    import make

    monkeypatch.delenv("ATTNSVM_GOLDEN_REFERENCE", raising=False)
    monkeypatch.setattr(make, "known_kinds", lambda: KNOWN)
    monkeypatch.setattr(make, "machine_kind", lambda: "GenuineIntel-x86-64-v4")
    monkeypatch.setattr(make, "holds", lambda kind, name, cases=None: kind in held[name])
    held = {"a": set(KNOWN), "b": {"AuthenticAMD-x86-64-v3"}, "c": set()}
    assert make.reference_kind("a") == ("GenuineIntel-x86-64-v4", True)
    assert make.reference_kind("b") == ("AuthenticAMD-x86-64-v3", False)
    with pytest.raises(LookupError, match="no set of golden tables holds c"):
        make.reference_kind("c")
    # a named set that lacks the case: the nearest other set that holds it, never bit for bit
    monkeypatch.setenv("ATTNSVM_GOLDEN_REFERENCE", "GenuineIntel-x86-64-v4")
    assert make.reference_kind("a") == ("GenuineIntel-x86-64-v4", False)
    assert make.reference_kind("b") == ("AuthenticAMD-x86-64-v3", False)
    monkeypatch.setattr(make, "known_kinds", lambda: [*KNOWN, "AuthenticAMD-x86-64-v4"])
    monkeypatch.setattr(make, "machine_kind", lambda: "AuthenticAMD-x86-64-v3")
    held["b"] = {"AuthenticAMD-x86-64-v3", "AuthenticAMD-x86-64-v4"}
    assert make.reference_kind("b") == ("AuthenticAMD-x86-64-v4", False)  # not its own set
