"""Correct on every machine: the determinism tests again under every CPU kernel level this
machine can execute, and agreement across levels to a stated tolerance.

torch picks its CPU kernels by ATEN_CPU_CAPABILITY, MKL its code branch by
MKL_ENABLE_INSTRUCTIONS, OpenBLAS by OPENBLAS_CORETYPE, and the fused engine has a 4-lane and
an 8-lane build (ATTNSVM_FUSED_BUILD). The suite itself runs the determinism tests at the
machine's own level (torch's pick, and the fused build that matches it); each lower level
runs them again here, in a subprocess: an AVX2-only CI machine runs the avx2 combination
natively, so running it on an AVX-512 machine tests what that machine would. Bit-identity is
promised within one combination (batch sizes, threads, workers); across combinations exp/log
and MKL's LAPACK branch differ in the last bits, and rows agree to CROSS_LEVEL_ATOL.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from cli_helpers import REPO, cli_env

CROSS_LEVEL_ATOL = 1e-6  # corr/norm columns of a default-size job, 2000 NGD steps


def _env(aten: str, openblas: str, mkl: str, fused: str) -> dict[str, str]:
    return dict(
        ATEN_CPU_CAPABILITY=aten,
        OPENBLAS_CORETYPE=openblas,
        MKL_ENABLE_INSTRUCTIONS=mkl,
        ATTNSVM_FUSED_BUILD=f"attnsvm.kernel.{fused}",
    )


# name -> (CPU flags it needs, environment)
COMBINATIONS = {
    "baseline": (set(), _env("default", "Prescott", "SSE4_2", "_fused")),
    "avx2": ({"avx2", "fma"}, _env("avx2", "Haswell", "AVX2", "_fused")),
    "avx512": (
        {"avx512f", "avx512bw", "avx512vl", "avx512dq"},
        _env("avx512", "SkylakeX", "AVX512", "_fused_v4"),
    ),
}


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def _runnable() -> list[str]:
    flags = _cpu_flags()
    return [name for name, (needs, _) in COMBINATIONS.items() if needs <= flags]


def _run_all(names: list[str], tmp: Path, *args: str) -> dict[str, tuple[int, str, str]]:
    """name -> (exit code, stdout, stderr) of ``python *args`` ("{name}" replaced) under each
    combination in ``names``, all side by side: while one waits for a core the others use it."""
    procs = {}
    for name in names:
        out, err = tmp / f"{name}.out", tmp / f"{name}.err"
        with open(out, "w") as o, open(err, "w") as e:  # files: no process waits on a pipe
            command = [sys.executable, *(a.replace("{name}", name) for a in args)]
            env = cli_env(**COMBINATIONS[name][1])
            procs[name] = subprocess.Popen(command, cwd=REPO, env=env, stdout=o, stderr=e)
    return {
        name: (proc.wait(timeout=900), (tmp / f"{name}.out").read_text(),
               (tmp / f"{name}.err").read_text())
        for name, proc in procs.items()
    }  # fmt: skip


# each experiment's "a seed alone and in a batch" test: icl's failed at the AVX2 and AVX-512
# levels on an Intel Xeon (MKL's batched products) and passed on an AMD EPYC
EXPERIMENTS_BATCH_TESTS = [
    f"tests/test_{name}.py"
    for name in ("icl", "rankdyn", "benign", "nexttoken", "multitoken", "maxmargin")
]


@cache
def _native() -> str | None:
    """The combination the suite itself runs at: torch's own kernel level on this CPU."""
    import torch

    level = torch.backends.cpu.get_cpu_capability().lower()
    found = [n for n in _runnable() if COMBINATIONS[n][1]["ATEN_CPU_CAPABILITY"] == level]
    return found[0] if found else None


def _not_native() -> list[str]:
    """The runnable combinations but the one the suite runs at (all of them where torch's
    level is none of them)."""
    return [name for name in _runnable() if name != _native()]


def test_this_machine_runs_at_least_the_baseline_combination():
    assert "baseline" in _runnable()


def test_the_suite_runs_at_one_of_the_combinations():
    """torch's own level here is one of COMBINATIONS: the suite's determinism tests cover it,
    and the subprocesses below cover every other level this CPU runs."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip(f"{platform.machine()}: the combinations are x86-64 levels")
    assert _native() in _runnable(), _native()
    assert set(_not_native()) | {_native()} == set(_runnable())


@pytest.fixture(scope="module")
def determinism_runs(tmp_path_factory) -> dict[str, tuple[int, str, str]]:
    """The determinism tests under every combination but this machine's own (one process
    each, -n 0: xdist workers would only add their start-ups)."""
    return _run_all(
        _not_native(), tmp_path_factory.mktemp("levels"), "-m", "pytest", "-q",
        "-p", "no:cacheprovider", "-n", "0",
        "tests/test_determinism.py", "tests/test_train.py", "tests/test_fused.py",
        *EXPERIMENTS_BATCH_TESTS, "-k", "batch or alone or threads or build",
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("combination", _not_native())
def test_determinism_holds_under_every_kernel_level(combination, determinism_runs):
    code, out, err = determinism_runs[combination]
    assert code == 0, out[-6000:] + err[-2000:]
    assert " passed" in out


JOB = """
import sys
import pandas as pd
from attnsvm.composition import RunConfig
from attnsvm.config import Engine, Parameterization, ParameterizationConfig
from attnsvm.job import run_job
from attnsvm.runtime import mkl_cnr_mode
frames = [
    run_job(RunConfig(seeds=6, engine=engine, parameterization=ParameterizationConfig(kind=kind)))
    .runs.assign(engine_run=engine.value)
    for kind in (Parameterization.w, Parameterization.kq)
    for engine in (Engine.torch, Engine.fused)
]
pd.concat(frames).to_parquet(sys.argv[1])
print(mkl_cnr_mode())
"""


@pytest.mark.slow
def test_rows_agree_across_kernel_levels(tmp_path):
    tables = {}
    runs = _run_all(_runnable(), tmp_path, "-c", JOB, str(tmp_path / "{name}.parquet"))
    for name, (code, out, err) in runs.items():
        assert code == 0, err[-3000:]
        assert out.split()[-1] in ("strict", "no mkl"), "MKL ran without strict CNR"
        tables[name] = pd.read_parquet(tmp_path / f"{name}.parquet")
    ref_name, ref = next(iter(tables.items()))
    numeric = [c for c in ("corr_fro", "corr_nuc", "corr_fro_opt", "corr_nuc_opt") if c in ref]
    for name, other in tables.items():
        for col in ("status", "selected", "conv_type", "svm_status_fro", "svm_status_nuc"):
            assert (other[col] == ref[col]).all(), f"{col}: {name} vs {ref_name}"
        for col in numeric:
            diff = (other[col] - ref[col]).abs().max()
            assert diff <= CROSS_LEVEL_ATOL, f"{col} differs by {diff:.3g}: {name} vs {ref_name}"
