"""dataset=orthonormal: T orthonormal tokens in R^d per sequence, Y = +1 (the lambda head)."""

from attnsvm.config.checks import ConfigError
from attnsvm.data.data_set import DataSet


def check(ds) -> None:
    if ds.T > ds.d:
        raise ConfigError(
            f"dataset.generator=orthonormal needs dataset.T <= dataset.d (T orthonormal "
            f"tokens in R^d); got dataset.n={ds.n}, dataset.T={ds.T}, dataset.d={ds.d}: raise "
            f"dataset.d or lower dataset.T"
        )


DATA_SET = DataSet(
    instances="attnsvm.data.generators:orthonormal_instances", check=check, doc=__doc__
)
