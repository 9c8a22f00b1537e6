"""Docs that cannot go stale: the README's speed table is the rendering of the bench's results
file, docs/benchmarks.json (rewrite both with ``python -m attnsvm.bench --readme README.md``)."""

from __future__ import annotations

import json

from attnsvm.bench import README_MARKERS, readme_table
from conftest import REPO


def test_readme_speed_table_is_the_bench_results_file():
    record = json.loads((REPO / "docs" / "benchmarks.json").read_text())
    readme = (REPO / "README.md").read_text()
    start, end = README_MARKERS
    block = readme.split(start, 1)[1].split(end, 1)[0].strip()
    assert block == readme_table(record), "run: python -m attnsvm.bench --readme README.md"
