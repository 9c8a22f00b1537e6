"""SQL over results: the views over two sweeps read in place, the added columns, the CLI's table
and CSV output, and its one-line errors."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import attnsvm
from attnsvm.results.query import QueryError, main, sql
from cli_helpers import REPO, cli_env
from sweep_dirs import make_sweep, make_troubled_sweep

JOIN = (
    "SELECT a.d, a.seed, a.rank_fro AS rank_svm, b.corr_fro AS corr_gd "
    "FROM runs a JOIN runs b ON a.d = b.d AND a.seed = b.seed "
    "WHERE a.sweep = 'svm' AND b.sweep = 'gd' AND b.parameterization = 'w' ORDER BY a.d, a.seed"
)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Two sweeps under one folder: SVMs only (no trajectory columns trained) and GD."""
    root = tmp_path_factory.mktemp("results")
    make_sweep(root / "svm", ds=(2, 4), kinds=("w",), train=False)
    make_sweep(root / "gd", ds=(2, 4), kinds=("w", "kq"))
    make_troubled_sweep(root / "troubled")
    return root


def _parquet(sweep_dir, name="runs.parquet") -> pd.DataFrame:
    frames = []
    for path in sorted(sweep_dir.glob(f"*/{name}")):
        frames.append(pd.read_parquet(path).assign(job=path.parent.name))
    return pd.concat(frames, ignore_index=True)


def test_a_join_of_runs_across_two_sweeps_matches_the_parquet_files(sweeps):
    got = sql(JOIN, sweeps / "svm", sweeps / "gd")
    svm, gd = _parquet(sweeps / "svm"), _parquet(sweeps / "gd")
    gd_w = gd[gd.parameterization == "w"][["d", "seed", "corr_fro"]]
    want = svm[["d", "seed", "rank_fro"]].merge(gd_w, on=["d", "seed"]).sort_values(["d", "seed"])
    assert len(got) == 2 * 3
    np.testing.assert_array_equal(got.rank_svm, want.rank_fro)  # NaN: infeasible seeds
    np.testing.assert_array_equal(got.corr_gd, want.corr_fro)


def test_views_add_sweep_job_and_path_and_read_every_finished_row(sweeps):
    runs = sql("SELECT * FROM runs ORDER BY sweep, job, seed", sweeps)
    assert list(runs.columns[:2]) == ["sweep", "job"] and "sweep_dir" in runs
    # troubled: only its two finished jobs enter; the failed and running ones do not
    counts = runs.groupby("sweep").size().to_dict()
    assert counts == {"gd": 4 * 3, "svm": 2 * 3, "troubled": 2 * 3}
    gd = _parquet(sweeps / "gd")
    mine = runs[runs.sweep == "gd"].reset_index(drop=True)
    assert list(mine.job) == list(gd.job) and list(mine.seed) == list(gd.seed)
    assert set(runs.sweep_dir) == {str((sweeps / s).resolve()) for s in ("gd", "svm", "troubled")}
    traj = sql("SELECT sweep, count(*) AS n FROM trajectory GROUP BY sweep ORDER BY sweep", sweeps)
    files = {s: len(_parquet(sweeps / s, "trajectory.parquet")) for s in ("gd", "svm", "troubled")}
    assert files["svm"] == 0 and files["gd"] > 0  # an SVM-only job trains no trajectory
    assert dict(zip(traj.sweep, traj.n, strict=True)) == {s: n for s, n in files.items() if n}


def test_the_jobs_view_holds_every_job_json_with_its_status(sweeps):
    jobs = sql("SELECT job, status, error FROM jobs WHERE sweep = 'troubled' ORDER BY job", sweeps)
    assert list(jobs.job) == ["0", "1", "2", "3"]  # 4 has no job.json, 5 no directory
    assert list(jobs.status) == ["finished", "finished", "failed", "running"]
    assert jobs.error[2] == "RuntimeError('boom')"


