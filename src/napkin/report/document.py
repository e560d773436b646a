"""A rendered result: inputs, assumptions, sections of rows, and the JSON payload."""

import dataclasses
import math
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any


@dataclass
class Section:
    """A titled table of already formatted cells, with notes printed under it."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    drop: tuple[str, ...] = ()
    """Columns a narrow terminal leaves out first, in this order (then from the right)."""


@dataclass
class Document:
    """What a command prints: ``data`` (base units) for JSON, ``sections`` for humans."""

    title: str
    inputs: dict[str, Any]
    assumptions: dict[str, Any]
    sections: list[Section]
    data: dict[str, Any]
    timing: dict[str, Any] = field(default_factory=dict)
    """Wall-clock figures of the run (seconds, rates): kept out of ``data`` and the tables so
    that the same inputs print the same bytes; shown with ``--timing``."""

    def payload(self, timing: bool = False) -> dict[str, Any]:
        """The JSON document: inputs and assumptions echoed, then the results (and the
        ``timing`` block when asked)."""
        out = {"inputs": jsonable(self.inputs), "assumptions": jsonable(self.assumptions),
               **jsonable(self.data)}
        return {**out, "timing": jsonable(self.timing)} if timing and self.timing else out


def _properties(cls: type) -> list[str]:
    names = []
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            if isinstance(attr, property | cached_property) and not name.startswith("_"):
                names.append(name)
    return list(dict.fromkeys(names))


def jsonable(obj: Any) -> Any:
    """Base-unit JSON: dataclasses with their fields and public properties, enums by value,
    integral floats as integers."""
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, bool) or obj is None or isinstance(obj, str | int):
        return obj
    if isinstance(obj, float):
        if math.isfinite(obj) and obj.is_integer() and abs(obj) < 2**53:
            return int(obj)
        return obj if math.isfinite(obj) else None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for name in _properties(type(obj)):
            out[name] = jsonable(getattr(obj, name))
        return out
    if isinstance(obj, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    return str(obj)
