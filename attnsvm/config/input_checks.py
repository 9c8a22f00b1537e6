"""Checks of inputs that used to fail late, raw or silently: each raises a ConfigError naming the
key and what is accepted, when the config is composed (or, for what a user's generator returns,
before a job directory is written). Pure functions; the config and data modules call them.

    check_data_file("tokens.npy")                       # not an .npz: fails here, one line
"""

from __future__ import annotations

import errno
import inspect
import os
from pathlib import Path

import numpy as np

from attnsvm.config.checks import ConfigError, shown  # noqa: F401  (shown: used by data)

SCALE_RANGE = (1e-50, 1e50)  # largest |entry| of an instance's array: 0 or within this range
NPZ_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # an .npz is a zip archive (empty one included)
NPY_MAGIC = b"\x93NUMPY"
SAVEZ = "an .npz archive written by np.savez(path, X=X, Y=Y, v=v)"


def check_data_file(path: str) -> Path:
    """The file ``dataset.path`` names exists, is not empty and is an .npz archive; its Path."""
    key = f"dataset.path={shown(str(path))}"
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ConfigError(
                f"{key}: the path is too long for this file system ({exc.strerror}); "
                f"accepted: the path of an existing .npz file"
            ) from None
        if isinstance(exc, FileNotFoundError | NotADirectoryError):
            raise ConfigError(f"{key}: no such file") from None
        raise ConfigError(f"{key}: cannot be read ({exc.strerror})") from None
    if not p.is_file():
        raise ConfigError(f"{key}: not a file; accepted: {SAVEZ}")
    if st.st_size == 0:
        raise ConfigError(f"{key}: the file is empty (0 bytes); accepted: {SAVEZ}")
    with open(p, "rb") as fh:
        head = fh.read(6)
    if head.startswith(NPY_MAGIC):
        raise ConfigError(f"{key}: a .npy file (one unnamed array), not an .npz; accepted: {SAVEZ}")
    if not head.startswith(NPZ_MAGIC):
        raise ConfigError(f"{key}: not an .npz file (not a zip archive); accepted: {SAVEZ}")
    return p


def real_float64(a, name: str, source: str) -> np.ndarray:
    """Array ``name`` as float64, refusing what the conversion would change silently (complex
    numbers lose their imaginary part) or cannot hold (strings, objects)."""
    a = np.asarray(a)
    if np.iscomplexobj(a):
        raise ConfigError(
            f"{source}: array {name!r} is complex ({a.dtype}); accepted: real numbers "
            "(pass its real and imaginary parts as separate features)"
        )
    if a.dtype.kind not in "biuf":
        raise ConfigError(f"{source}: array {name!r} has dtype {a.dtype}; accepted: real numbers")
    return np.asarray(a, dtype=np.float64)


def check_scale(arrays: dict, source: str) -> None:
    """Tokens, queries and heads within a range where the SVMs and the softmax mean something:
    beyond it their products overflow float64 (a dead SVM, an infinite gradient) or underflow
    to 0 (every seed infeasible)."""
    low, high = SCALE_RANGE
    for name in ("X", "Z", "v", "V"):
        if name not in arrays:
            continue
        a = arrays[name]
        top = np.abs(a.reshape(a.shape[0], -1)).max(-1)  # (R,) per instance
        bad = np.flatnonzero((top > high) | ((top > 0) & (top < low)))
        if bad.size:
            r = int(bad[0])
            raise ConfigError(
                f"{source}: array {name!r} of instance {r} has largest |entry| {top[r]:.3g}; "
                f"accepted: 0 or a largest |entry| in [{low:g}, {high:g}] per instance (beyond, "
                "float64 products overflow or underflow): rescale the data"
            )


def check_callable_target(target: str, kwargs: dict, n, T, d) -> None:
    """``dataset.target`` imports, is callable and accepts make(seeds, n, T, d, **kwargs)."""
    from attnsvm.config.plugins import load_object

    fn = load_object(target, "dataset.target")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # some built-ins have no signature: checked when called
        return
    try:
        sig.bind([0], n, T, d, **dict(kwargs))
    except TypeError as exc:
        raise ConfigError(
            f"dataset.target={target!r} cannot be called as make(seeds, n, T, d, "
            f"**dataset.kwargs) ({exc}); accepted: a function with that signature returning "
            "a dict of arrays X, Y, v (attnsvm/data/userdata.py)"
        ) from None


