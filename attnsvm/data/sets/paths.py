"""dataset=paths: the hand-placed 2-D clusters of the published path pictures (n = 2, d = 2)."""

from attnsvm.config.checks import ConfigError
from attnsvm.data.data_set import DataSet

PATHS_T = (3, 5)  # the sequence lengths of the published pictures (generators.PATHS_LAYOUTS)


def check(ds) -> None:
    if not (ds.n == 2 and ds.d == 2 and ds.T in PATHS_T):
        raise ConfigError(
            f"dataset.generator=paths draws the published 2-D pictures: it needs "
            f"dataset.n=2, dataset.d=2 and dataset.T in {list(PATHS_T)}; got dataset.n={ds.n}, "
            f"dataset.T={ds.T}, dataset.d={ds.d}"
        )


DATA_SET = DataSet(
    instances="attnsvm.data.generators:paths_instances", check=check, planar_paths=True, doc=__doc__
)
