"""gd's p-model examples: the published max-margin examples (maxmargin.py: their paths of p,
``+sweeps=maxmargin``) and attention on real images (digits.py: ``+sweeps=digits``). plots.py
declares their figure parts (each draws the runs whose data set reads its key), readme_rows.py
their rows of the README's results tables.

The examples and the digits are gd's own data (maxmargin_data.py, digits_data.py): each data
set's entry (attnsvm/data/sets/maxmargin.py, digits.py) declares its keys, gd's entry its draw,
resolution, rules and sweep-file resolvers (``DATA_SET_CODE``), each imported when first used."""

from __future__ import annotations


def draw_digits(ds, seeds: list[int]):
    """dataset=digits' draw (digits_data.py: digits_instances), imported when first drawn."""
    from .digits_data import digits_instances

    return digits_instances(ds, seeds)


def resolve_digits(ds) -> dict:
    """dataset=digits' T and d from the patch size, n checked (digits_data.py)."""
    from .digits_data import resolve_dataset

    return resolve_dataset(ds)


def draw_maxmargin(ds, seeds: list[int]):
    """dataset=maxmargin's draw: the example's data and published starts (maxmargin_data.py)."""
    from .maxmargin_data import maxmargin_instances

    return maxmargin_instances(ds, seeds)


def resolve_maxmargin(ds) -> dict:
    """dataset=maxmargin's n, T, d: the published example's (maxmargin_data.py)."""
    from .maxmargin_data import resolve_dataset

    return resolve_dataset(ds)


def check_maxmargin_run(run) -> None:
    """The examples are the p-model's, with as many seeds as published starts."""
    from .maxmargin_data import check_run

    check_run(run)


def maxmargin_setting(what: str, value: str):
    """``${maxmargin:what,value}`` in sweeps/maxmargin.yaml (maxmargin_data.py)."""
    from .maxmargin_data import maxmargin_setting as setting

    return setting(what, value)


DATA_SET_CODE = {
    "digits": {"instances": draw_digits, "resolve": resolve_digits},
    "maxmargin": {
        "instances": draw_maxmargin,
        "resolve": resolve_maxmargin,
        "check_run": check_maxmargin_run,
        "resolvers": {"maxmargin": maxmargin_setting},
    },
}