def check_writable_dir(path, key: str) -> Path:
    """Directory ``path`` (created if missing) accepts new files; its Path. For the outputs
    of a job or an aggregate, checked before any work is done."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / f".attnsvm-write-probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"{key}={shown(str(path))} cannot be written ({exc.strerror or exc}); accepted: a "
            "directory you can write"
        ) from None
    return p


def _check_name_lengths(key: str, value: str, path: Path) -> None:
    """Each component of ``path`` within the file system's NAME_MAX (255 bytes on Linux) and
    the whole within PATH_MAX: else the OS refuses it with 'File name too long'."""
    name_max, path_max = 255, 4096
    try:
        name_max = os.pathconf("/", "PC_NAME_MAX")
        path_max = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows): the common limits
        pass
    for part in path.parts:
        if len(os.fsencode(part)) > name_max:
            raise ConfigError(
                f"{key}={shown(value)} cannot be created: its component {shown(part)} is "
                f"{len(os.fsencode(part))} bytes, over the file system's {name_max}; accepted: "
                "a path whose every name is shorter"
            )
    if len(os.fsencode(str(path))) >= path_max:
        raise ConfigError(
            f"{key}={shown(value)} cannot be created: {len(os.fsencode(str(path)))} bytes, over "
            f"the file system's {path_max - 1}; accepted: a shorter path"
        )


def read_only_part(sweep: Path) -> Path | None:
    """The first of an existing sweep directory and its multirun.yaml that cannot be written
    (Hydra rewrites multirun.yaml before running a job), or None."""
    for path in (sweep, sweep / "multirun.yaml"):
        if path.exists() and not os.access(path, os.W_OK):
            return path
    return None


def read_only_message(key: str, value: str, path: Path, left: str = "") -> str:
    """Why a read-only sweep cannot be resumed (``left``: e.g. ``3 of 40 jobs are left to
    run``), and how to read it as it is."""
    left = f": {left}" if left else ""
    return (
        f"{key}={shown(value)} is a sweep that cannot be written ({shown(str(path))} is "
        f"read-only){left}, so it cannot be resumed; its results read as they are: python -m "
        "attnsvm.report DIR --out FILE, python -m attnsvm.query SQL DIR; to resume it, make it "
        "writable or copy it"
    )


def _other_sweeper(overrides: list[str]) -> bool:
    """A sweeper other than attnsvm's is chosen: Hydra's writes multirun.yaml before planning."""
    return any(
        o.lstrip("+").partition("=")[0] == "hydra/sweeper" and o.partition("=")[2] != "attnsvm"
        for o in overrides
    )


def check_output_dir_overrides(overrides: list[str]) -> None:
    """``hydra.run.dir`` / ``hydra.sweep.dir`` given on the command line must be creatable
    (their nearest existing ancestor a writable directory), before Hydra tries and fails. A
    read-only sweep to rerun is attnsvm's sweeper's to judge: it runs when nothing is left."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or key not in ("hydra.run.dir", "hydra.sweep.dir") or "${" in value:
            continue
        here = Path(value).expanduser().absolute()
        _check_name_lengths(key, value, here)
        if key == "hydra.sweep.dir" and (here / "multirun.yaml").is_file():
            blocked = read_only_part(here) if _other_sweeper(overrides) else None
            if blocked is not None:  # attnsvm's sweeper decides itself (sweeper.py's doc)
                raise ConfigError(read_only_message(key, value, blocked))
            continue
        while not here.exists() and here != here.parent:
            here = here.parent
        if not here.is_dir() or not os.access(here, os.W_OK | os.X_OK):
            why = "not a directory" if not here.is_dir() else "not writable"
            raise ConfigError(
                f"{key}={shown(value)} cannot be created: {shown(str(here))} is {why}; "
                "accepted: a directory you can write"
            )


def check_group_options(overrides: list[str], conf: Path) -> None:
    """A ``group=option`` override whose option is not a config of the group (under ``conf``,
    the config package): one error naming the accepted options, before Hydra prints its own
    with its config search path. Each value of a comma list is checked; sweep functions
    (``choice(...)``) and Hydra's own groups are left to Hydra."""
    for override in overrides:
        key, eq, value = override.lstrip("+~").partition("=")
        folder = conf / key
        if not eq or key.startswith("hydra") or "(" in value or not folder.is_dir():
            continue
        if key == "experiment":  # any registered experiment or your module: the registry checks
            continue
        options = sorted(p.stem for p in folder.glob("*.yaml"))
        for name in value.split(","):
            if name and name not in options:
                raise ConfigError(
                    f"{override}: no option {name!r} in group '{key}'; accepted: "
                    + (", ".join(options) or "none")
                )
