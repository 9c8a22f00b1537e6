"""dataset=callable: your generator function ``make(seeds, n, T, d, **kwargs)``
(attnsvm/data/userdata.py says what it returns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from attnsvm.config.constraints import Satisfies

INSTANCES = "attnsvm.data.userdata:callable_instances"
RESOLVE = "attnsvm.data.userdata:resolve_callable"
VALUES = True  # it may return V
PREFLIGHT = "attnsvm.data.userdata:check_callable_output"

ORDER = 2  # its keys' place among the data sets' keys (columns of the runs table)


@dataclass
class Config:
    target: str | None = None  # "module.function"
    kwargs: dict[str, Any] = field(default_factory=dict)  # its keyword arguments

    CONSTRAINTS: ClassVar = {"target": Satisfies("'module.function' names", bool)}
