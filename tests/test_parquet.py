"""A job's tables are written as ``DataFrame.to_parquet(index=False)`` writes them, byte for
byte, by a faster route (attnsvm/results/parquet.py): over every golden table, frames of every
kind of column, and a layout whose bytes would differ (written pandas' way)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from attnsvm.results import parquet
from conftest import REPO


def _pandas_way(df: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    df.to_parquet(buffer, index=False)
    return buffer.getvalue()


@pytest.fixture(autouse=True)
def fresh_layouts(monkeypatch):
    monkeypatch.setattr(parquet, "_LAYOUTS", {})


def test_every_golden_table_is_written_byte_for_byte_as_pandas_writes_it(monkeypatch):
    monkeypatch.setattr(parquet, "_LAYOUTS", {})  # whatever other tests left
    tables = sorted((REPO / "tests" / "golden" / "tables").glob("*/*.parquet"))
    assert len(tables) > 100
    for path in tables:
        df = pd.read_parquet(path)
        expected = _pandas_way(df)
        for _ in range(2):  # the layout's first table (compared) and a later one (not)
            assert parquet.parquet_bytes(df) == expected, path
    golden = list(parquet._LAYOUTS.values())
    assert len(golden) > 20 and all(schema is not None for schema in golden)  # none fell back


FRAMES = {
    "numbers, NaN and bools": pd.DataFrame(
        {"a": [1.0, np.nan], "b": [1, 2], "c": [True, False], "d": np.float32([0.5, 1])}
    ),
    "strings with a missing one": pd.DataFrame({"s": ["x", None], "t": ["y", "z"]}),
    "all-None objects": pd.DataFrame({"o": [None, None], "n": [1, 2]}),
    "a categorical and a timestamp": pd.DataFrame(
        {"k": pd.Categorical(["u", "v"]), "when": pd.to_datetime(["2026-01-01", "2026-01-02"])}
    ),
    "empty": pd.DataFrame({"a": pd.Series([], dtype=float), "s": pd.Series([], dtype=str)}),
    "attrs (pandas' way)": pd.DataFrame({"a": [1]}).set_flags(),
    "non-string names (pandas' way)": pd.DataFrame({0: [1.0], 1: [2.0]}),
    "a custom index (dropped, as index=False drops it)": pd.DataFrame({"a": [1, 2]}, index=[7, 9]),
}
FRAMES["attrs (pandas' way)"].attrs["note"] = "kept in the metadata"


FRAMES["lists and seconds"] = pd.DataFrame(
    {"l": [[1, 2], [3]], "s": [["a"], []], "t": pd.to_datetime(["2026-01-01", "2026-01-02"])}
)
FRAMES["lists and seconds"]["t"] = FRAMES["lists and seconds"]["t"].astype("datetime64[s]")
PANDAS_WAY = {"attrs (pandas' way)", "non-string names (pandas' way)"}


@pytest.mark.parametrize("name", FRAMES)
def test_every_kind_of_column_is_written_as_pandas_writes_it(name, monkeypatch):
    monkeypatch.setattr(parquet, "_LAYOUTS", {})
    df = FRAMES[name]
    for _ in range(2):
        assert parquet.parquet_bytes(df) == _pandas_way(df), name
    fast = [schema is not None for schema in parquet._LAYOUTS.values()]
    assert fast == ([] if name in PANDAS_WAY else [True]), "this layout fell back to pandas' way"


def test_a_layout_whose_bytes_would_differ_is_written_pandas_way(monkeypatch):
    monkeypatch.setattr(parquet, "_LAYOUTS", {})
    df = FRAMES["numbers, NaN and bools"]
    written = parquet._written
    monkeypatch.setattr(parquet, "_written", lambda table: written(table) + b"!")
    assert parquet.parquet_bytes(df) == _pandas_way(df)  # compared: differs
    assert list(parquet._LAYOUTS.values()) == [None]
    assert parquet.parquet_bytes(df) == _pandas_way(df)  # and pandas' way from then on
