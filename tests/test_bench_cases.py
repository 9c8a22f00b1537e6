"""The bench finds each experiment's own cases through the registry (an entry's
``bench_cases(quick)``) and reports them: in its markdown tables, its results file and the
README speed table. Fast, except the real quick cases (slow)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attnsvm.bench import experiment_cases, report
from attnsvm.bench import readme as bench_readme
from attnsvm.bench.experiment_cases import experiment_benches
from attnsvm.experiments import builtin_names, entry
from conftest import REPO

DECLARING = {"benign", "icl", "ocr", "rankdyn"}


def test_the_experiments_that_declare_cases_are_found_through_the_registry(monkeypatch):
    calls = []

    def fake_for(name):
        def fake(quick):
            calls.append((name, quick))
            return {f"{name} case": {"batched": 4.0, "alone": 2.0}}

        return fake

    faked = {  # an entry is frozen: the registry the bench reads answers with faked copies
        n: dataclasses.replace(entry(n), bench_cases=fake_for(n))
        for n in builtin_names()
        if entry(n).bench_cases is not None
    }
    monkeypatch.setattr(experiment_cases, "entry", lambda n: faked.get(n, entry(n)))
    got = experiment_benches(True)
    assert set(got) == DECLARING and sorted(calls) == [(n, True) for n in sorted(DECLARING)]
    assert got["icl"] == {"icl case": {"batched": 4.0, "alone": 2.0}}
    assert experiment_benches(False, names=("gd", "rankdyn")) == {
        "rankdyn": {"rankdyn case": {"batched": 4.0, "alone": 2.0}}
    }


def test_an_entrys_cases_are_not_shadowed_by_its_bench_module():
    """Importing ``pkg.bench`` rebinds ``pkg.bench``: the entry's function has another name."""
    import attnsvm.experiments.icl.bench  # noqa: F401
    import attnsvm.experiments.rankdyn.bench  # noqa: F401

    for name in DECLARING:
        assert callable(entry(name).bench_cases), name


def test_the_experiments_cases_are_reported():
    benches = {"icl": {"merged A, default job": {"batched": 0.8, "alone": 0.4, "ratio": 2.0}}}
    lines = []
    report.emit_experiment_benches(lambda s="": lines.append(s), benches)
    assert "| icl | merged A, default job | 0.80 | 0.40 | 2.00x |" in lines
    lines.clear()
    report.emit_experiment_benches(lambda s="": lines.append(s), {})
    assert lines == []
    record = json.loads((REPO / "docs" / "benchmarks.json").read_text())
    table = bench_readme.readme_table({**record, "experiments": benches})
    row = "| icl, merged A, default job: seed-runs per CPU second, batched vs one seed at a time "
    assert f"{row}| 0.80 | 0.40 | 2.00× |" in table.splitlines()
    without = {k: v for k, v in record.items() if k != "experiments"}
    assert table.startswith(bench_readme.readme_table(without))  # the experiments rows last


@pytest.mark.slow
def test_the_real_quick_cases_measure_batched_and_alone():
    for name, cases in experiment_benches(True, names=tuple(sorted(DECLARING))).items():
        assert cases, name
        for case, t in cases.items():
            assert t["batched"] > 0 and t["alone"] > 0, (name, case)


JOBS = {"multitoken", "nexttoken"}


