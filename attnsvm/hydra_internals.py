"""Every call attnsvm makes into Hydra's or OmegaConf's private code, in one place.

Supported: hydra-core >= 1.3.2, < 1.4 and omegaconf >= 2.2, < 2.4 (pyproject.toml).
tests/test_hydra_internals.py checks each of these against the versions installed, so a new
release that moves one fails there, with its name, and not deep inside a sweep.

- ``basic_sweeper``: the class the local sweeper extends.
- ``grid``: the basic sweeper's expansion of parsed overrides into jobs (the local sweeper,
  a sweep's report, the jobs never started).
- ``apply_overrides``: Hydra's own setting of parsed ``key=value`` overrides on a composed
  config (the sweep's fast composition: one composition per config group choice).
- ``override_dirname``: ``hydra.job.override_dirname`` as Hydra makes it.
- ``child``, ``raw_value``, ``set_raw_value``: an OmegaConf node, read or set without
  resolving its interpolation (is a job's directory its number; does a value fit its node).
- ``returned``: what a job's task function returned, without raising a failed job's error.
"""

from __future__ import annotations

from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname

SUPPORTED_HYDRA = ("1.3.2", "1.4")  # [from, below)


def basic_sweeper() -> type:
    """Hydra's basic sweeper class, imported when asked for: Hydra's plugin scan loads its
    module anew, and a class taken before the scan is not the one Hydra instantiates."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper


def grid(parsed_overrides: list, max_batch_size: int | None = None) -> list[list[list[str]]]:
    """The jobs of ``parsed_overrides`` in batches, as Hydra's basic sweeper splits them."""
    return basic_sweeper().split_arguments(parsed_overrides, max_batch_size)


def apply_overrides(parsed_overrides: list, cfg) -> None:
    """Set each parsed override on ``cfg`` in place, as Hydra's composition does."""
    ConfigLoaderImpl._apply_overrides_to_config(parsed_overrides, cfg)


def override_dirname(parsed_overrides: list, kv_sep: str, item_sep: str, exclude_keys) -> str:
    return get_overrides_dirname(
        overrides=parsed_overrides, kv_sep=kv_sep, item_sep=item_sep, exclude_keys=exclude_keys
    )


def child(cfg, key: str):
    """The node of ``cfg`` at ``key`` (one level), or None."""
    return cfg._get_node(key)


def raw_value(node):
    """A node's value as written, an interpolation unresolved."""
    return node._value()


def set_raw_value(node, value) -> None:
    """Set ``value`` on ``node`` with its type's checks (raises what composition would)."""
    node._set_value(value)


def returned(job_return):
    """What the task function of a completed job returned (the exception of a failed one)."""
    return job_return._return_value
