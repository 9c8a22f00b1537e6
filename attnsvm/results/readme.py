"""The README's results blocks, rendered from docs/results/ alone: the experiment table (a row
per sweep that an experiment publishes, its wall time from sweeps.json) and the headline
numbers (a row per published table an experiment renders). ``python -m attnsvm.publish
--readme README.md`` rewrites both between their markers; tests/test_docs.py fails when the
README disagrees with those files."""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path

from attnsvm.experiments import builtin_names, entry
from attnsvm.results.published import Published, joined

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
SWEEPS_JSON = "sweeps.json"
WALL_MARKERS = ("<!-- results:walls -->", "<!-- /results:walls -->")
HEADLINE_MARKERS = ("<!-- results:headlines -->", "<!-- /results:headlines -->")
NO_WALL = "–"


class PublishError(Exception):
    """A sweep that cannot be published, or results that cannot be rendered."""


def declared(names: tuple[str, ...] | None = None) -> list[Published]:
    """Every built-in experiment's published sweeps (its entry's ``published()``; or those of
    ``names``): experiments in alphabetical order, each in its own order."""
    names = tuple(sorted(builtin_names())) if names is None else names
    out = []
    for name in names:
        declare = entry(name).published
        out += declare() if declare is not None else []
    return out


def load_sweeps(results_dir: str | Path = RESULTS, missing_ok: bool = False) -> dict:
    path = Path(results_dir) / SWEEPS_JSON
    if not path.exists():
        if missing_ok:
            return {}
        raise PublishError(f"{path} missing: run python -m attnsvm.publish outputs/sweeps/<name>")
    return json.loads(path.read_text())


def read_table(results_dir: str | Path, name: str) -> list[dict]:
    """Rows of docs/results/<name> (strings as in the file)."""
    path = Path(results_dir) / name
    if not path.exists():
        sweep = name.split("_")[0]
        raise PublishError(f"{path} missing: run python -m attnsvm.publish outputs/sweeps/{sweep}")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def format_wall(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def experiment_walls(results_dir: str | Path = RESULTS) -> dict[str, str]:
    """Sweep name -> its wall time as the README's experiment table shows it."""
    return {name: format_wall(s["wall"]) for name, s in load_sweeps(results_dir).items()}


def walls_sentence(results_dir: str | Path = RESULTS, untimed: bool = False) -> str:
    sweeps = load_sweeps(results_dir).values()
    cores = joined(str(s["cores"]) for s in sweeps)
    cpus = joined(s["cpu"] for s in sweeps)
    dates = joined(s["date"] for s in sweeps)
    text = (
        f"Wall times of the full sweeps on a {cores}-core {cpus} ({dates}): first job start to "
        "last job end, from the `started` and `seconds` of each job's `job.json`. Not counted, "
        "and measured beside it by `python -m attnsvm.bench` (its sweep-overhead row): the "
        "command's start-up (Python and Hydra: the sweep's own process never imports torch), "
        "planning (milliseconds per job), the workers' start (up to one per core; torch's import "
        "once, in the first, beside the command's start-up, the others forked from it once warm) "
        "and the writing of each job's files "
        "(the sweep's process, while its workers compute, where a core is left for it; else each "
        "worker): the speed table's sweep-overhead "
        "row below has their last measured values. "
        "`python -m attnsvm.publish outputs/sweeps/<name> ... --readme README.md` copies each "
        "sweep's tables and timing to [docs/results/](docs/results/) and rewrites this table's "
        "`wall` column and the headline numbers below from those files."
    )
    remade = [f"{n} ({s['tables_date']})" for n, s in load_sweeps(results_dir).items()
              if "tables_date" in s]  # fmt: skip
    if remade:
        text += (
            " Tables made again since their sweep was timed (on a machine shared with other "
            f"work: `python -m attnsvm.publish --keep-timing`): {', '.join(remade)}."
        )
    if untimed:
        text += (
            f" A wall of {NO_WALL}: no timing of the sweep in docs/results/{SWEEPS_JSON}; its "
            "published tables were made outside the launcher (its docs page says how)."
        )
    return textwrap.fill(text, width=96, break_long_words=False, break_on_hyphens=False)


def _row(pub: Published, walls: dict[str, str]) -> str:
    figures = " · ".join(f"[{label}](docs/figures/{file})" for label, file in pub.figures)
    command = f"`python -m attnsvm.run -m +sweeps={pub.sweep}`"
    return f"| {pub.what} | {command} | {figures or NO_WALL} | {walls.get(pub.sweep, NO_WALL)} |"


def experiment_table(
    results_dir: str | Path = RESULTS, published: list[Published] | None = None
) -> str:
    """The README's experiment block (sentence + table): a row per published sweep (every
    built-in experiment's, or ``published``), its wall from sweeps.json ("–" when it has
    none). A sweep of sweeps.json that no experiment publishes is refused."""
    published = declared() if published is None else published
    walls = experiment_walls(results_dir)
    stray = sorted(set(walls) - {p.sweep for p in published})
    if stray:
        raise PublishError(
            f"docs/results/{SWEEPS_JSON} times sweeps that no experiment publishes: "
            f"{', '.join(stray)} (add them to its entry's published())"
        )
    rows = ["| experiment | command | figure | wall |", "|---|---|---|---|"]
    rows += [_row(p, walls) for p in published]
    untimed = any(p.sweep not in walls for p in published)
    return walls_sentence(results_dir, untimed) + "\n\n" + "\n".join(rows)


def headline_table(
    results_dir: str | Path = RESULTS, published: list[Published] | None = None
) -> str:
    """The README's headline-numbers table, from the tables in ``results_dir`` only."""
    published = declared() if published is None else published
    rows = ["| | result |", "|---|---|"]
    for pub in published:
        if pub.headline is not None:
            name, render = pub.headline
            rows.append(render(read_table(results_dir, name)))
    return "\n".join(rows)


def readme_block(text: str, markers: tuple[str, str]) -> str:
    """The text between ``markers`` in ``text`` (stripped)."""
    start, end = markers
    if start not in text or end not in text:
        raise PublishError(f"README lacks the markers {start} ... {end}")
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def _replace(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = markers
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{body}\n{end}{after}"


def render_readme(text: str, results_dir: str | Path = RESULTS) -> str:
    """``text`` (a README) with both results blocks rendered from ``results_dir``."""
    readme_block(text, WALL_MARKERS)
    readme_block(text, HEADLINE_MARKERS)
    published = declared()
    text = _replace(text, WALL_MARKERS, experiment_table(results_dir, published))
    return _replace(text, HEADLINE_MARKERS, headline_table(results_dir, published))


def write_readme(readme: str | Path, results_dir: str | Path = RESULTS) -> None:
    readme = Path(readme)
    readme.write_text(render_readme(readme.read_text(), results_dir))
