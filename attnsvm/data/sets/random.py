"""dataset=random: the published generator (docs/math.md#the-published-data), draw for draw."""

from attnsvm.data.data_set import DataSet

DATA_SET = DataSet(default=True, instances="attnsvm.data.generators:random_instances", doc=__doc__)
