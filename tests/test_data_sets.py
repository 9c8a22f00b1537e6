"""The data set registry (attnsvm/data/sets/): each data set's keys, checks and capabilities come
from its own entry, the flat ``dataset`` group is made from them, and a new data set lands as
one module, without editing a shared one."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from attnsvm import experiments
from attnsvm.composition import DatasetConfig, RunConfig
from attnsvm.composition.identity import config_hash
from attnsvm.config import ConfigError
from attnsvm.config.schema import DatasetBase
from attnsvm.data import sets

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf" / "dataset"


def test_every_data_set_has_its_option_file_and_a_draw_or_an_owner():
    owners = experiments.dataset_owners()
    for name in sets.names():
        conf = OmegaConf.load(CONF / f"{name}.yaml")
        assert conf.generator == name
        data_set = sets.entry(name)
        if data_set.instances is None:
            assert name in owners, f"{name} draws nothing and no experiment owns it"
        else:
            assert callable(sets.later(data_set.instances)), name
    assert {p.stem for p in CONF.glob("*.yaml")} == set(sets.names())


def test_the_dataset_group_is_the_core_keys_and_every_data_set_s_own():
    core = {f.name for f in dataclasses.fields(DatasetBase)}
    own = {k for n in sets.names() for k in _own(n)}
    assert {f.name for f in dataclasses.fields(DatasetConfig)} == core | own
    assert not core & own
    assert set(sets.hash_neutral_defaults()) == own  # at their defaults: in no job hash
    assert DatasetConfig().generator.value == sets.names()[0]


def _own(name: str) -> set[str]:
    config = sets.entry(name).Config
    return set() if config is None else {f.name for f in dataclasses.fields(config)}


@pytest.mark.parametrize("name", [n for n in sets.names() if _own(n)])
def test_a_data_set_s_key_is_refused_under_another(name):
    key = sorted(_own(name))[0]
    other = next(n for n in sets.names() if key not in _own(n) and n != name)
    value = {"K": 5, "patch": 2, "positions": True, "classes": [1, 2]}.get(key, "x")
    with pytest.raises(ConfigError, match=rf"dataset.{key} is read by dataset={name} only"):
        DatasetConfig(generator=other, **{key: value})


def test_the_default_data_set_is_the_full_groups_default():
    assert config_hash(RunConfig()) == config_hash(RunConfig(dataset=DatasetConfig()))
    assert DatasetConfig().generator.value == "random"


MINE = '''
"""dataset=ramp: tokens on a line, a test's own data set."""
from dataclasses import dataclass

from attnsvm.config.checks import require
from attnsvm.data.data_set import DataSet


@dataclass
class Config:
    slope: float = 1.0  # how far the last token lies


def check(ds) -> None:
    require(ds.slope > 0, "dataset.slope", "floats > 0", ds.slope)


