"""One table from many small ones without a DataFrame each: a job's per-seed trajectories.

``stack(tables)`` equals ``pd.concat([pd.DataFrame(t) for t in tables], ignore_index=True)``
(the same columns, order, dtypes and values), where each table is a dict of columns: numpy
arrays, lists or scalars broadcast to the table's length. A DataFrame per seed is
pandas' time under the GIL, the serial floor of a 10^5-seed job whatever its threads; here the
tables whose columns have the same names and kinds are stacked as arrays, one frame per
kind, and the rows put back in their order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _kind(value) -> tuple:
    """What decides the dtype pandas gives a column: an array's dtype, a scalar's type, the
    set of element types of a list."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.ndim)
    if isinstance(value, list | tuple):
        return ("list", tuple(sorted({type(v).__name__ for v in value})))
    return ("scalar", type(value).__name__)


def _length(table: dict) -> int:
    sizes = [len(v) for v in table.values() if isinstance(v, np.ndarray | list | tuple)]
    return sizes[0] if sizes else 1


def _column(values: list, lengths: list[int]):
    first = values[0]
    if isinstance(first, np.ndarray):
        return np.concatenate(values)
    if isinstance(first, list | tuple):
        return [x for v in values for x in v]
    if isinstance(first, int | float | np.number):  # bool is an int: kept as bool
        return np.repeat(np.array(values), lengths)
    return [v for v, n in zip(values, lengths, strict=True) for _ in range(n)]  # str, None


def stack(tables: list[dict], empty: dict | None = None) -> pd.DataFrame:
    """The tables' rows in order, as one DataFrame (``empty``'s columns when there are none)."""
    if not tables:
        return pd.DataFrame(empty or {})
    groups: dict[tuple, list[int]] = {}
    for k, table in enumerate(tables):
        groups.setdefault(tuple((name, _kind(v)) for name, v in table.items()), []).append(k)
    frames, rows = [], []
    for key, members in groups.items():
        lengths = [_length(tables[k]) for k in members]
        names = [name for name, _ in key]
        frames.append(
            pd.DataFrame({n: _column([tables[k][n] for k in members], lengths) for n in names})
        )
        rows.append(np.repeat(members, lengths))
    if len(frames) == 1:
        return frames[0]
    order = np.argsort(np.concatenate(rows), kind="stable")
    return pd.concat(frames, ignore_index=True).take(order).reset_index(drop=True)


def with_constants(df: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """``df.assign(**columns)`` for scalar ``columns`` (the config columns every row carries),
    the same frame (order, dtypes, values), made in one step: assign inserts one column at a
    time, for a job's ~80 config columns more than a small job computes."""
    if not columns:
        return df
    present = {k: v for k, v in columns.items() if k in df.columns}  # replaced where they stand
    if present:
        df = df.assign(**present)
    new = {k: v for k, v in columns.items() if k not in df.columns}
    return pd.concat([df, pd.DataFrame(new, index=df.index)], axis=1) if new else df
