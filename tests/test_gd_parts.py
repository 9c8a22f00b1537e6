"""gd's figures come from its declared parts (attnsvm/experiments/gd/parts.py, plots.py): each
part selects the runs it draws by what they read, never by a data set's name."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from test_house import _data_set_words

from attnsvm.experiments.gd import parts, plots

GD = Path(plots.__file__).parent


def _runs(generators, optimizers=("ngd",), **more) -> pd.DataFrame:
    n = max(len(generators), len(optimizers))
    gens = list(generators) * (n // len(generators))
    opts = list(optimizers) * (n // len(optimizers))
    return pd.DataFrame({"dataset.generator": gens, "optimizer": opts, **more})


@pytest.mark.parametrize(
    "generators, optimizers, conv, part",
    [
        (["maxmargin"], ["ngd"], False, "max-margin examples"),
        (["digits"], ["ngd"], False, "digits"),
        (["random"], ["ngd"], True, None),  # the paper's figures
        (["random", "random"], ["ngd", "adam"], True, "optimizer geometry"),
        (["random", "random"], ["ngd", "adam"], False, None),  # no convergence types recorded
    ],
)
def test_each_part_draws_the_runs_it_selects(generators, optimizers, conv, part):
    extra = {"conv_type": ["global"] * len(generators)} if conv else {}
    found, rows = parts.chosen(plots.PARTS, _runs(generators, optimizers, **extra))
    assert (found.name if found else None) == part
    assert rows.all() if part else not rows.any()


def test_a_part_selects_only_its_own_rows_of_a_mixed_sweep():
    runs = _runs(["random", "maxmargin", "random"])
    found, rows = parts.chosen(plots.PARTS, runs)
    assert found.name == "max-margin examples" and rows.tolist() == [False, True, False]


def test_a_data_set_is_drawn_by_the_part_whose_key_it_reads_whatever_its_name(monkeypatch):
    @dataclasses.dataclass
    class Patches:
        patch: int = 2

    real = parts.sets.entry
    monkeypatch.setattr(
        parts.sets,
        "entry",
        lambda name: SimpleNamespace(Config=Patches) if name == "mylab.tiles" else real(name),
    )
    found, rows = parts.chosen(plots.PARTS, _runs(["mylab.tiles"]))
    assert found.name == "digits" and rows.all()
    found, _ = parts.chosen(plots.PARTS, _runs(["mylab.unknown"]))  # not a registered data set
    assert found is None


def test_no_module_choosing_gd_s_figures_names_a_data_set():
    """plots.py and parts.py choose for every gd sweep (a part's own package may name the
    data sets it draws)."""
    words = _data_set_words()
    for path in (GD / "plots.py", GD / "parts.py"):
        named = [line for line in path.read_text().splitlines() if words.search(line)]
        assert not named, (path, named)
