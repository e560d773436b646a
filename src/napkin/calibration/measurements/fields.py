"""The field checks the measurement readers share, and the reading of their files.

Every reader returns ``list[Measurement]`` and raises :class:`NapkinError` with one line
``<file>[ <where>]: <field>: <what is wrong>`` on bad input (:func:`fail`). A file is a regular
UTF-8 file of at most :data:`MAX_MEASUREMENT_BYTES`, read as CSV (:func:`csv_rows`) or as one
JSON document or JSON lines (:func:`json_documents`).
"""

import contextlib
import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from napkin.errors import NapkinError
from napkin.specs.files import read_text
from napkin.specs.yaml_text import check_nesting

MS = 1e-3
"""Seconds in a millisecond (the files' latencies are in ms; a measurement's in s)."""


def fail(where: str, name: str, message: str) -> NoReturn:
    """Raise the one-line error ``<where>: <name>: <message>``, the message cut to 300
    characters (it quotes a cell's value, which a file may make arbitrarily long)."""
    text = message if len(message) <= 300 else message[:297] + "..."
    raise NapkinError(f"{where}: {name}: {text}")


def is_missing(value: object) -> bool:
    """Whether ``value`` is absent: None or a blank string."""
    return value is None or (isinstance(value, str) and not value.strip())


MAX_COUNT = 10**9
"""Largest integer a measurement field (tokens, concurrency, TP, requests) may hold."""


def as_number(value: object) -> float | None:
    """``value`` as a float (numbers and numeric strings; not booleans), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return float(value.strip())
    return None


def positive_int(value: object, where: str, name: str) -> int:
    """``value`` as an integer in [1, 10⁹] (``"16"``, ``16`` and ``16.0`` are accepted)."""
    if is_missing(value):
        fail(where, name, "missing (an integer ≥ 1 is required)")
    number = as_number(value)
    if (number is None or not math.isfinite(number) or number != int(number) or number < 1
            or number > MAX_COUNT):
        fail(where, name, f"{value!r} is not an integer in [1, {MAX_COUNT:.0e}]")
    return int(number)


def positive_float(value: object, where: str, name: str) -> float:
    """``value`` as a finite number > 0 (NaN, inf, zero and negatives are rejected)."""
    if is_missing(value):
        fail(where, name, "missing (a finite positive number is required)")
    number = as_number(value)
    if number is None or not math.isfinite(number) or number <= 0:
        fail(where, name, f"{value!r} is not a finite positive number")
    return number


def optional_float(value: object, where: str, name: str, scale: float = 1.0) -> float | None:
    """``None`` for a missing or empty value, else a finite positive number × ``scale``."""
    if is_missing(value):
        return None
    return positive_float(value, where, name) * scale


def unit_fraction(value: object, where: str, name: str) -> float:
    """A number in [0, 1] (empty or missing → 0)."""
    if is_missing(value):
        return 0.0
    number = -1.0
    with contextlib.suppress(TypeError, ValueError):
        number = float(value)  # type: ignore[arg-type]
    if not 0.0 <= number <= 1.0:
        fail(where, name, f"{value!r} is not a number in [0, 1]")
    return number


def mean_count(total: object, completed: int, where: str, name: str) -> int:
    """``total / completed`` rounded, at least 1."""
    return max(1, round(positive_float(total, where, name) / completed))


MAX_MEASUREMENT_BYTES = 256 * 2**20
"""Largest measurement file read."""


def measurement_text(path: Path) -> str:
    """The UTF-8 text of ``path`` (a byte-order mark is dropped): a regular file of at most
    :data:`MAX_MEASUREMENT_BYTES`."""
    try:
        return read_text(path, "measurements", MAX_MEASUREMENT_BYTES, "utf-8-sig")
    except FileNotFoundError:
        raise NapkinError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise NapkinError(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError as e:
        raise NapkinError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise NapkinError(f"{path}: cannot be read ({e.strerror})") from None


def csv_rows(path: Path, text: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and ``(line number, row)`` pairs of a CSV text; ragged rows are errors."""
    try:
        reader = csv.DictReader(io.StringIO(text), restkey="\0extra")
        header = [h.strip() for h in reader.fieldnames or []]
        rows = []
        for row in reader:
            line = reader.line_num
            if "\0extra" in row:
                fail(f"{path} line {line}", "row", f"more fields than the {len(header)} columns")
            rows.append((line, {k.strip(): (v or "").strip() for k, v in row.items()}))
    except csv.Error as e:
        raise NapkinError(f"{path}: not valid CSV ({e})") from None
    if not header:
        raise NapkinError(f"{path}: not valid CSV (no header line)")
    return header, rows


def csv_table(path: str | Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """The ``(line number, row)`` pairs of a CSV file holding at least ``columns``; an
    unreadable file, bad CSV, a ragged row or a missing column is one error line naming the
    file (and the line)."""
    path = Path(path)
    header, rows = csv_rows(path, measurement_text(path))
    require_columns(path, header, columns)
    return rows


def require_columns(path: Path, header: list[str], required: tuple[str, ...]) -> None:
    """Error naming the columns of ``required`` that ``header`` lacks."""
    missing = [c for c in required if c not in header]
    if missing:
        fail(str(path), "columns", f"missing {', '.join(missing)}")


def json_documents(path: Path, text: str) -> list[object]:
    """One JSON document, or one per non-empty line (JSON lines)."""
    check_nesting(text, str(path))
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as first:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise NapkinError(
                f"{path}: not valid JSON or JSON lines (line {first.lineno} column "
                f"{first.colno}: {first.msg})"
            ) from None


def json_records(path: Path, docs: list[object]) -> list[dict]:
    """The objects of ``docs``, a list document contributing its elements."""
    records: list[object] = []
    for doc in docs:
        records.extend(doc if isinstance(doc, list) else [doc])
    for i, record in enumerate(records, 1):
        if not isinstance(record, dict):
            fail(f"{path} result {i}", "result", f"expected a JSON object, got {record!r:.40}")
    if not records:
        raise NapkinError(f"{path}: no results in the file")
    return records  # type: ignore[return-value]


@dataclass(frozen=True)
class Overrides:
    """What the caller says about a benchmark file that does not say it itself."""

    backend: str
    gpu: str | None
    model: str | None
    tensor_parallel: int | None
    weights: str | None
