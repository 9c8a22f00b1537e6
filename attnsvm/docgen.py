"""The generated parts of docs/: the configuration reference and the result columns (an entry
point: it reads every registry and runs tiny jobs, so it sits above what it documents).

    python -m attnsvm.docgen --write    # rewrite them between their markers
    python -m attnsvm.docgen --check    # exit 1, naming the file, when docs/ differ

Both are read off the code, so they cannot drift from it. The reference: every group and key
of the schema dataclasses (attnsvm/config/schema.py and each experiment's ``Config``), its
default, what is accepted (what its class declares: attnsvm/config/constraints.py, else the
type) and the comment on its line; each group's options with the first sentence of their
YAML file. The columns: those of runs.parquet and trajectory.parquet written by a tiny real job
of each built-in experiment, at the settings of its sweep file (the first that names it).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import tempfile
import typing
from importlib.resources import files
from pathlib import Path

from attnsvm.config.constraints import accepted_text
from attnsvm.config.schema import CONF_MODULE, RunBase
from attnsvm.experiments import builtin_names, entry, group_of, read_groups

DOCS = Path(__file__).resolve().parents[1] / "docs"
TARGETS = {"config-reference": "configuration.md", "result-columns": "result-contract.md"}
SEEDS = 2
# keys that size a job, set small for the columns' run wherever a group has them
TINY = {"steps": 20, "checkpoint_every": 10, "checkpoints": 4, "points": 3, "batch": 50,
        "test_prompts": 100, "fit_prompts": 200, "target_accepted": 2,
        "max_tried": 200}  # fmt: skip
TINY_RUN = ["seeds=2", "batch_size=8", "optimizer.steps=400", "optimizer.checkpoint_every=200"]
_FIELD = re.compile(r"^\s{4}(\w+):[^#]*(?:#\s*(?P<note>.*))?$")
_DOC_LINK = re.compile(r"docs/([\w-]+\.md)(#[\w-]+)?")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def field_notes(cls: type) -> dict[str, str]:
    """The comment on each field's line of ``cls``'s source (its meaning)."""
    lines = inspect.getsource(cls).split("\n    def ")[0].splitlines()
    found = (_FIELD.match(line) for line in lines)
    return {m[1]: m["note"] or "" for m in found if m}


def _default(f: dataclasses.Field) -> str:
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    value = getattr(value, "value", value)
    return f"`{value if isinstance(value, str) else json.dumps(value)}`"


def key_table(
    cls: type, group: str, extra: dict[str, str] | None = None, made: type | None = None
) -> list[str]:
    """One row per key of ``cls`` (nested groups left out): key, default, accepted, meaning.
    What a key accepts is what ``cls`` declares (its ``CONSTRAINTS``, ``RULES`` and enum
    types: attnsvm/config/constraints.py), else ``extra``'s text, else its type. ``made``: the
    class made from ``cls`` whose defaults and types users get (DatasetConfig from
    DatasetBase)."""
    made = made or cls
    hints, notes = typing.get_type_hints(made), field_notes(cls)
    defaults = {f.name: f for f in dataclasses.fields(made)}
    rows = ["| key | default | accepted | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            continue
        said = [accepted_text(made, f.name, markdown=True), (extra or {}).get(f.name)]
        accepted = "; ".join(s for s in said if s) or f"`{f.type}`"
        key = f"{group}.{f.name}" if group else f.name
        rows.append(
            f"| `{key}` | {_default(defaults[f.name])} | {_cell(accepted)} | "
            f"{_cell(notes.get(f.name, ''))} |"
        )
    return rows


def _first_sentence(text: str) -> str:
    """Up to the first . : or ; outside parentheses that ends a word ("e.g." does not)."""
    text, depth = " ".join(text.split()), 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        end = char in ".:;" and depth == 0 and text[i + 1 : i + 2] in ("", " ")
        if end and not text[: i + 1].endswith(("e.g.", "i.e.", "s.t.", "al.")):
            text = text[:i]
            break
    return _DOC_LINK.sub(r"[\1](\1\2)", text)


def group_options(group: str) -> list[str]:
    """``name``: the first sentence of the comment heading conf/<group>/<name>.yaml."""
    out = []
    for path in sorted(files(CONF_MODULE).joinpath(group).iterdir(), key=lambda p: p.name):
        if not path.name.endswith(".yaml"):
            continue
        comment = []
        for line in path.read_text().splitlines():
            if not line.startswith("#"):
                break
            comment.append(line.lstrip("# "))
        about = _first_sentence(" ".join(c for c in comment if not c.startswith("@package")))
        out.append(f"- `{group}={path.name[:-5]}`" + (f": {about}" if about else ""))
    return out


def norm_choices() -> str:
    """What ``solver.norms`` accepts, from the norms' registry (attnsvm/svm/norm_names.py)."""
    from attnsvm.svm.norm_names import BUILTIN, DEFAULT

    names = ", ".join(f"`{n}`" for n in BUILTIN)
    return f"{names}, `l<p>` (p >= 1), or your `module:function`; null: {', '.join(DEFAULT)}"


