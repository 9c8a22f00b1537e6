"""SQL over the results of any number of sweeps, read in place (DuckDB; nothing is copied).

    python -m attnsvm.query "SELECT sweep, d, count(*) FROM runs GROUP BY ALL" outputs/sweeps
    python -m attnsvm.query "SELECT * FROM jobs WHERE status <> 'finished'" DIR --csv
    df = attnsvm.sql("SELECT d, avg(corr_fro) FROM runs GROUP BY d", "outputs/sweeps/rank")

Each DIR may be a sweep directory, a job directory, or a folder holding several sweeps: every
``job.json`` below it marks one job (directory names are never parsed). Three views:

* ``runs``: every row of every finished job's runs.parquet;
* ``trajectory``: every row of every finished job's trajectory.parquet;
* ``jobs``: one row per job.json, finished or not (status, error, seconds, config_hash, node).

Each view starts with ``sweep`` (the name of the directory holding the job's multirun.yaml, or
of the job's parent for a single run), ``job`` (the job directory relative to it) and
``sweep_dir`` (the sweep's absolute path, for sweeps of the same name). Only jobs whose job.json
says ``finished`` and whose tables match what it recorded enter ``runs`` and ``trajectory``:
job.json is written last, so any other job's tables may be partial; a finished job whose tables
were damaged since (truncated, overwritten) reads ``broken`` in ``jobs``, with what is wrong, and
a re-run of its sweep recomputes it. Each job left out of ``runs`` that is broken, unreadable or
a copy of another job of its sweep (same config hash) gets one ``attnsvm:`` line on stderr;
where no job finished, the ``jobs`` view still answers. Sweeps with different columns combine by
column name; a column a sweep lacks is NULL in its rows.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from attnsvm.results.integrity import verified
from attnsvm.results.store import RUNS, TRAJECTORY, scan_jobs

MULTIRUN = "multirun.yaml"  # Hydra writes it into every sweep directory


class QueryError(ValueError):
    """A query that cannot run: no results found, or DuckDB refused the SQL."""


@dataclass(frozen=True)
class JobDir:
    path: Path  # absolute
    sweep_dir: Path  # absolute
    record: dict  # job.json

    @property
    def row(self) -> dict:
        """Where the job is and what its job.json says: a row of the ``jobs`` view."""
        r = self.record
        return {
            "sweep": self.sweep_dir.name,
            "job": self.path.relative_to(self.sweep_dir).as_posix(),
            "sweep_dir": str(self.sweep_dir),
            "status": r.get("status", "unknown"),
            "config_hash": r.get("config_hash"),
            "seconds": r.get("seconds"),
            "started": r.get("started"),
            "error": r.get("error"),
            "node": r.get("node"),
        }


def sweep_of(job_dir: Path) -> Path:
    """The nearest directory above ``job_dir`` holding a multirun.yaml, else its parent."""
    for parent in job_dir.parents:
        if (parent / MULTIRUN).is_file():
            return parent
    return job_dir.parent


def find_jobs(dirs: list[str | Path]) -> list[JobDir]:
    """Every job below ``dirs`` once (a job found through two arguments counts once)."""
    found: dict[Path, JobDir] = {}
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise QueryError(f"{d} is not a directory (expected a sweep, job or results folder)")
        for job_dir, record in map(verified, scan_jobs(d)):  # damaged tables: ``broken``
            job_dir = job_dir.resolve()
            found.setdefault(job_dir, JobDir(job_dir, sweep_of(job_dir), record))
    return sorted(found.values(), key=lambda j: j.path)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _table_view(con, name: str, files: pd.DataFrame) -> None:
    """View ``name`` over the parquet files listed in ``files`` (filename, sweep, job,
    sweep_dir), read in place, with the job's location joined on by file name."""
    import duckdb

    con.register(f"_{name}_files", files)
    paths = ", ".join(_quote(f) for f in files.filename)
    try:
        con.execute(
            f"CREATE VIEW {name} AS SELECT f.sweep, f.job, t.* EXCLUDE (filename), f.sweep_dir "
            f"FROM read_parquet([{paths}], union_by_name = true, filename = true) AS t "
            f"JOIN _{name}_files AS f USING (filename)"
        )
    except duckdb.Error as exc:  # a file changed between the check and the read
        raise QueryError(
            f"cannot read the {name} tables ({str(exc).splitlines()[0]}): re-run the sweep to "
            "recompute damaged jobs"
        ) from None


