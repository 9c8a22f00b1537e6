"""Golden fixtures of the house move: every sweep in sweeps/ (shortened) and every README
example, on both training engines. ``python tests/golden/make.py`` writes, per case, its config
hashes (full and shortened) to cases.json and its tables to
tables/<machine kind>/<case>.runs.parquet and <case>.trajectory.parquet; tests/test_golden.py
recomputes them and compares bit for bit.

Each kind of machine has its own set of tables (``machine_kind``), compared bit for bit; a kind
without one is compared with the nearest known set within the tolerances that tolerances.py
declares per column (``reference_kind``). Even at the baseline kernel
level an Intel Xeon (AVX-512) and an AMD EPYC (AVX2) give different last bits. MKL picks its code
branch by the CPU's vendor, but pinning its compatible branch (MKL_CBWR=COMPATIBLE) still left 55
of the 93 distinct cases different (79 without), so the cause is not MKL's alone. A full
``make.py`` (new cases or new numbers) rewrites this machine's set and removes from the others
the tables of cases whose config hash changed (each runs table records its hash): those cases are
then compared on those kinds with the nearest set that holds them, within the tolerances.
``make.py --this-machine`` adds this machine's set to the current cases, touching no other;
``make.py --only PREFIX`` remakes just the cases whose names start with PREFIX.

A case is a list of overrides. A sweep contributes the jobs that take the first value of every
axis and, axis by axis, its last value; the shortening overrides (few seeds, few steps) are
appended, so the full config's hash (the one old sweep directories hold) is kept too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TABLES = HERE / "tables"  # one directory of tables per machine kind
SHORT = [
    "seeds=2",
    "optimizer.steps=40",
    "optimizer.checkpoint_every=10",
    "multitoken.target_accepted=null",
    "regpath.steps=20",
    "regpath.points=3",
    "icl.steps=40",  # the experiments that train with their own step keys: few steps too
    "icl.checkpoint_every=10",
    "rankdyn.steps=400",
    "rankdyn.checkpoints=20",
    "benign.steps=40",
    "ocr.steps=40",
    "ocr.checkpoint_every=10",
]
README = [  # the README's single-run examples that need no files of the user
    [],
    ["parameterization=kq", "dataset.d=20", "optimizer.steps=5000", "seeds=50"],
    ["dataset.attention=self", "dataset.query_index=0", "solver.backend=SCS"],
    [
        "experiment=nexttoken",
        "dataset=nexttoken",
        "dataset.draws=published",
        "seeds=10",
        "optimizer.lr=0.01",
        "optimizer.steps=4000",
    ],
    [
        "dataset=maxmargin",
        "dataset.example=single_local",
        "parameterization=p",
        "parameterization.init=published",
        "seeds=6",
        "optimizer.steps=1000",
        "optimizer.eps=0",
    ],
    [
        "dataset=maxmargin",
        "dataset.example=joint_relaxed",
        "parameterization=p",
        "parameterization.init=published",
        "seeds=1",
        "head.train=true",
        "optimizer.steps=1000",
        "optimizer.eps=0",
    ],
    ["optimizer=md3", "solver.norms=[fro,l1.75,l3]", "seeds=8"],
    ["optimizer=sign", "solver.norms=[fro,max,spectral]", "seeds=8"],
    ["dataset.d=2", "parameterization=kq"],
]
ENGINES = ["engine=torch", "engine=auto"]
# Every table is made and compared at the kernel level every x86-64 CPU runs (torch's default
# kernels, OpenBLAS and MKL at SSE, the 4-lane fused build): bits are promised per level
# (tests/test_kernel_levels.py), not across levels, and CI machines differ.
BASELINE = {
    "ATEN_CPU_CAPABILITY": "default",
    "OPENBLAS_CORETYPE": "Prescott",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "ATTNSVM_FUSED_BUILD": "attnsvm.kernel._fused",
}
TIMING = ("seconds", "train_seconds", "svm_seconds", "metrics_seconds")


LEVELS = {  # x86-64 micro-architecture levels by the flags /proc/cpuinfo lists
    "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
    "x86-64-v3": {"avx2", "fma", "bmi2", "movbe"},
    "x86-64-v2": {"sse4_2", "popcnt", "ssse3"},
}


def machine_kind() -> str:
    """'<CPU vendor>-<x86-64 level>' of this machine, e.g. 'AuthenticAMD-x86-64-v3'."""
    import platform

    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() or "unknown"
    field = {}
    for line in info.splitlines():
        key, _, value = line.partition(":")
        field.setdefault(key.strip(), value.strip())
    flags = set(field.get("flags", "").split())
    level = next((name for name, needs in LEVELS.items() if needs <= flags), platform.machine())
    return f"{field.get('vendor_id', 'unknown')}-{level}"


def known_kinds() -> list[str]:
    """The machine kinds that have a set of tables."""
    return sorted(p.name for p in TABLES.iterdir() if p.is_dir()) if TABLES.is_dir() else []


def holds(kind: str, name: str, cases: dict | None = None) -> bool:
    """Whether ``kind``'s set has tables of case ``name`` made for its current config hash (a
    set made before a case changed holds a stale table, or none, for it)."""
    import pandas as pd

    cases = cases or json.loads((HERE / "cases.json").read_text())
    runs = TABLES / kind / f"{name}.runs.parquet"
    if not (runs.is_file() and (TABLES / kind / f"{name}.trajectory.parquet").is_file()):
        return False
    chash = pd.read_parquet(runs, columns=["config_hash"]).config_hash
    return set(chash) == {cases[name]["hash"]}


def reference_kind(name: str | None = None, cases: dict | None = None) -> tuple[str, bool]:
    """(the set this machine's tables of case ``name`` are compared with, whether bit for bit).

    Its own kind's set, bit for bit, where that holds the case. Else, or where the environment
    names a set in ATTNSVM_GOLDEN_REFERENCE, a known set within the tolerances of tolerances.py:
    the named one where it holds the case, else the nearest that holds it (same CPU vendor, then
    same x86-64 level, then any; with a named set, never this kind's own). Without ``name``: the
    set for the cases this machine's own set holds (or the named one), or the nearest set."""
    kind, known = machine_kind(), known_kinds()
    named = os.environ.get("ATTNSVM_GOLDEN_REFERENCE")
    if named:
        if named not in known:
            raise ValueError(f"ATTNSVM_GOLDEN_REFERENCE={named}: no such set ({', '.join(known)})")
        if name is None or holds(named, name, cases):
            return named, False
        known = [k for k in known if k != kind]  # within the tolerances, as asked
    if name is not None:
        known = [k for k in known if holds(k, name, cases)]
        if not known:
            raise LookupError(f"no set of golden tables holds {name}: run tests/golden/make.py")
    if kind in known:
        return kind, True
    vendor, _, level = kind.partition("-")
    for near in (lambda k: k.startswith(vendor + "-"), lambda k: k.endswith("-" + level)):
        match = [k for k in known if near(k)]
        if match:
            return match[0], False
    return known[0], False


def prune_stale() -> list[str]:
    """Remove from every set the tables of cases that are gone or whose config hash changed;
    returns what was removed. Every other table stays: its bits still hold on its kind."""
    cases = json.loads((HERE / "cases.json").read_text())
    removed = []
    for kind in known_kinds():
        for path in sorted((TABLES / kind).glob("*.runs.parquet")):
            name = path.name.split(".")[0]
            if name not in cases or not holds(kind, name, cases):
                for table in ("runs", "trajectory"):
                    (TABLES / kind / f"{name}.{table}.parquet").unlink(missing_ok=True)
                removed.append(f"{kind}/{name}")
    return removed


def tables(kind: str | None = None) -> Path:
    """The set of tables of ``kind`` (this machine's by default), or the first set there is."""
    own = TABLES / (kind or machine_kind())
    return own if own.is_dir() else TABLES / known_kinds()[0]


def sweep_cases() -> dict[str, list[str]]:
    """name -> overrides for the jobs of every sweep file (first values, then each last value)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from attnsvm.composition import register_configs

    register_configs()
    cases = {}
    parser = OverridesParser.create()
    for path in sorted((REPO / "sweeps").glob("*.yaml")):
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            hydra = compose("config", [f"+sweeps={path.stem}"], return_hydra_config=True).hydra
        axes = []
        for key, value in dict(hydra.sweeper.params or {}).items():
            o = parser.parse_override(f"{key}={value}")
            vals = list(o.sweep_string_iterator()) if o.is_sweep_override() else [str(value)]
            axes.append([f"{key}={v}" for v in vals])
        first = [a[0] for a in axes]
        combos = [first] + [first[:k] + [a[-1]] + first[k + 1 :] for k, a in enumerate(axes)]
        seen = []
        for c in combos:
            if c not in seen:
                seen.append(c)
        for i, c in enumerate(seen):
            cases[f"sweep_{path.stem}_{i}"] = [f"+sweeps={path.stem}", *c]
    for i, o in enumerate(README):
        cases[f"readme_{i}"] = o
    return cases


def shortened(overrides: list[str]) -> list[str]:
    """Few seeds and steps, by the keys of SHORT the case's experiment reads (a key it does
    not read is refused); keys the case sets itself are overridden after it."""
    import attnsvm
    from attnsvm.experiments import entry, reads_key

    module = entry(attnsvm.compose(overrides).experiment)
    return [*overrides, *(o for o in SHORT if reads_key(module, o.partition("=")[0]))]


def strip_timing(frame):
    return frame.drop(columns=[c for c in frame.columns if c in TIMING or c.endswith("_seconds")])


def compute(overrides: list[str]):
    """(config hash, runs, trajectory) of one shortened case, timing columns dropped."""
    import attnsvm

    res = attnsvm.run_job(attnsvm.compose(overrides))
    return res.config_hash, strip_timing(res.runs), strip_timing(res.trajectory)


def at_baseline(argv: list[str]) -> None:
    """Re-run this script under BASELINE unless it already is (torch reads it at import)."""
    if any(os.environ.get(k) != v for k, v in BASELINE.items()):
        env = {**os.environ, **BASELINE}
        os.execve(sys.executable, [sys.executable, __file__, *argv], env)


def compute_all(out: Path, share: int = 0, shares: int = 1) -> None:
    """The tables of every distinct case of cases.json into ``out`` (for the test); with
    ``shares`` > 1 only every ``shares``-th distinct case from ``share`` on (one process each)."""
    cases = json.loads((HERE / "cases.json").read_text())
    done = set()
    for name, case in cases.items():
        if case["hash"] in done:
            continue
        done.add(case["hash"])
        if (len(done) - 1) % shares != share:
            continue
        chash, runs, traj = compute(case["overrides"])
        runs.assign(config_hash_check=chash).to_parquet(out / f"{name}.runs.parquet")
        traj.to_parquet(out / f"{name}.trajectory.parquet")


def recompute(out: Path) -> None:
    """``compute_all`` into ``out``, the cases shared out over one process per core (at most
    4; each case is computed alone, so its bits do not depend on the share)."""
    import subprocess

    shares = max(1, min(os.cpu_count() or 1, 4))
    cmd = [sys.executable, str(HERE / "make.py"), "--compute", str(out)]
    procs = [
        subprocess.Popen(
            [*cmd, str(i), str(shares)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for i in range(shares)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=1800)
        if proc.returncode:
            raise RuntimeError(f"make.py --compute failed: {err[-3000:]}")


def add_this_machine() -> None:
    """This machine's set of tables for the cases of cases.json (their hashes checked)."""
    import shutil
    import tempfile

    import pandas as pd

    import attnsvm

    cases = json.loads((HERE / "cases.json").read_text())
    own = TABLES / machine_kind()
    with tempfile.TemporaryDirectory() as tmp:
        recompute(Path(tmp))
        own.mkdir(parents=True, exist_ok=True)
        for name, case in cases.items():
            first = next(n for n, c in cases.items() if c["hash"] == case["hash"])  # computed
            runs = pd.read_parquet(Path(tmp) / f"{first}.runs.parquet")
            assert set(runs.pop("config_hash_check")) == {case["hash"]}, name
            # engine=auto where it picks torch: same hash, same numbers, its own engine column
            runs["engine"] = attnsvm.compose(case["overrides"]).engine.value
            runs.to_parquet(own / f"{name}.runs.parquet")
            traj = Path(tmp) / f"{first}.trajectory.parquet"
            shutil.copy(traj, own / f"{name}.trajectory.parquet")
    print(f"{len(cases)} cases' tables in {own}")


def main(only: str | None = None) -> None:
    """Every case's tables on this machine (module doc); ``only``: just the cases whose name
    starts with it (``make.py --only sweep_multitoken``), the others' entries kept."""
    import attnsvm
    from attnsvm.composition.identity import config_hash

    sys.path.insert(0, str(REPO / "tests"))
    own = TABLES / machine_kind()
    own.mkdir(parents=True, exist_ok=True)
    out = json.loads((HERE / "cases.json").read_text()) if only else {}
    changed = []
    for name, overrides in sweep_cases().items():
        for engine in ENGINES:
            case = f"{name}_{engine.split('=')[1]}"
            if only and not case.startswith(only):
                continue
            full = [*overrides, engine]
            try:
                full_hash = config_hash(attnsvm.compose(full))
                short = shortened(full)
                chash, runs, traj = compute(short)
            except Exception as exc:  # a case the shortening does not fit: say so, go on
                print(f"{case}: {exc!r}")
                continue
            print(case, chash, len(runs), len(traj), flush=True)
            if not same_tables(own, case, runs, traj):  # new numbers: other kinds' are stale
                changed.append(case)
            runs.to_parquet(own / f"{case}.runs.parquet")
            traj.to_parquet(own / f"{case}.trajectory.parquet")
            out[case] = {"overrides": short, "full_hash": full_hash, "hash": chash}
    (HERE / "cases.json").write_text(json.dumps(out, indent=1) + "\n")
    for kind in known_kinds():
        for case in changed if kind != own.name else ():
            for table in ("runs", "trajectory"):
                (TABLES / kind / f"{case}.{table}.parquet").unlink(missing_ok=True)
    for gone in prune_stale():  # other kinds' tables of changed cases: stale
        print(f"removed stale {gone}")


def same_tables(own: Path, case: str, runs, traj) -> bool:
    """Whether this machine's set already holds exactly these tables of ``case``."""
    import pandas as pd

    try:
        old = pd.read_parquet(own / f"{case}.runs.parquet")
        old_traj = pd.read_parquet(own / f"{case}.trajectory.parquet")
    except OSError:
        return False
    return old.equals(runs) and old_traj.equals(traj)


if __name__ == "__main__":
    at_baseline(sys.argv[1:])
    if sys.argv[1:2] == ["--compute"]:
        compute_all(Path(sys.argv[2]), *map(int, sys.argv[3:5]))
    elif sys.argv[1:2] == ["--this-machine"]:
        add_this_machine()
    elif sys.argv[1:2] == ["--only"]:
        main(sys.argv[2])
    else:
        main()
