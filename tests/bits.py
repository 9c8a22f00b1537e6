"""Bit-for-bit comparisons whose failure says which value differs, by how much, and where.

pandas and torch print two differing float64 values identically when they differ in the last
bits; these helpers name the column (or field), the row's seed and step, both values in full
precision (``float.hex``) and the difference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch


def _describe(a, b) -> str:
    fa, fb = float(a), float(b)
    return f"{fa!r} ({fa.hex()}) vs {fb!r} ({fb.hex()}), difference {fa - fb:.3g}"


def assert_frames_identical(got: pd.DataFrame, want: pd.DataFrame, what: str = "") -> None:
    """Same columns, same rows, every value the same bits (NaN equals NaN)."""
    assert list(got.columns) == list(want.columns), f"{what}: columns differ"
    assert len(got) == len(want), f"{what}: {len(got)} rows vs {len(want)}"
    for col in want.columns:
        a, b = got[col].to_numpy(), want[col].to_numpy()
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            same = (a == b) | (np.isnan(a) & np.isnan(b))
        else:
            same = np.array([x == y or (x != x and y != y) for x, y in zip(a, b, strict=True)])
        if not same.all():
            i = int(np.argmin(same))
            where = ", ".join(f"{k}={want[k].iloc[i]}" for k in ("seed", "step") if k in want)
            detail = _describe(a[i], b[i]) if a.dtype.kind == "f" else f"{a[i]!r} vs {b[i]!r}"
            raise AssertionError(
                f"{what}: column {col!r} differs in {int((~same).sum())} of {len(same)} rows; "
                f"first at row {i} ({where}): {detail}"
            )


def assert_tensors_identical(got: torch.Tensor, want: torch.Tensor, what: str = "") -> None:
    """torch.equal, with the first differing index and both values on failure."""
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    if torch.equal(got, want):
        return
    diff = (got != want).nonzero()
    idx = tuple(int(k) for k in diff[0])
    raise AssertionError(
        f"{what}: {len(diff)} of {got.numel()} entries differ; first at index {idx}: "
        f"{_describe(got[idx], want[idx])}"
    )
