"""Documents for the economics and scaling commands (one table each)."""

from decimal import Decimal
from typing import Any

from napkin.report.document import Document, Section


def table_doc(title: str, section: str, columns: list[str], rows: list[list[str]],
              data: dict[str, Any], inputs: dict[str, Any] | None = None,
              assumptions: dict[str, Any] | None = None,
              notes: list[str] | None = None) -> Document:
    """A one-table document (the economics and scaling commands are all this shape)."""
    return Document(title, inputs or {}, assumptions or {},
                    [Section(section, columns, rows, notes or [])], data)


def result_doc(title: str, rows: list[list[str]], data: dict[str, Any],
               inputs: dict[str, Any], notes: list[str] | None = None,
               columns: list[str] | None = None) -> Document:
    """One ``result`` table of a formula command (no assumptions beyond its inputs)."""
    return table_doc(title, "result", columns or ["quantity", "value"], rows, data, inputs, {},
                     notes)


def full_number(x: float) -> str:
    """A number as a person typed it: every integer digit with thousands separators and no
    exponent (1022362 → "1,022,362", 0.05 → "0.05"); outside [1e-4, 1e15) six significant
    digits, where the digits would be noise."""
    if x == 0 or not 1e-4 <= abs(x) < 1e15:
        return f"{x:,.6g}"
    text = f"{Decimal(repr(float(x))):,f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
