"""What a sweep's figures tell apart: every grid point of a sweep file of sweeps/ built from the
golden fixtures' tables (tests/golden/, relabelled with the point's swept values, nothing
computed), drawn by its experiments' figures, and the texts of every figure read back from the
matplotlib Figure objects: legends, titles, notes, tick labels, axis labels and file names.

A swept value is told apart when some figure names it: ``key=value`` (or ``key value``) in a
legend, title, note or file name; a string value as a word of one; a numeric key on an axis whose
label names the key. ``experiment`` is told apart by construction (each experiment draws its own
figures from its own jobs: attnsvm/results/aggregate.py ``experiment_figures``)."""

from __future__ import annotations

import itertools
import math
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pandas as pd
import yaml
from golden_sweeps import GOLDEN, REPO, TIMING, sweep_params

from attnsvm.results.aggregate import SHORT_KEYS, Sweep, _add_swept, swept_keys

# how a figure shows a value instead of its config spelling
DISPLAY = {"w": ["$W$", "W"], "kq": ["$(K,Q)$", "(K,Q)"]}
EXTRA_ALIASES = {"rankdyn.alpha": ["α", "alpha"], "benign.eta": ["η", "eta"]}
NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
WORD_EDGE = r"A-Za-z0-9_"


@dataclass
class Drawn:
    """The texts of one drawn figure, by where they stand."""

    name: str
    texts: dict[str, list[str]] = field(default_factory=dict)  # legend/title/note/tick/axis