def test_the_experiments_whole_jobs_are_found_and_reported(monkeypatch):
    """An entry's ``bench_jobs(quick, bench)`` rows reach the report's table, the results file
    and the README table; "-" where a row did not measure a cell."""

    def fake_for(name):
        def fake(quick, bench):
            assert bench is experiment_cases.JOB_BENCH  # the bench's tools, handed down
            row = {"what": f"{name} job", "target": "soon", "wall": 2.0, "cpu": 3.0}
            return [row if name == "multitoken" else {**row, "outer": 4.0, "peak_mib": 99.0}]

        return fake

    faked = {
        n: dataclasses.replace(entry(n), bench_jobs=fake_for(n))
        for n in builtin_names()
        if entry(n).bench_jobs is not None
    }
    monkeypatch.setattr(experiment_cases, "entry", lambda n: faked.get(n, entry(n)))
    got = experiment_cases.experiment_jobs(True)
    assert set(got) == JOBS
    lines = report.job_rows(got)
    assert "| multitoken job | soon | 2.0 s | - | 3.0 s | - | - |" in lines
    assert "| nexttoken job | soon | 2.0 s | 4.0 s | 3.0 s | 99 MiB | - |" in lines
    record = json.loads((REPO / "docs" / "benchmarks.json").read_text())
    table = bench_readme.readme_table({**record, "experiment_jobs": got})
    assert "| nexttoken job | 3.0 CPU-s, 2.0 s wall | | |" in table


def test_the_machine_ceiling_beside_the_threads_row_is_a_throughput_ratio():
    """bench.timing.parallel_ceiling: N processes side by side against one, per kind of work,
    a ratio in (0, N] up to timing noise (what makes the threads=N row readable)."""
    from attnsvm.bench.timing import parallel_ceiling

    got = parallel_ceiling(2)
    assert set(got) == {"python", "blas"}
    assert all(0 < v <= 2.5 for v in got.values()), got


def test_the_sweep_overhead_table_reads_old_and_new_records():
    """A record made before the sweep's own CPU was logged prints a dash there; a new one its
    seconds, and the all-cores floor from the run's own numbers."""
    from attnsvm.bench.sweep_overhead import OWN_CPU, all_cores_floor, emit_table
    from hydra_plugins.attnsvm_local import OWN_CPU as LOGGED

    new = json.loads((REPO / "docs" / "benchmarks.json").read_text())["sweep_overhead"]
    old = json.loads(json.dumps(new))
    for row in (old["one"], old["all"]):
        row.pop("own_cpu_s", None)  # as recorded before the sweep logged it
    one, every = new["one"], new["all"]
    one.update(wall=10.0, first_job_s=4.0, own_cpu_s=6.0)
    every.update(job_seconds=8.0, own_cpu_s=3.25)
    assert all_cores_floor(new) == (4.0 + 8.0 / new["cores"]) / 10.0
    lines = {}
    for name, record in (("old", old), ("new", new)):
        lines[name] = []
        emit_table(lambda *a, out=lines[name]: out.append(" ".join(map(str, a))), record)
    assert any(line.endswith("| – |") for line in lines["old"])
    assert any(line.endswith("| 3.2 s |") for line in lines["new"])
    assert OWN_CPU.search(LOGGED % 3.25)[1] == "3.25"  # the bench reads the log


def test_a_row_measured_apart_on_another_cpu_names_it():
    """``--only sweep`` / ``--only stage`` on another machine than the headline's: the row says
    which CPU; on the headline's own CPU (or in an old record) it says nothing more."""
    record = json.loads((REPO / "docs" / "benchmarks.json").read_text())
    headline_cpu = record["machine"].split("(", 1)[1].split(")", 1)[0]
    cases = (("Other CPU 9000", ", on Other CPU 9000"), (headline_cpu, ""), (None, ""))
    for cpu, expected in cases:
        r = json.loads(json.dumps(record))
        r["sweep_overhead"]["cpu"] = cpu
        r["svm_stage_cpu"] = cpu
        r.setdefault("svm_stage_date", "2026-11-27 04:32 UTC")
        table = bench_readme.readme_table(r).splitlines()
        sweep = next(line for line in table if line.startswith("| sweep overhead ("))
        assert sweep.startswith(f"| sweep overhead ({r['sweep_overhead']['date']}{expected}): ")
        stage = [line for line in table if line.startswith("| SVM stage at ")]
        assert stage and all(f"({r['svm_stage_date']}{expected}) per seed" in x for x in stage)
