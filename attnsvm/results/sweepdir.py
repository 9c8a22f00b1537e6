"""Where a sweep lives, and which of its jobs never started.

An ad-hoc grid (no ``+sweeps=NAME``, no ``hydra.sweep.dir=``) gets a stable directory named
after its overrides, so that running the same command again resumes it:

    python -m attnsvm.run -m dataset.d=2,4,8 parameterization=w,kq seeds=5
    # -> outputs/sweeps/adhoc/dataset.d=2,4,8_parameterization=kq,w_seeds=5-<hash of the list>

conf/config.yaml names the resolver ``attnsvm_adhoc_sweep`` (registered by the local launcher's
plug-in, hydra_plugins/attnsvm_local, which Hydra imports before composing). The order of the
overrides, the order of a grid's values (``dataset.d=8,4,2`` is ``dataset.d=2,4,8``: numbers
by value, then the rest by text) and the keys that change no number (threads, batch_size,
progress_interval) do not change the directory. A grid whose values were already in that order
keeps the name it always had; a directory named after the values as typed, by the version that
did not sort them, is still found and resumed. :func:`never_started` reads the grid back from
``multirun.yaml``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from omegaconf import OmegaConf

from attnsvm.results.artifacts import NON_RESULT_KEYS

MAX_DESCRIPTION = 80  # characters of the readable part of an ad-hoc sweep's directory name
UNSAFE = re.compile(r"[^A-Za-z0-9.,=+_-]+")


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _split_top_level(text: str) -> list[str]:
    """``a,[b,c],'d,e'`` -> ``["a", "[b,c]", "'d,e'"]``: commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _order(value) -> tuple:
    """Numbers by value first (bools are not numbers here), then everything else by text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def canonical_override(override: str) -> str:
    """``key=v1,v2,...`` with its values in canonical order (``_order``); any other override,
    and a grid already in that order, exactly as given."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep

    try:
        (parsed,) = OverridesParser.create().parse_overrides([override])
    except Exception:  # not ours to judge here: Hydra reports it when it composes
        return override
    sweep = parsed.value() if parsed.is_sweep_override() else None
    if not isinstance(sweep, ChoiceSweep) or not sweep.simple_form or sweep.tags:
        return override
    head, _, text = override.partition("=")
    texts = _split_top_level(text)
    if len(texts) != len(sweep.list):
        return override
    keyed = [(_order(v), t) for v, t in zip(sweep.list, texts, strict=True)]
    if all(a[0] <= b[0] for a, b in zip(keyed, keyed[1:], strict=False)):
        return override
    return f"{head}={','.join(t for _, t in sorted(keyed, key=lambda kt: kt[0]))}"


def adhoc_name(overrides: list[str], canonical: bool = True) -> str:
    """``<sorted overrides, file-name safe, truncated>-<8 hex digits of their hash>``; each
    grid's values in canonical order (``canonical_override``) unless ``canonical`` is False
    (the name the version before gave the same command)."""
    kept = [str(o) for o in overrides if _key(str(o)) not in NON_RESULT_KEYS]
    kept = sorted(canonical_override(o) for o in kept) if canonical else sorted(kept)
    digest = hashlib.sha256("\n".join(kept).encode()).hexdigest()[:8]
    text = UNSAFE.sub("_", "_".join(kept)).strip("_.") or "defaults"
    return f"{text[:MAX_DESCRIPTION].rstrip('_.')}-{digest}"


def adhoc_sweep_dir(base: str, overrides) -> str:
    """The resolver ``${attnsvm_adhoc_sweep:BASE,${hydra.overrides.task}}``: ``BASE/<name>``;
    where only the name the unsorted values gave exists (a sweep started before values were
    sorted), that directory, so that it resumes.

    Registered with ``use_cache=True``: OmegaConf caches a resolver by its arguments' text, and
    Hydra copies the sweep's cache into every job's config (as for ``${now:...}``), so each job
    gets the sweep's directory, not one named after its own single-valued overrides."""
    items = OmegaConf.to_container(overrides) if OmegaConf.is_config(overrides) else overrides
    items = list(items or [])
    name, legacy = adhoc_name(items), adhoc_name(items, canonical=False)
    if legacy != name and not Path(base, name).exists() and Path(base, legacy).is_dir():
        return f"{base}/{legacy}"
    return f"{base}/{name}"


def register_resolver() -> None:
    if not OmegaConf.has_resolver("attnsvm_adhoc_sweep"):
        OmegaConf.register_new_resolver("attnsvm_adhoc_sweep", adhoc_sweep_dir, use_cache=True)


def sweep_grid(sweep_dir: Path) -> list[list[str]]:
    """Every job's overrides, expanded from ``multirun.yaml`` as Hydra's basic sweeper does
    (the sweep file's ``hydra.sweeper.params``, then the command line's overrides)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from attnsvm.hydra_internals import grid

    cfg = OmegaConf.load(Path(sweep_dir) / "multirun.yaml")
    params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
    args = [f"{k}={v}" for k, v in params.items()] + list(cfg.hydra.overrides.task)
    parsed = OverridesParser.create().parse_overrides(args)
    return [list(job) for job in grid(parsed)[0]]


def never_started(sweep_dir: Path) -> list[str]:
    """The grid points of the sweep (``multirun.yaml``) that no job directory holds: each job
    records its own overrides in ``.hydra/overrides.yaml``. Empty where there is no grid."""
    if not (Path(sweep_dir) / "multirun.yaml").exists():
        return []
    seen = {
        frozenset(OmegaConf.to_container(OmegaConf.load(p)))
        for p in Path(sweep_dir).rglob(".hydra/overrides.yaml")
        if (p.parent.parent / "job.json").exists()
    }
    return [" ".join(job) for job in sweep_grid(sweep_dir) if frozenset(job) not in seen]
