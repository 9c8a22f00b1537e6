"""dataset=callable: your generator function ``make(seeds, n, T, d, **kwargs)``
(attnsvm/data/userdata.py says what it returns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from attnsvm.config.constraints import Satisfies
from attnsvm.data.data_set import DataSet


@dataclass
class Config:
    target: str | None = None  # "module:function" (or "module.function")
    kwargs: dict[str, Any] = field(default_factory=dict)  # its keyword arguments

    CONSTRAINTS: ClassVar = {"target": Satisfies("'module:function' names", bool)}


DATA_SET = DataSet(
    Config=Config,
    order=2,  # its keys' place among the data sets' keys (columns of the runs table)
    instances="attnsvm.data.userdata:callable_instances",
    resolve="attnsvm.data.userdata:resolve_callable",
    values=True,  # it may return V
    preflight="attnsvm.data.userdata:check_callable_output",
    doc=__doc__,
)
