"""gd's p-model examples: the published max-margin examples (maxmargin.py: their paths of p,
``+sweeps=maxmargin``) and attention on real images (digits.py: ``+sweeps=digits``). plots.py
declares their figure parts (each draws the runs whose data set reads its key), readme_rows.py
their rows of the README's results tables.

The digits are gd's own data (digits_data.py): the data set's entry (attnsvm/data/sets/digits.py)
declares its keys, gd's entry its draw and resolution (``DATA_SET_CODE``)."""

from __future__ import annotations


def draw_digits(ds, seeds: list[int]):
    """dataset=digits' draw (digits_data.py: digits_instances), imported when first drawn."""
    from .digits_data import digits_instances

    return digits_instances(ds, seeds)


def resolve_digits(ds) -> dict:
    """dataset=digits' T and d from the patch size, n checked (digits_data.py)."""
    from .digits_data import resolve_dataset

    return resolve_dataset(ds)


DATA_SET_CODE = {"digits": {"instances": draw_digits, "resolve": resolve_digits}}