DATA_SET = DataSet(name="ramp", Config=Config, instances="{module}:ramp_instances", check=check)
'''

DRAW = """
import torch


def ramp_instances(cfg, seeds):
    out = []
    for s in seeds:
        g = torch.Generator().manual_seed(s)
        X = torch.randn((cfg.n, cfg.T, cfg.d), generator=g)
        X[:, -1] += cfg.slope
        X = X / X.norm(dim=-1, keepdim=True)
        Z = torch.randn((cfg.n, cfg.d), generator=g)
        v = X[0, -1].clone()
        out.append((X, torch.ones(cfg.n), Z / Z.norm(dim=-1, keepdim=True), v))
    return tuple(torch.stack([o[k] for o in out]) for k in range(4))
"""


CHECKS = """
import attnsvm
from attnsvm.data import sets
from attnsvm.composition import DatasetConfig
from attnsvm.config import ConfigError
from attnsvm.data.generators import make_instances

assert "ramp" in sets.names()
inst = make_instances(DatasetConfig(generator="ramp", n=3, T=4, d=5, slope=2.0), [0, 1])
assert inst.X.shape == (2, 3, 4, 5)
for bad, text in (
    (dict(generator="ramp", slope=-1.0), "dataset.slope=-1.0 is invalid"),
    (dict(generator="random", slope=2.0), "dataset.slope is read by dataset=ramp only"),
):
    try:
        DatasetConfig(**bad)
        raise AssertionError(f"{bad} accepted")
    except ConfigError as exc:
        assert text in str(exc), exc
cfg = attnsvm.compose(
    ["dataset.generator=ramp", "dataset.slope=2.0", "seeds=2", "optimizer.steps=50"]
)
res = attnsvm.run_job(cfg)
assert list(res.runs.seed) == [0, 1] and res.runs.status.eq("ok").all(), res.runs.status
print("ramp", res.config_hash)
"""


def _installed(tmp_path: Path, name: str, modules: dict[str, str], checks: str):
    """Run ``checks`` in a fresh interpreter where an installed package declares the data set
    ``name`` (module ``<name>_entry``) as an entry point of ``attnsvm.data_sets``."""
    code = tmp_path / "code"
    info = code / f"{name}_lab-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-lab\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[attnsvm.data_sets]\n{name} = {name}_entry\n")
    for module, text in modules.items():
        (code / f"{module}.py").write_text(textwrap.dedent(text))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(REPO)])}
    out = subprocess.run(
        [sys.executable, "-c", checks],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_a_new_data_set_lands_as_one_module(tmp_path):
    """An installed package's module, declared as an entry point of ``attnsvm.data_sets``:
    composed, checked, drawn and trained, nothing of attnsvm edited."""
    mine = {"ramp_draw": DRAW, "ramp_entry": MINE.format(module="ramp_draw")}
    assert _installed(tmp_path, "ramp", mine, CHECKS).startswith("ramp ")


PLANES = '''
"""dataset=planes: the path pictures' clusters under a name of a test's own."""
from attnsvm.data.data_set import DataSet
from attnsvm.data.sets.paths import check

DATA_SET = DataSet(
    name="planes", instances="attnsvm.data.generators:paths_instances", check=check,
    planar_paths={planar},
)
'''

PLANES_CHECKS = """
import attnsvm
shape = ["dataset.n=2", "dataset.T=3", "dataset.d=2", "seeds=2", "optimizer.steps=30"]
mine = attnsvm.run_job(attnsvm.compose(["dataset.generator=planes", *shape]))
theirs = attnsvm.run_job(attnsvm.compose(["dataset.generator=paths", *shape]))
for name in ("paths", "tokens"):
    if name in mine.extra:
        ours, published = (r.extra[name].drop(columns="config_hash") for r in (mine, theirs))
        assert ours.equals(published), name
print(" ".join(sorted(set(mine.extra) & {"paths", "tokens"})) or "none")
"""


@pytest.mark.parametrize("planar", [True, False])
def test_a_data_set_s_declaration_decides_its_path_tables(tmp_path, planar):
    """gd writes each seed's 2-D path (tables paths and tokens) for a data set that declares
    ``planar_paths``, whatever its name: the published pictures' draw under another name gets
    the same tables with it, none without it."""
    entry = {"planes_entry": PLANES.format(planar=planar)}
    out = _installed(tmp_path, "planes", entry, PLANES_CHECKS).split()
    assert out == (["paths", "tokens"] if planar else ["none"])


def test_the_paths_check_accepts_exactly_the_drawn_layouts():
    from attnsvm.data.generators import PATHS_LAYOUTS
    from attnsvm.data.sets.paths import PATHS_T

    assert tuple(PATHS_LAYOUTS) == PATHS_T


def test_a_job_config_without_a_data_set_has_nothing_to_preflight():
    from attnsvm.config.schema import RunBase
    from attnsvm.experiments.rankdyn.config import RankdynRun

    sets.preflight(RunBase(seeds=2))  # an experiment that reads no data set: no crash
    sets.preflight(RankdynRun(seeds=2))


def test_a_key_two_data_sets_declare_is_read_by_both(monkeypatch):
    """The registry's union of keys: a shared key is refused only under the others."""
    _, field, kind = sets.own_keys()["K"]
    monkeypatch.setattr(sets, "own_keys", lambda: {"K": (("nexttoken", "ramp"), field, kind)})
    assert DatasetConfig(generator="nexttoken", K=6, n=6, T=4, d=8).K == 6
    with pytest.raises(ConfigError, match="dataset.K is read by dataset=nexttoken or dataset=ramp"):
        DatasetConfig(generator="random", K=6)
