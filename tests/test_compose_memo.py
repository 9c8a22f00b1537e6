"""``attnsvm.compose`` composes a structure once (attnsvm/composition/compose_memo.py): the
memo's config is Hydra's own, key for key and flag for flag, its errors are Hydra's, and an
edited config file or ConfigStore node is composed afresh."""

from __future__ import annotations

import contextlib
import os
from importlib import resources

import pytest
from hydra import compose, initialize_config_module
from omegaconf import OmegaConf

import attnsvm
from attnsvm.composition import compose_memo
from attnsvm.composition.compose import register_configs
from attnsvm.config.schema import CONF_MODULE

CASES = [
    ["dataset.d=6", "optimizer.steps=200"],
    ["parameterization=kq", "seeds=16", "dataset.n=3"],
    ["optimizer=sign", "solver.norms=[fro,max,spectral]", "seeds=8", "seeds=2"],  # a key twice
    ["+sweeps=rankdyn", "+sweeps/rankdyn_shape=n10_T12_d16", "rankdyn.alpha=0.01"],
    ["experiment=icl", "icl.d=5", "seeds=3"],
    ["+sweeps=local", "dataset.T=${dataset.n}", "optimizer.lr=0.5"],  # an interpolation
    ["head.kind=head_example:make", "+head.kwargs.scale=3"],
    ["+head.kwargs.scale=3", "head.kwargs.scale=4"],  # a value of a key added before it
    ["head.kwargs.scale=4", "+head.kwargs.scale=3"],  # ... or after it: Hydra refuses it
    ["optimizer.kwargs={}", "optimizer.lr=1e-2"],
    ["dataset=paths", "dataset.d=4", "~metrics"],
    ["++dataset.d=7", "dataset.n=5"],
    ["dataset.n=abc"],  # Hydra's errors, raised as Hydra raises them
    ["+sweeps=rankdyn", "rankdyn.alpha=x"],
    ["dataset.nope=3"],
    ["dataset=nope", "dataset.d=3"],
]


def hydra_config(overrides):
    with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def memo_config(overrides):
    with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
        return compose_memo.compose_config(overrides)


@pytest.mark.parametrize("overrides", CASES, ids=" ".join)
def test_the_memo_composes_what_hydra_composes(overrides):
    register_configs()
    with contextlib.suppress(Exception):
        memo_config(overrides[:1])  # the structure may be in the memo already
    try:
        want = hydra_config(overrides)
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)) as got:
            memo_config(overrides)
        assert str(got.value) == str(exc)
        return
    got = memo_config(overrides)
    assert OmegaConf.to_yaml(got) == OmegaConf.to_yaml(want)
    assert OmegaConf.is_struct(got) == OmegaConf.is_struct(want)


def test_values_reuse_the_structure_and_an_edited_file_is_read_again():
    stats = compose_memo.STATS
    attnsvm.compose(["dataset.d=3"])
    before = dict(stats)
    assert attnsvm.compose(["dataset.d=4"]).dataset.d == 4
    assert attnsvm.compose(["dataset.d=5", "seeds=2"]).seeds == 2
    assert stats["hydra"] == before["hydra"] and stats["memo"] == before["memo"] + 2
    config = resources.files(CONF_MODULE) / "config.yaml"
    st = os.stat(config)
    try:
        os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # "edited"
        attnsvm.compose(["dataset.d=6"])
    finally:
        os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert stats["hydra"] == before["hydra"] + 1


def test_a_changed_configstore_node_is_composed_afresh():
    from hydra.core.config_store import ConfigStore

    attnsvm.compose(["dataset.d=3"])
    before = compose_memo.STATS["hydra"]
    ConfigStore.instance().store(name="an_unrelated_node", node={"x": 1})
    try:
        attnsvm.compose(["dataset.d=4"])
    finally:
        ConfigStore.instance().repo.pop("an_unrelated_node.yaml")
    assert compose_memo.STATS["hydra"] == before + 1
