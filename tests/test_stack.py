"""results.stack: one DataFrame from many small tables equals pandas' concat of a DataFrame
each, also where tables differ in columns or in the kinds of their values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnsvm.results.stack import stack, with_constants


def _table(rng, seed: int, kind: int) -> dict:
    steps = np.array([0, 10, 20])
    table = {"seed": seed, "step": steps, "corr": rng.random(3)}
    if kind == 1:  # a diverged seed: fewer columns, a float32 curve
        table = {"seed": seed, "step": steps, "loss": rng.random(3).astype(np.float32)}
    elif kind == 2:  # strings, a bool scalar and a curve of None
        table.update(selected=["0,1", "1,1", "1,1"], saturated=True, v=[None, None, None])
    return table


def _concat(tables: list[dict]) -> pd.DataFrame:
    return pd.concat([pd.DataFrame(t) for t in tables], ignore_index=True)


@pytest.mark.parametrize("kinds", [[0] * 5, [0, 1, 0, 2, 1], [1, 0, 2], [2, 2, 0]])
def test_stack_is_the_concat_of_a_frame_each(kinds):
    rng = np.random.default_rng(0)
    tables = [_table(rng, seed, kind) for seed, kind in enumerate(kinds)]
    pd.testing.assert_frame_equal(stack(tables), _concat(tables), check_exact=True)


def test_no_tables_give_the_empty_columns():
    empty = {"seed": [], "step": []}
    pd.testing.assert_frame_equal(stack([], empty), pd.DataFrame(empty))


CONSTANTS = {"n": 6, "lr": 0.1, "kind": "kq", "train": True, "init": None, "seed": 3}


@pytest.mark.parametrize("length", [0, 1, 5])
def test_with_constants_is_assign(length):
    """The same frame as df.assign(**columns): new columns appended in order, a present one
    (seed) replaced where it stands, dtypes inferred from the scalars, also for no rows."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "seed": np.arange(length, dtype=np.int64),
            "corr": rng.random(length),
            "status": pd.Series(["ok"] * length, dtype=object),
        }
    )
    made, want = with_constants(df, CONSTANTS), df.assign(**CONSTANTS)
    pd.testing.assert_frame_equal(made, want, check_exact=True)
    assert list(made.columns) == list(want.columns) and made.dtypes.equals(want.dtypes)
    assert with_constants(df, {}) is df
