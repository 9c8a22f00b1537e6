"""dataset=random: the published generator (docs/math.md#the-published-data), draw for draw."""

DEFAULT = True
INSTANCES = "attnsvm.data.generators:random_instances"
