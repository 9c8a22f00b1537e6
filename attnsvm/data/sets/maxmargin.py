"""dataset=maxmargin: the published examples of max-margin token selection for the p-model
(attnsvm/data/maxmargin.py holds them; ``dataset.example`` picks one)."""

from __future__ import annotations

from dataclasses import dataclass

from attnsvm.config.checks import ConfigError, require
from attnsvm.data.data_set import DataSet


@dataclass
class Config:
    example: str | None = None  # which published example (attnsvm/data/maxmargin.py)


def check_run(run) -> None:
    """The examples are the p-model's, with as many seeds as published starts."""
    from attnsvm.data.maxmargin import EXAMPLES

    kind = run.parameterization.kind.value
    if kind != "p":
        raise ConfigError(
            f"dataset=maxmargin holds the examples of the p-model: it needs "
            f"parameterization=p; got parameterization={kind}"
        )
    count = len(EXAMPLES[run.dataset.example].seeds)
    require(
        run.seed + run.seeds <= count,
        "seed/seeds",
        f"seed + seeds <= {count}, the published inits of dataset.example={run.dataset.example}"
        f" (seeds={count - run.seed})",
        (run.seed, run.seeds),
    )


DATA_SET = DataSet(
    Config=Config,
    order=4,  # its keys' place among the data sets' keys (columns of the runs table)
    instances="attnsvm.data.maxmargin:maxmargin_instances",
    extra=("p0",),  # the example's published start of p, per seed
    resolve="attnsvm.data.maxmargin:resolve_dataset",
    shape_from_data=True,
    inits=True,
    resolvers={"maxmargin": "attnsvm.data.maxmargin:maxmargin_setting"},
    check_run=check_run,
    doc=__doc__,
)