def test_sweeps_with_different_columns_combine_by_name(sweeps):
    only_gd = [c for c in _parquet(sweeps / "gd").columns if c not in _parquet(sweeps / "svm")]
    assert only_gd, "the GD sweep should have columns the SVM-only sweep lacks"
    col = only_gd[0]
    query = f'SELECT sweep, count("{col}") AS n, count(*) AS rows FROM runs GROUP BY ALL'
    got = sql(query + " ORDER BY sweep", sweeps / "svm", sweeps / "gd").set_index("sweep")
    assert got.loc["svm", "rows"] == 6 and got.loc["svm", "n"] == 0  # NULL where it lacks it
    assert got.loc["gd", "rows"] == 12 and got.loc["gd", "n"] == 12


def test_a_directory_given_twice_counts_once(sweeps):
    once = sql("SELECT count(*) AS n FROM runs", sweeps / "gd")
    twice = sql("SELECT count(*) AS n FROM runs", sweeps, sweeps / "gd", sweeps / "gd" / "0")
    assert once.n[0] == 12 and twice.n[0] == 12 + 6 + 6


def test_the_cli_prints_a_table_and_csv(sweeps, capsys):
    assert main([JOIN, str(sweeps)]) == 0
    table = capsys.readouterr().out
    assert table.split("\n")[0].split() == ["d", "seed", "rank_svm", "corr_gd"]
    assert len(table.strip().split("\n")) == 1 + 6
    assert main([JOIN, str(sweeps), "--csv"]) == 0
    csv = pd.read_csv(io.StringIO(capsys.readouterr().out))
    pd.testing.assert_frame_equal(csv, sql(JOIN, sweeps), check_dtype=False)


def test_python_m_attnsvm_query_answers_a_join_across_two_sweeps(sweeps):
    res = subprocess.run(
        [sys.executable, "-m", "attnsvm.query", JOIN, str(sweeps / "svm"), str(sweeps / "gd")],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.strip().split("\n")[1:]]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(d, s) for d in (2, 4) for s in range(3)]