def in_tables(jobs: list[JobDir]) -> tuple[list[JobDir], list[str]]:
    """The jobs whose tables enter ``runs`` and ``trajectory`` (finished and intact, one per
    config hash and sweep, the first in path order: a job directory copied inside its sweep
    counts once, as in ``aggregate``), and one line for each job left out that is broken or a
    copy. Jobs still running or failed are in the ``jobs`` view only, as their status says."""
    kept, left_out, seen = [], [], {}
    for j in jobs:
        status = j.record.get("status")
        if status in ("broken", "unreadable"):
            why = j.record.get("error") or status
            left_out.append(f"{status} job left out of runs: {j.path} ({why})")
            continue
        if status != "finished":
            continue
        key = (j.sweep_dir, j.record.get("config_hash"))
        if key in seen:
            left_out.append(f"copy left out of runs: {j.path} (same config hash as {seen[key]})")
            continue
        seen[key] = j.path
        kept.append(j)
    return kept, left_out


def connect(dirs: list[str | Path], left_out: list[str] | None = None):
    """A DuckDB connection with the views ``runs``, ``trajectory`` and ``jobs`` over ``dirs``;
    ``left_out`` (when given) receives one line per job kept out of ``runs`` (``in_tables``).
    Where no job finished, only ``jobs`` exists: that is when it is needed."""
    import duckdb

    jobs = find_jobs(dirs)
    if not jobs:
        where = ", ".join(str(d) for d in dirs)
        raise QueryError(f"no job.json found below {where}: not attnsvm results")
    con = duckdb.connect()
    con.register("_jobs", pd.DataFrame([j.row for j in jobs]))
    con.execute("CREATE VIEW jobs AS SELECT * FROM _jobs")
    finished, lines = in_tables(jobs)
    if left_out is not None:
        left_out.extend(lines)
    for name, table in (("runs", RUNS), ("trajectory", TRAJECTORY)):
        files = [{**j.row, "filename": str(j.path / table)} for j in finished]
        files = [f for f in files if Path(f["filename"]).is_file()]
        if files:
            _table_view(con, name, pd.DataFrame(files)[["filename", "sweep", "job", "sweep_dir"]])
    return con


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _frame(rel) -> pd.DataFrame:
    """The relation as a DataFrame; DuckDB's 128-bit integers (``sum`` and ``count_if`` of
    integers) become BIGINT first, so that counts stay integers in pandas."""
    if rel is None:  # a statement without a result
        return pd.DataFrame()
    if any("HUGEINT" in str(t) for t in rel.types):
        cols = [
            f"{_ident(c)}::BIGINT AS {_ident(c)}" if "HUGEINT" in str(t) else _ident(c)
            for c, t in zip(rel.columns, rel.types, strict=True)
        ]
        rel = rel.project(", ".join(cols))
    return rel.df()


def sql(query: str, *dirs: str | Path) -> pd.DataFrame:
    """The result of ``query`` over the views ``runs``, ``trajectory`` and ``jobs`` of the
    results below ``dirs`` (sweep, job or parent directories), as a pandas DataFrame.

    >>> attnsvm.sql("SELECT sweep, d, avg(corr_fro) AS corr FROM runs GROUP BY ALL", "out/s1")
    """
    import duckdb

    if not dirs:
        raise QueryError("no directory given: name at least one sweep or results folder")
    left_out: list[str] = []
    con = connect(list(dirs), left_out)
    for line in left_out:  # the answer stands on the readable jobs; say which were not
        print(f"attnsvm: {line}", file=sys.stderr)
    try:
        return _frame(con.sql(query))
    except duckdb.CatalogException as exc:
        views = {r[0] for r in con.sql("SELECT view_name FROM duckdb_views()").fetchall()}
        missing = {"runs", "trajectory"} - views
        if missing and any(v in str(exc) for v in missing):
            raise QueryError(
                f"no finished job below {', '.join(map(str, dirs))}, so there is no "
                f"{' or '.join(sorted(missing))} view; the jobs view lists every job"
            ) from None
        raise QueryError(f"the query failed: {str(exc).splitlines()[0]}") from None
    except duckdb.Error as exc:
        raise QueryError(f"the query failed: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnsvm.query",
        description="SQL (DuckDB) over the runs, trajectory and jobs of attnsvm results.",
    )
    parser.add_argument("sql", help='e.g. "SELECT d, avg(corr_fro) FROM runs GROUP BY d"')
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="sweep, job or parent folders")
    parser.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    args = parser.parse_args(argv)
    try:
        df = sql(args.sql, *args.dirs)
    except QueryError as exc:
        print(f"attnsvm: {exc}", file=sys.stderr)
        return 2
    if args.csv:
        df.to_csv(sys.stdout, index=False)
    else:
        with pd.option_context("display.width", 200):
            print(df.to_string(index=False) if len(df.columns) else "(no columns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
