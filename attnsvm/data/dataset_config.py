"""``DatasetConfig``: the core dataset keys (attnsvm/config/schema.py: DatasetBase) with every
data set's own keys, and ``Generator``, the data sets' names; made once from the data sets'
registry (attnsvm/data/sets/), which plug-ins extend. The experiments that read a data set
name ``DatasetConfig`` in their job config (attnsvm/experiments/<name>/config.py)."""

from __future__ import annotations

from attnsvm.data.sets import dataset_class, generator_enum

DatasetConfig = dataset_class()
Generator = generator_enum()

__all__ = ["DatasetConfig", "Generator"]