@pytest.mark.parametrize(
    ("query", "where", "message"),
    [
        ("SELEC 1", "gd", "the query failed: Parser Error"),
        ("SELECT nope FROM runs", "gd", 'the query failed: Binder Error: Referenced column "nope"'),
        ("SELECT 1", "missing", "is not a directory"),
        ("SELECT 1", ".", "no job.json found below"),
    ],
)
def test_errors_are_one_attnsvm_line_and_exit_2(sweeps, tmp_path, capsys, query, where, message):
    where = tmp_path if where == "." else sweeps / where
    assert main([query, str(where)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsvm: ") and message in err and err.count("\n") == 1


def test_with_no_finished_job_the_jobs_view_still_answers(tmp_path, capsys):
    """The failed-jobs query is needed exactly when nothing finished; ``runs`` then says why it
    is missing in one line."""
    make_troubled_sweep(tmp_path / "t")
    for job in ("0", "1"):
        (tmp_path / "t" / job / "job.json").unlink()
    jobs = sql(
        "SELECT status, count(*) AS n FROM jobs GROUP BY ALL ORDER BY status", tmp_path / "t"
    )
    assert "finished" not in set(jobs.status) and jobs.n.sum() >= 1
    with pytest.raises(QueryError, match="no finished job below .* no runs or trajectory view"):
        sql("SELECT * FROM runs", tmp_path / "t")
    assert main(["SELECT count(*) FROM trajectory", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnsvm: no finished job") and err.count("\n") == 1


def test_a_broken_job_is_left_out_of_runs_with_one_line_each(tmp_path, capsys):
    make_sweep(tmp_path / "s", ds=(2, 4), kinds=("w",))
    job = sorted((tmp_path / "s").glob("*/runs.parquet"))[-1]
    job.write_bytes(job.read_bytes()[:100])
    assert main(["SELECT count(*) AS n FROM runs", str(tmp_path / "s")]) == 0
    out, err = capsys.readouterr()
    assert out.split()[-1] == "3"  # the intact job's rows
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"attnsvm: broken job left out of runs: {job.parent.resolve()} (runs.parquet: 100 bytes"
    ), err


def test_a_job_directory_copied_inside_its_sweep_counts_once(tmp_path, capsys):
    import shutil

    make_sweep(tmp_path / "s", ds=(2, 4), kinds=("w",))
    first = sorted(p.parent for p in (tmp_path / "s").glob("*/job.json"))[0]
    shutil.copytree(first, tmp_path / "s" / "zz_copy")
    runs = sql("SELECT d, seed FROM runs ORDER BY d, seed", tmp_path / "s")
    assert len(runs) == 2 * 3 and not runs.duplicated().any()
    err = capsys.readouterr().err
    assert "copy left out of runs" in err and "zz_copy" in err
    assert len(sql("SELECT * FROM jobs", tmp_path / "s")) == 3  # every job.json still listed


def test_a_job_json_of_non_utf8_bytes_is_unreadable_naming_its_file(tmp_path, capsys):
    """Every reader of a sweep: the job reads ``unreadable`` with its path (query, aggregate),
    and a re-run computes it again (``read_job``: no record), never a UnicodeDecodeError."""
    from attnsvm.results.aggregate import load_sweep
    from attnsvm.results.store import read_job

    make_sweep(tmp_path / "s", ds=(2, 4), kinds=("w",))
    bad = sorted((tmp_path / "s").glob("*/job.json"))[-1]
    bad.write_bytes(b"\x00\xff\xfe garbage")
    assert read_job(bad.parent) is None
    jobs = sql("SELECT status, error FROM jobs ORDER BY job", tmp_path / "s")
    assert list(jobs.status) == ["finished", "unreadable"]
    assert str(bad) in jobs.error.iloc[1] and "UnicodeDecodeError" in jobs.error.iloc[1]
    assert len(sql("SELECT * FROM runs", tmp_path / "s")) == 3
    assert f"unreadable job left out of runs: {bad.parent.resolve()}" in capsys.readouterr().err
    sweep = load_sweep(tmp_path / "s")
    assert "unreadable" in set(sweep.jobs.status) and len(sweep.runs) == 3


def test_sql_is_public_api(sweeps):
    assert attnsvm.sql is sql
    assert "sql" in attnsvm.__all__


def test_sums_and_counts_stay_integers(sweeps):
    got = sql('SELECT count_if(seed > 0) AS "n ""pos""", sum(seed) AS s FROM runs', sweeps / "gd")
    assert got.dtypes.map(lambda t: t.kind).tolist() == ["i", "i"]
    assert (got['n "pos"'][0], got.s[0]) == (4 * 2, 4 * (0 + 1 + 2))


def test_the_documented_queries_run(sweeps):
    """Every query of docs/results.md binds against real sweeps (their outputs there come from
    the sweeps the page names; here only the SQL is checked: columns, views, syntax)."""
    doc = (REPO / "docs" / "results.md").read_text()
    queries = [q.replace("\n", " ") for q in re.findall(r'attnsvm\.query "(.*?)"', doc, re.S)]
    queries += re.findall(r'attnsvm\.sql\("(.*?)"', doc)
    assert len(queries) >= 4
    for query in queries:
        if query != "SQL":
            sql(query, sweeps)


def test_a_truncated_table_is_a_broken_job_not_a_duckdb_traceback(tmp_path, capsys):
    """A finished job whose runs.parquet was truncated reads ``broken`` in ``jobs`` with what is
    wrong; ``runs`` holds the intact jobs; the CLI answers with rc 0."""
    make_sweep(tmp_path / "s", ds=(2, 4), kinds=("w",))
    job = sorted((tmp_path / "s").glob("*/runs.parquet"))[-1]
    with open(job, "r+b") as fh:
        fh.truncate(100)
    jobs = sql("SELECT job, status, error FROM jobs ORDER BY job", tmp_path / "s")
    assert list(jobs.status) == ["finished", "broken"], jobs
    assert "runs.parquet: 100 bytes" in jobs.error.iloc[1] and "re-run" in jobs.error.iloc[1]
    assert len(sql("SELECT * FROM runs", tmp_path / "s")) == 3
    assert main(["SELECT count(*) AS n FROM jobs", str(tmp_path / "s")]) == 0
    assert "Traceback" not in capsys.readouterr().err