def figure_texts(fig, name: str) -> Drawn:
    """Every text a reader of ``fig`` sees, by kind; read after it was drawn (savefig)."""
    drawn = Drawn(name, {k: [] for k in ("legend", "title", "note", "tick", "axis", "file")})
    t = drawn.texts
    t["file"].append(name)
    t["note"] += [x.get_text() for x in fig.texts]
    for leg in fig.legends:
        t["legend"] += [x.get_text() for x in leg.get_texts()] + [leg.get_title().get_text()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        t["title"] += [ax.title.get_text(), ax._left_title.get_text(), ax._right_title.get_text()]
        leg = ax.get_legend()
        if leg is not None:
            t["legend"] += [x.get_text() for x in leg.get_texts()] + [leg.get_title().get_text()]
        t["note"] += [x.get_text() for x in ax.texts]
        t["axis"] += [ax.get_xlabel(), ax.get_ylabel()]
        t["tick"] += [str(x) for x in (*_fixed(ax.xaxis), *_fixed(ax.yaxis))]
    for kind in t:
        t[kind] = [s for s in t[kind] if s]
    return drawn


def _fixed(axis) -> list:
    """An axis's tick labels set by name (categorical: a heatmap's rows); numeric ticks are
    read from the axis label instead (``told_apart``)."""
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    formatter = axis.get_major_formatter()
    if isinstance(formatter, FixedFormatter):
        return list(formatter.seq)
    named = getattr(formatter.func, "args", ()) if isinstance(formatter, FuncFormatter) else ()
    return list(named[0].values()) if named and isinstance(named[0], dict) else []


@contextmanager
def captured():
    """Every figure saved inside the block, as a Drawn (its texts read where it is saved). Not
    rendered: the texts are the Figure's own (layout and pixels are not what is tested)."""
    from matplotlib.figure import Figure

    out: dict[int, Drawn] = {}
    save, layout = Figure.savefig, Figure.tight_layout

    def spy(self, fname, *args, **kwargs):
        out[id(self)] = figure_texts(self, Path(str(fname)).stem)

    Figure.savefig, Figure.tight_layout = spy, lambda self, *a, **k: None
    try:
        yield out
    finally:
        Figure.savefig, Figure.tight_layout = save, layout


def aliases(key: str) -> list[str]:
    """The names a figure may call ``key`` by."""
    last = key.rsplit(".", 1)[-1].lstrip("+")
    return list(dict.fromkeys([key, last, SHORT_KEYS.get(key, last), *EXTRA_ALIASES.get(key, [])]))


def _named(alias: str) -> str:
    return rf"(?<![{WORD_EDGE}\\]){re.escape(alias)}(?![A-Za-z])"


def _word(word: str) -> str:
    return rf"(?<![{WORD_EDGE}]){re.escape(word)}(?![{WORD_EDGE}])"


def told_apart(key: str, value, drawn: list[Drawn]) -> str | None:
    """How the figures tell ``value`` of ``key`` apart ("legend", "title", "note", "file",
    "tick", "axis"), or None."""
    names = aliases(key)
    spoken = ("legend", "title", "note", "file", "tick")
    for d in drawn:
        for kind in spoken:
            for text in d.texts[kind]:
                if _says(text, names, value):
                    return kind
        if _is_number(value) and any(_names_axis(label, names) for label in d.texts["axis"]):
            return "axis"
    return None


def _names_axis(label: str, names: list[str]) -> bool:
    """Whether an axis label starts with the key's name: "$d$", "layers L", "snr = signal
    norm / sqrt(d)" (not "t / log(1/alpha)", whose axis is not alpha)."""
    plain = re.sub(r"[$\\{}]", "", label).strip()
    return any(re.fullmatch(rf"{re.escape(a)}(\W.*)?", plain) for a in names)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _says(text: str, names: list[str], value) -> bool:
    if value is None:  # a null value (minibatch=null: the full batch) is named null or None
        return any(re.search(_named(alias) + r"[\s$}=:]{0,4}(null|None)", text) for alias in names)
    if isinstance(value, str):
        words = [value, *DISPLAY.get(value, [])]
        return any(re.search(_word(w), text) for w in words)
    for alias in names:
        for m in re.finditer(_named(alias) + r"[\s$}=:]{0,4}", text):
            rest = text[m.end() :]
            if isinstance(value, bool):
                if rest.startswith(str(value)):
                    return True
                continue
            number = re.match(NUMBER, rest)
            if number and math.isclose(float(number.group()), float(value), rel_tol=1e-9):
                return True
    return False


# keys whose values change the tables' columns or shapes (data, experiment, step rule): the
# fixture case a grid point is relabelled from takes the point's values of these first
SHAPING = ("experiment", "dataset.example", "dataset.patch", "dataset.T", "dataset.d",
           "+sweeps/rank_shape", "+sweeps/rankdyn_shape", "optimizer")  # fmt: skip
# columns of a value no fixture case holds (maxmargin's joint_relaxed example: corr_relaxed),
# copied from a like column so the figure code that reads them runs
FILL = {"corr_relaxed": "corr_p_mm"}


# --- the sweep's grid, relabelled fixture tables -------------------------------------------


def parse_values(spec: str) -> list:
    """The values of a sweeper param: ``a,b,c`` or ``range(a,b)``, as YAML reads each."""
    m = re.fullmatch(r"range\((\d+),\s*(\d+)\)", spec.strip())
    if m:
        return list(range(int(m.group(1)), int(m.group(2))))
    return [yaml.safe_load(v) for v in spec.split(",")]


def _group_file(group: str, option: str) -> dict:
    """The flat keys an option of a config group sets (its defaults within the group first)."""
    path = (REPO if group.startswith("sweeps/") else REPO / "conf") / group / f"{option}.yaml"
    text = path.read_text()
    data = yaml.safe_load(text) or {}
    package = re.search(r"#\s*@package\s+(\S+)", text)
    prefix = package.group(1) if package else group
    flat: dict = {}
    for base in data.pop("defaults", []) or []:
        if isinstance(base, str) and not base.startswith("/") and base != "_self_":
            flat.update(_group_file(group, base))
    flat.update({f"{prefix}.{k}": v for k, v in data.items() if not isinstance(v, dict)})
    return flat


def is_group(key: str) -> bool:
    """Whether the override ``key=...`` picks a config group's option (a file)."""
    key = key.lstrip("+")
    return key.startswith("sweeps/") or (REPO / "conf" / key).is_dir()


def point_columns(key: str, value) -> dict:
    """Runs columns the override ``key=value`` sets: its dotted column and its short name, or
    for a config group (``optimizer=md175``, ``+sweeps/rank_shape=n5_T10``) the keys it sets."""
    key = key.lstrip("+")
    if not is_group(key):
        last = key.rsplit(".", 1)[-1]
        short = last if last in ("n", "T", "d") else SHORT_KEYS.get(key, key)  # benign.n -> n
        return {key: value, short: value}
    flat = _group_file(key, str(value))
    cols = dict(flat)
    for k, v in flat.items():
        last = k.rsplit(".", 1)[-1]
        if last == "kind":  # optimizer.kind -> the short column "optimizer" (also set by a
            cols[k.rsplit(".", 1)[0]] = v  # sweep's own group in @package optimizer)
        if last in ("n", "T", "d"):
            cols[last] = v
    return cols


def option_told_apart(key: str, value, options: list, drawn: list[Drawn]) -> str | None:
    """How the figures tell apart option ``value`` of config group ``key`` among ``options``:
    by its name, or by its kind and a key in which it differs from the options of that kind
    (``optimizer=md175``: "md p=1.75")."""
    how = told_apart(key, str(value), drawn)
    if how is not None:
        return how
    flats = {o: _group_file(key, str(o)) for o in options}
    mine = flats[value]
    kind = mine.get(f"{key}.kind")
    how = told_apart(key, kind, drawn) if kind is not None else None
    same = [f for o, f in flats.items() if o != value and f.get(f"{key}.kind") == kind]
    if how is None or not same:
        return how
    differ = [k for k in mine if k != f"{key}.kind" and any(f.get(k) != mine[k] for f in same)]
    return next((h for k in differ if (h := told_apart(k, mine[k], drawn))), None)


def hidden_values(params: dict[str, list], drawn: list[Drawn]) -> list[str]:
    """``key=value`` of every swept value the figures ``drawn`` do not tell apart."""
    hidden = []
    for key, values in params.items():
        for value in values:
            if is_group(key) and not key.lstrip("+").startswith("sweeps/"):
                if option_told_apart(key, value, values, drawn) is None:
                    hidden.append(f"{key}={value}")
                continue
            hidden += [f"{k}={v}" for k, v in shown_keys(key, value) if not told_apart(k, v, drawn)]
    return sorted(set(hidden))


def shown_keys(key: str, value) -> list[tuple[str, object]]:
    """(key, value) pairs a reader must tell apart for one override of the sweep's own groups
    (``+sweeps/rank_shape=n5_T10``: the keys it sets); any other override: itself."""
    if key.lstrip("+").startswith("sweeps/"):
        return list(_group_file(key.lstrip("+"), str(value)).items())
    return [(key, value)]


def fixture_cases(name: str) -> list[tuple[str, dict]]:
    import json

    cases = json.loads((GOLDEN / "cases.json").read_text())
    out = []
    for case, spec in cases.items():
        stem = case.split("_", 1)[1].rsplit("_", 2)[0] if case.startswith("sweep_") else ""
        if stem == name and case.endswith("_auto"):
            out.append((case, spec))
    return out


def grid(name: str) -> tuple[dict[str, list], list[dict]]:
    """The sweep file's params (key -> values) and its grid points (key -> value)."""
    params = {k: parse_values(v) for k, v in sweep_params(name).items()}
    points = [
        dict(zip(params, combo, strict=True)) for combo in itertools.product(*params.values())
    ]
    return params, points


def _relabel(table: pd.DataFrame, cols: dict, job: int) -> pd.DataFrame:
    """``table`` as job ``job`` with the point's values; a key its case's rows leave out (a key
    only the point's step rule reads, as md's p) is added."""
    table = table.copy()
    for col, value in cols.items():
        table[col] = [value] * len(table)
    table["config_hash"] = f"job{job:04d}"
    return table


def build_sweep(name: str) -> tuple[Sweep, dict[str, list]]:
    """Every grid point of sweep ``name`` as a finished job: a fixture case of its experiment,
    relabelled with the point's values. Returns the Sweep and the params."""
    sys.path.insert(0, str(GOLDEN))
    import make

    params, points = grid(name)
    tables = make.tables()
    cases = [(case, set(spec["overrides"])) for case, spec in fixture_cases(name)]
    read = cache(lambda case, kind: pd.read_parquet(tables / f"{case}.{kind}.parquet"))
    runs_parts, traj_parts = [], []
    for job, point in enumerate(points):
        mine = {f"{k}={v}" for k, v in point.items()}
        shaping = {f"{k}={v}" for k, v in point.items() if k in SHAPING}
        # the case closest to the point: the same experiment, table shape, then most values
        case = max(cases, key=lambda c: (len(shaping & c[1]), len(mine & c[1])))[0]
        runs = read(case, "runs").assign(**dict.fromkeys(TIMING, 0.25))  # make.py drops them
        traj = read(case, "trajectory")
        cols = {}
        for key, value in point.items():
            cols.update(point_columns(key, value))
        runs_parts.append(_relabel(runs, cols, job))
        traj_parts.append(_relabel(traj, cols, job))
        for col, like in FILL.items():
            if like in traj and col not in traj:
                traj_parts[-1][col] = traj[like].to_numpy()
    runs = pd.concat(runs_parts, ignore_index=True)
    traj = pd.concat(traj_parts, ignore_index=True)
    return _sweep(runs, traj), params


def _sweep(runs: pd.DataFrame, traj: pd.DataFrame) -> Sweep:
    config = [c for c in runs if "." in c or c in {*SHORT_KEYS.values(), "experiment", "dtype"}]
    keys = [SHORT_KEYS.get(c, c) if SHORT_KEYS.get(c, c) in runs else c for c in config]
    jobs = pd.DataFrame({"dir": runs.config_hash.unique(), "status": "finished", "used": True})
    sweep = Sweep(runs, pd.DataFrame(), {}, jobs)
    sweep.swept = swept_keys(runs, list(dict.fromkeys(keys)))
    sweep.trajectory = traj
    _add_swept(sweep, "trajectory", traj)
    return sweep


def draw(sweep: Sweep, out: Path) -> dict[str, list[Drawn]]:
    """experiment -> the figures it drew of its own jobs (as ``aggregate`` draws them)."""
    from attnsvm.experiments import entry

    names = sorted(sweep.runs.experiment.unique())
    drawn = {}
    for name in names:
        mine = sweep
        if len(names) > 1:
            hashes = set(sweep.runs.config_hash[sweep.runs.experiment == name])
            runs = sweep.runs[sweep.runs.config_hash.isin(hashes)].dropna(axis=1, how="all")
            traj = sweep.trajectory[sweep.trajectory.config_hash.isin(hashes)]
            traj = traj.dropna(axis=1, how="all").infer_objects()  # its own jobs' dtypes
            mine = _sweep(runs.reset_index(drop=True).infer_objects(), traj)
        with captured() as figs:
            entry(name).figures(mine.runs, mine.trajectory, out, sweep=mine)
        drawn[name] = list(figs.values())
    return drawn
