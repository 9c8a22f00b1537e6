"""dataset=joint2d: the published 2-D joint-training example of lp mirror descent."""

from attnsvm.config.checks import ConfigError
from attnsvm.data.data_set import DataSet


def check(ds) -> None:
    if (ds.n, ds.T, ds.d) != (2, 3, 2):
        raise ConfigError(
            f"dataset.generator=joint2d is the published 2-D example: it needs dataset.n=2, "
            f"dataset.T=3, dataset.d=2; got dataset.n={ds.n}, dataset.T={ds.T}, dataset.d={ds.d}"
        )


DATA_SET = DataSet(instances="attnsvm.data.generators:joint2d_instances", check=check, doc=__doc__)
