"""dataset=file: your instances from an .npz (attnsvm/data/userdata.py says which arrays)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from attnsvm.config.constraints import Satisfies

INSTANCES = "attnsvm.data.userdata:file_instances"
RESOLVE = "attnsvm.data.userdata:resolve_file"
SHAPE_FROM_DATA = True
VALUES = "attnsvm.data.userdata:file_gives_values"  # when the file holds V

ORDER = 1  # its keys' place among the data sets' keys (columns of the runs table)


@dataclass
class Config:
    path: str | None = None  # the .npz
    sha256: str | None = None  # the file's digest (filled in; set it to pin)

    CONSTRAINTS: ClassVar = {"path": Satisfies("the path of an .npz file", bool)}


def check_run(run) -> None:
    """The file holds seed + seeds instances."""
    from attnsvm.data.userdata import check_instances_held

    check_instances_held(run)
