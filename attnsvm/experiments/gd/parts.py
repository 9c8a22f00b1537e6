"""gd's figure parts: what ``python -m attnsvm.aggregate`` draws for the runs of one part of gd.

Each part (the p-model/max-margin examples and the digits in examples/, the geometry and
mirror studies in geometry/) declares once which runs it draws, by what those runs read, and
its figures; plots.py lists them in order and the first that selects any of a sweep's gd runs
draws them. The paper's figures (figures_sweep.py) draw every sweep no part selects. No part is
chosen by a data set's name: a data set's part is found by the keys its entry declares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from attnsvm.config.checks import ConfigError
from attnsvm.data import sets


@dataclass(frozen=True, kw_only=True)
class FigurePart:
    """One part of gd with its own figures."""

    name: str  # its name in messages and docs
    selects: Callable[[pd.DataFrame], pd.Series]  # runs -> the rows it draws (bool per row)
    figures: Callable  # (runs, trajectory, out_dir, sweep) -> list[Path]: its rows' figures
    doc: str = ""  # what it draws


def _own_keys(generator: str) -> frozenset[str]:
    """The keys of the ``dataset`` group that data set ``generator``'s entry declares as its
    own (its ``Config``); none for a data set the registry does not know."""
    try:
        own = sets.entry(generator).Config
    except ConfigError:
        return frozenset()
    return frozenset(f.name for f in dataclasses.fields(own)) if own is not None else frozenset()


def reads_dataset_key(key: str) -> Callable[[pd.DataFrame], pd.Series]:
    """A part's selection: the rows whose data set reads ``dataset.<key>`` (one of the keys
    its entry declares as its own)."""

    def select(runs: pd.DataFrame) -> pd.Series:
        if "dataset.generator" not in runs:
            return pd.Series(False, index=runs.index)
        generators = runs["dataset.generator"]
        readers = {g for g in generators.dropna().unique() if key in _own_keys(str(g))}
        return generators.isin(readers)

    select.__doc__ = f"The rows whose data set reads dataset.{key}."
    return select


def chosen(
    parts: tuple[FigurePart, ...], runs: pd.DataFrame
) -> tuple[FigurePart | None, pd.Series]:
    """The first of ``parts`` that selects any of ``runs``, with its rows; (None, none) when
    none does."""
    for part in parts:
        rows = part.selects(runs)
        if rows.any():
            return part, rows
    return None, pd.Series(False, index=runs.index)