def config_reference() -> str:
    """The markdown between the ``config-reference`` markers of docs/configuration.md."""
    from attnsvm.composition.compose import SHARED_GROUPS
    from attnsvm.config.schema import DatasetBase
    from attnsvm.data import sets

    lines = []
    made = {"dataset": sets.dataset_class()}
    said = {"solver": {"norms": norm_choices()}}
    for group, cls in {"dataset": DatasetBase, **SHARED_GROUPS}.items():
        lines += [f"### `{group}`", "", "Options:", "", *group_options(group), ""]
        lines += [*key_table(cls, group, said.get(group), made=made.get(group)), ""]
    for name in sorted(sets.names()):
        data_set = sets.entry(name)
        if data_set.Config is not None:
            lines += [f"### `dataset` keys read by `dataset={name}`", ""]
            lines += [*key_table(data_set.Config, "dataset"), ""]
    for name in sorted(builtin_names()):
        group = group_of(entry(name))
        if group is not None:
            lines += [f"### `{group}` (read by `experiment={name}`)", ""]
            lines += [*key_table(entry(name).Config, group), ""]
    runs = {"experiment": ", ".join(f"`{n}`" for n in sorted(builtin_names()))}
    runs["experiment"] += ", or your module's import path"
    lines += ["### Run-level keys (every job's)", "", *key_table(RunBase, "", runs), ""]
    for name in sorted(builtin_names()):
        own = own_keys(entry(name).job_config)
        if len(own) > 2:  # beyond the header rows
            lines += [f"### Run-level keys of `experiment={name}`", "", *own, ""]
    return "\n".join([*lines, *experiment_reads()])


def own_keys(cls) -> list[str]:
    """The rows of the keys of a job config that are neither a group nor every job's."""
    core = {f.name for f in dataclasses.fields(RunBase)}
    own = [f for f in dataclasses.fields(cls) if f.name not in core]
    plain_fields = [f.name for f in own if not dataclasses.is_dataclass(f.default_factory)]
    return [line for line in key_table(cls, "") if _row_key(line) in (None, *plain_fields)]


def _row_key(line: str) -> str | None:
    """The key a reference table's row names (None: a header row)."""
    found = re.match(r"^\| `([\w.]+)` \|", line)
    return found[1] if found else None


def experiment_reads() -> list[str]:
    """What each built-in experiment reads: its job config's groups and keys
    (attnsvm/experiments/<name>/config.py); any other key is refused at composition."""
    lines = ["### What each experiment reads", "", "| experiment | reads |", "|---|---|"]
    for name in sorted(builtin_names()):
        keys = [k for k in read_groups(entry(name)) if k != "experiment"]
        lines.append(f"| `{name}` | {', '.join(f'`{k}`' for k in keys)} |")
    return lines


def sweep_of(name: str) -> str | None:
    """The first sweep file (by name) that chooses ``experiment: name``."""
    for path in sorted(files(CONF_MODULE).joinpath("sweeps").iterdir(), key=lambda p: p.name):
        if path.name.endswith(".yaml"):
            if f"- override /experiment: {name}\n" in path.read_text():
                return path.name[:-5]
    return None


def tiny_overrides(name: str) -> list[str]:
    """A few seeds and steps of experiment ``name`` at its sweep's settings (else the default)."""
    sweep = sweep_of(name)
    out = [f"+sweeps={sweep}"] if sweep else [f"experiment={name}"]
    group = group_of(entry(name))
    if group is not None:
        keys = {f.name for f in dataclasses.fields(entry(name).Config)}
        out += [f"{group}.{k}={v}" for k, v in TINY.items() if k in keys]
    reads = read_groups(entry(name))  # a key the experiment does not read is refused
    return [*out, *(o for o in TINY_RUN if "." not in o or o.split(".")[0] + ".*" in reads)]


def job_columns(name: str, where: Path) -> dict[str, list[str]]:
    """file name -> its columns, from a tiny job of experiment ``name`` written to ``where``."""
    import pyarrow.parquet as pq

    from attnsvm.api import run_job

    run_job(tiny_overrides(name), out_dir=where)
    return {p.name: pq.read_schema(p).names for p in sorted(where.glob("*.parquet"))}


def _column_list(columns: list[str]) -> str:
    """The columns in order; the config's dotted keys as one ``group.*`` entry per group."""
    shown: list[str] = []
    for col in columns:
        item = f"{col.split('.')[0]}.*" if "." in col else col
        if item not in shown:
            shown.append(item)
    return ", ".join(f"`{c}`" for c in shown)


def result_columns() -> str:
    """The markdown between the ``result-columns`` markers of docs/result-contract.md."""
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(builtin_names()):
            run = " ".join(tiny_overrides(name))
            lines += [f"### `{name}`", "", f"`python -m attnsvm.run {run}` writes:", ""]
            for file, cols in job_columns(name, Path(tmp) / name).items():
                lines.append(f"- `{file}`: {_column_list(cols)}")
            lines.append("")
    return "\n".join(lines).rstrip()


RENDER = {"config-reference": config_reference, "result-columns": result_columns}


def splice(text: str, tag: str, body: str) -> str:
    """``text`` with what lies between ``<!-- generated:tag -->`` and its end marker replaced."""
    start, end = f"<!-- generated:{tag} -->", f"<!-- /generated:{tag} -->"
    if text.count(start) != 1 or text.count(end) != 1:
        raise ValueError(f"attnsvm: expected one {start} and one {end}")
    head, rest = text.split(start)
    return f"{head}{start}\n{body}\n{end}{rest.split(end)[1]}"


def stale(tags=tuple(TARGETS), docs: Path = DOCS, write: bool = False) -> list[Path]:
    """The docs files whose generated part differs from what the code renders (rewritten
    when ``write``)."""
    out = []
    for tag in tags:
        path = docs / TARGETS[tag]
        text = path.read_text()
        new = splice(text, tag, RENDER[tag]())
        if new != text:
            out.append(path)
            if write:
                path.write_text(new)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnsvm.docgen", description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite the generated parts")
    parser.add_argument("--check", action="store_true", help="exit 1 when they are stale")
    parser.add_argument("--only", choices=list(TARGETS), help="one part only")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder")
    args = parser.parse_args(argv)
    tags = [args.only] if args.only else list(TARGETS)
    changed = stale(tags, args.docs, write=args.write)
    for path in changed:
        print(f"{'rewrote' if args.write else 'stale'}: {path}")
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
