"""Read public LLM-serving traces into a :class:`RequestSet`.

Formats (``fmt``), as the public datasets write them:

``azure``
    Azure LLM inference traces (Azure/AzurePublicDataset: ``AzureLLMInferenceTrace_code.csv`` /
    ``_conv.csv`` from 2023, ``AzureLLMInferenceTrace_{code,conv}_1week.csv`` from 2024). CSV
    with header ``TIMESTAMP,ContextTokens,GeneratedTokens``. ``TIMESTAMP`` is a wall-clock
    datetime: 2023 files write ``2023-11-16 18:15:46.6805900`` (7 fractional digits, no zone),
    2024 files ``2024-05-10 00:00:00.009930+00:00``. Zone-less times are read as UTC; all
    fractional digits are kept (differences are exact to well below a microsecond).
    ``ContextTokens`` is the input length, ``GeneratedTokens`` the output length.
``burstgpt``
    BurstGPT (HPMLL/BurstGPT: ``BurstGPT_1.csv`` ...). CSV with header
    ``Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type``; ``Timestamp`` is
    seconds from 0:00:00 of the trace's first day, ``Model`` is ``ChatGPT`` or ``GPT-4``.
    Failed requests have ``Response tokens`` 0 and are dropped (and counted). Labels are the
    ``Model`` names; ``model=`` keeps one of them.
``mooncake``
    Mooncake traces (kvcache-ai/Mooncake: ``FAST25-release/traces/conversation_trace.jsonl``,
    ``toolagent_trace.jsonl``, ``synthetic_trace.jsonl``, and the arxiv ``mooncake_trace.jsonl``).
    JSON Lines, one object per request: ``{"timestamp": <ms>, "input_length": <tokens>,
    "output_length": <tokens>, "hash_ids": [<int>, ...]}``; ``timestamp`` is milliseconds since
    the first request and each hash id names one 512-token block of the prompt, so requests
    sharing a leading run of ids share that prefix (``prefix_hashes``, ``hash_block_tokens=512``).
``csv`` / ``parquet``
    Any table: ``arrival_column``, ``input_column`` and ``output_column`` name the columns and
    ``time_unit`` says what the arrival column holds: ``s``, ``ms`` or ``us`` numbers, or
    ``datetime`` (ISO 8601 strings such as ``2024-05-10T00:00:00.25+00:00``, zone-less read as
    UTC; in parquet also a timestamp column). Parquet needs ``pyarrow``.

Every format: arrivals are converted to seconds, sorted (stable) and rebased so the first request
arrives at 0.0 s. Rows whose input or output length is missing or not positive are dropped and
counted in :attr:`Trace.rows_dropped`. Anything else that cannot be read (a missing file or
column, a number or timestamp that does not parse, a token count above
:data:`napkin.serving.requests.MAX_REQUEST_TOKENS`, a zone offset beyond ±14:00, arrivals
spanning more than a float holds) raises :class:`NapkinError` with one line that
names the file, the line or row, and the column.
"""

import csv
import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from napkin.errors import NapkinError
from napkin.serving.requests import MAX_REQUEST_TOKENS, RequestSet

TraceFormat = Literal["azure", "burstgpt", "mooncake", "csv", "parquet"]
TimeUnit = Literal["s", "ms", "us", "datetime"]

FORMATS: tuple[str, ...] = ("azure", "burstgpt", "mooncake", "csv", "parquet")
TIME_UNITS: tuple[str, ...] = ("s", "ms", "us", "datetime")
MOONCAKE_BLOCK_TOKENS = 512
"""Tokens per ``hash_ids`` entry in the Mooncake traces."""

_PER_SECOND = {"s": 1.0, "ms": 1e3, "us": 1e6}
_MISSING = {"", "nan", "na", "n/a", "null", "none"}
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Trace:
    """A trace read from a file, with what was read and what was dropped.

    ``len(requests) == rows_read - rows_filtered - rows_dropped``.
    """

    requests: RequestSet
    """Arrival times in seconds, sorted, rebased so the first request arrives at 0.0 s."""
    source: str
    """The file and its format, e.g. ``'BurstGPT_1.csv (burstgpt)'``."""
    rows_read: int
    """Data rows (CSV records, JSON lines, parquet rows) read from the file."""
    rows_dropped: int
    """Rows dropped for a missing or non-positive input or output length."""
    drop_reason: str
    """Why rows were dropped, e.g. ``'output tokens 0 (failed requests in BurstGPT)'``;
    several reasons are joined with ``'; '``; empty when nothing was dropped."""
    rows_filtered: int = 0
    """Rows skipped because their ``Model`` is not the ``model=`` asked for (BurstGPT)."""



def _short(value: object, most: int = 60) -> str:
    """A cell's value as an error quotes it: its repr, cut to ``most`` characters (an error
    never carries more of a file than the field's own value, truncated)."""
    text = repr(value)
    return text if len(text) <= most else text[:most - 3] + "..."

def read_trace(
    path: str | Path,
    fmt: TraceFormat,
    *,
    arrival_column: str | None = None,
    input_column: str | None = None,
    output_column: str | None = None,
    time_unit: TimeUnit = "s",
    model: str | None = None,
    max_rows: int | None = None,
) -> Trace:
    """Read the trace at ``path`` written in format ``fmt`` (see the module docstring).

    ``arrival_column``, ``input_column``, ``output_column`` and ``time_unit`` are for the generic
    ``csv`` and ``parquet`` formats (the three columns are required there); the named formats fix
    their own columns and units. ``model`` keeps only the BurstGPT rows whose ``Model`` equals it
    (e.g. ``'ChatGPT'`` or ``'GPT-4'``). ``max_rows`` stops after that many data rows of the file
    (counted before filtering and dropping).
    """
    if fmt not in FORMATS:
        raise NapkinError(f"trace: format {fmt!r} is not one of {', '.join(FORMATS)}")
    if time_unit not in TIME_UNITS:
        raise NapkinError(f"time_unit: {time_unit!r} is not one of {', '.join(TIME_UNITS)}")
    if max_rows is not None and (isinstance(max_rows, bool) or max_rows < 1):
        raise NapkinError(f"max_rows: must be a whole number >= 1, got {max_rows!r}")
    generic = fmt in ("csv", "parquet")
    columns = {"arrival_column": arrival_column, "input_column": input_column,
               "output_column": output_column}
    if generic:
        missing = [name for name, value in columns.items() if not value]
        if missing:
            raise NapkinError(
                f"trace: format {fmt!r} needs arrival_column, input_column and output_column; "
                f"missing: {', '.join(missing)}"
            )
    else:
        given = [name for name, value in columns.items() if value is not None]
        if given or time_unit != "s":
            option = given[0] if given else "time_unit"
            raise NapkinError(
                f"{option}: only for formats 'csv' and 'parquet'; format {fmt!r} fixes its own "
                "columns and units"
            )
    if model is not None and fmt != "burstgpt":
        raise NapkinError(
            f"model: filters BurstGPT's Model column; format {fmt!r} has no model column"
        )

    p = Path(path)
    if not p.exists():
        raise NapkinError(f"trace: no such file {str(p)!r}")
    if not p.is_file():
        raise NapkinError(f"trace: {str(p)!r} is not a file")

    if fmt == "azure":
        return _read_csv(p, fmt, "TIMESTAMP", "ContextTokens", "GeneratedTokens",
                         "datetime", max_rows)
    if fmt == "burstgpt":
        return _read_csv(p, fmt, "Timestamp", "Request tokens", "Response tokens", "s",
                         max_rows, model_column="Model", model=model)
    if fmt == "mooncake":
        return _read_mooncake(p, max_rows)
    assert arrival_column and input_column and output_column
    if fmt == "csv":
        return _read_csv(p, fmt, arrival_column, input_column, output_column, time_unit,
                         max_rows)
    return _read_parquet(p, arrival_column, input_column, output_column, time_unit, max_rows)


# --- parsing single values ----------------------------------------------------------------------


class _Clock:
    """Datetime strings → float seconds relative to the first one parsed.

    Whole seconds stay integers until the subtraction, so nanosecond digits survive even though
    epoch seconds as a float64 only resolve ~0.2 µs.
    """

    def __init__(self) -> None:
        self.ref: int | None = None

    def seconds(self, text: str) -> float:
        """Seconds since the first parsed time; raises ValueError when ``text`` is no datetime."""
        whole, frac = _parse_datetime(text)
        if self.ref is None:
            self.ref = whole
        return float(whole - self.ref) + frac


def _parse_datetime(text: str) -> tuple[int, float]:
    """``text`` as (whole seconds since the Unix epoch, UTC; fraction of a second)."""
    s = text.strip()
    m = _DATETIME.fullmatch(s)
    if m is None:  # other ISO 8601 spellings Python knows (e.g. basic format)
        dt = datetime.fromisoformat(s)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        whole = math.floor(dt.replace(microsecond=0).timestamp())
        return whole, dt.microsecond / 1e6
    y, mo, d, hh, mi, ss, digits, zone = m.groups()
    hour, minute, second = int(hh or 0), int(mi or 0), int(ss or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"time of day out of range in {s!r}")
    days = date(int(y), int(mo), int(d)).toordinal() - _EPOCH_ORDINAL
    offset = 0
    if zone and zone.upper() != "Z":
        sign = -1 if zone[0] == "-" else 1
        z = zone[1:].replace(":", "")
        zone_h, zone_m = int(z[:2]), int(z[2:4] or 0)
        if zone_h * 60 + zone_m > 14 * 60 or zone_m > 59:  # UTC−12:00 … UTC+14:00 exist
            raise ValueError(f"zone offset {zone} beyond ±14:00 in {s!r}")
        offset = sign * (zone_h * 3600 + zone_m * 60)
    whole = days * 86400 + hour * 3600 + minute * 60 + second - offset
    frac = int(digits) / 10 ** len(digits) if digits else 0.0
    return whole, frac


_COUNT = f"a token count (a whole number up to {MAX_REQUEST_TOKENS:,})"


def _bounded(n: int) -> int:
    if n > MAX_REQUEST_TOKENS:
        raise ValueError(f"{n} is more than {MAX_REQUEST_TOKENS:,} tokens")
    return n


def _parse_count(text: str) -> int | None:
    """A token count from a table cell; None when the cell is empty or NaN; ValueError when
    it is no whole number or above :data:`MAX_REQUEST_TOKENS`."""
    s = text.strip()
    if s.lower() in _MISSING:
        return None
    try:
        return _bounded(int(s))
    except ValueError:
        value = float(s)  # "374.0" from tools that wrote an int column as float
    if math.isnan(value):
        return None
    if not value.is_integer():
        raise ValueError(f"{s!r} is not a whole number")
    return _bounded(int(value))


def _parse_number(text: str) -> float:
    value = float(text.strip())
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not finite")
    return value


# --- dropping rows ------------------------------------------------------------------------------


def _drop_reason(fmt: str, n_in: int | None, n_out: int | None) -> str | None:
    if n_in is None:
        return "input tokens missing"
    if n_in <= 0:
        return "input tokens <= 0"
    if n_out is None:
        return "output tokens missing"
    if n_out <= 0:
        if fmt == "burstgpt" and n_out == 0:
            return "output tokens 0 (failed requests in BurstGPT)"
        return "output tokens <= 0"
    return None


def _finish(path: Path, fmt: str, arrival: Any, inp: Any, out: Any, *, per_second: float,
            rows_read: int, reasons: dict[str, int], rows_filtered: int = 0,
            label: Any = None, labels: tuple[str, ...] | None = None,
            prefix_hashes: list[tuple[int, ...]] | None = None,
            hash_block_tokens: int = 16, empty_hint: str = "") -> Trace:
    """Rebase to the first arrival, convert to seconds and wrap as a :class:`Trace`."""
    dropped = sum(reasons.values())
    reason = "; ".join(reasons)
    t = np.asarray(arrival, dtype=np.float64)
    if len(t) == 0:
        if rows_read == 0:
            raise NapkinError(f"trace: {path}: no data rows")
        if empty_hint:
            raise NapkinError(f"trace: {path}: {empty_hint}")
        raise NapkinError(
            f"trace: {path}: no requests left after dropping {dropped} of {rows_read} rows "
            f"({reason})"
        )
    with np.errstate(over="ignore"):  # an overflowing span is refused just below
        t = (t - t.min()) / per_second if per_second != 1.0 else t - t.min()
    if not np.isfinite(t.max()):
        raise NapkinError(f"trace: {path}: arrival times span more than a float holds "
                          f"(from {np.min(arrival):.4g} to {np.max(arrival):.4g})")
    requests = RequestSet.build(t, inp, out, label=label, labels=labels or (fmt,),
                                prefix_hashes=prefix_hashes,
                                hash_block_tokens=hash_block_tokens)
    return Trace(requests=requests, source=f"{path} ({fmt})", rows_read=rows_read,
                 rows_dropped=dropped, drop_reason=reason, rows_filtered=rows_filtered)


# --- CSV (azure, burstgpt, csv) -----------------------------------------------------------------


def _column_index(path: Path, fmt: str, header: list[str], name: str) -> int:
    try:
        return header.index(name)
    except ValueError:
        raise NapkinError(
            f"trace: {path}: missing column {name!r} for format {fmt!r} "
            f"(columns found: {', '.join(header)})"
        ) from None


def _read_csv(path: Path, fmt: str, arrival_col: str, input_col: str, output_col: str,
              time_unit: str, max_rows: int | None, model_column: str | None = None,
              model: str | None = None) -> Trace:
    """Read a CSV trace with a header row; ``time_unit`` is what the arrival column holds."""
    arrival: list[float] = []
    inp: list[int] = []
    out: list[int] = []
    label: list[int] = []
    label_index: dict[str, int] = {}
    models_seen: dict[str, None] = {}
    reasons: dict[str, int] = {}
    rows_read = filtered = 0
    clock = _Clock() if time_unit == "datetime" else None
    line = 0
    try:
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise NapkinError(f"trace: {path}: empty file (no header row)")
            header = [h.strip() for h in header]
            i_t = _column_index(path, fmt, header, arrival_col)
            i_in = _column_index(path, fmt, header, input_col)
            i_out = _column_index(path, fmt, header, output_col)
            i_model = None if model_column is None else _column_index(path, fmt, header,
                                                                        model_column)
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                if max_rows is not None and rows_read >= max_rows:
                    break
                rows_read += 1
                line = reader.line_num
                name = ""
                if i_model is not None:
                    name = row[i_model].strip() if i_model < len(row) else ""
                    models_seen.setdefault(name, None)
                    if model is not None and name != model:
                        filtered += 1
                        continue
                text = row[i_t] if i_t < len(row) else ""
                try:
                    t = clock.seconds(text) if clock is not None else _parse_number(text)
                except ValueError:
                    what = "a datetime" if clock is not None else f"a number ({time_unit})"
                    raise NapkinError(
                        f"trace: {path}:{line}: column {arrival_col!r}: cannot parse "
                        f"{_short(text)} as {what}"
                    ) from None
                counts = []
                for i, col in ((i_in, input_col), (i_out, output_col)):
                    text = row[i] if i < len(row) else ""
                    try:
                        counts.append(_parse_count(text))
                    except ValueError:
                        raise NapkinError(
                            f"trace: {path}:{line}: column {col!r}: cannot parse {_short(text)} as "
                            f"{_COUNT}"
                        ) from None
                n_in, n_out = counts
                reason = _drop_reason(fmt, n_in, n_out)
                if reason is not None:
                    reasons[reason] = reasons.get(reason, 0) + 1
                    continue
                arrival.append(t)
                inp.append(n_in)  # type: ignore[arg-type]
                out.append(n_out)  # type: ignore[arg-type]
                if i_model is not None:
                    label.append(label_index.setdefault(name, len(label_index)))
    except OSError as e:
        raise NapkinError(f"trace: cannot read {str(path)!r}: {e}") from None
    except UnicodeDecodeError as e:
        raise NapkinError(f"trace: {path}: not UTF-8 text near line {line + 1} ({e})") from None
    except csv.Error as e:
        raise NapkinError(f"trace: {path}:{line + 1}: malformed CSV ({e})") from None

    hint = ""
    if model is not None and rows_read and filtered == rows_read:
        hint = (f"no rows with Model {model!r} "
                f"(models found: {', '.join(repr(m) for m in models_seen)})")
    if i_model is None:
        return _finish(path, fmt, arrival, inp, out, per_second=_PER_SECOND.get(time_unit, 1.0),
                       rows_read=rows_read, reasons=reasons, empty_hint=hint)
    return _finish(path, fmt, arrival, inp, out, per_second=1.0, rows_read=rows_read,
                   reasons=reasons, rows_filtered=filtered, label=label,
                   labels=tuple(label_index), empty_hint=hint)


# --- Mooncake JSON Lines ------------------------------------------------------------------------


_MOONCAKE_FIELDS = ("timestamp", "input_length", "output_length")


def _json_count(path: Path, line: int, key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NapkinError(
            f"trace: {path}:{line}: field {key!r}: expected a token count, got {_short(value)}"
        )
    if isinstance(value, float) and math.isnan(value):
        return None
    if (isinstance(value, float) and not value.is_integer()) or value > MAX_REQUEST_TOKENS:
        raise NapkinError(f"trace: {path}:{line}: field {key!r}: {_short(value)} is not {_COUNT}")
    return int(value)


def _read_mooncake(path: Path, max_rows: int | None) -> Trace:
    """Read a Mooncake JSON Lines trace (timestamps in ms, 512-token hash blocks)."""
    arrival: list[float] = []
    inp: list[int] = []
    out: list[int] = []
    hashes: list[tuple[int, ...]] = []
    reasons: dict[str, int] = {}
    rows_read = 0
    line = 0
    try:
        with path.open(encoding="utf-8-sig") as f:
            for line, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                if max_rows is not None and rows_read >= max_rows:
                    break
                rows_read += 1
                try:
                    obj = json.loads(raw)
                except json.JSONDecodeError as e:
                    raise NapkinError(f"trace: {path}:{line}: not valid JSON ({e})") from None
                except RecursionError:
                    raise NapkinError(f"trace: {path}:{line}: nested too deeply to read "
                                      "(a trace line is one flat JSON object)") from None
                if not isinstance(obj, dict):
                    raise NapkinError(
                        f"trace: {path}:{line}: expected a JSON object, got {type(obj).__name__}"
                    )
                if rows_read == 1 or "timestamp" not in obj:
                    for key in _MOONCAKE_FIELDS:
                        if key not in obj:
                            raise NapkinError(
                                f"trace: {path}:{line}: missing field {key!r} for format "
                                f"'mooncake' (fields found: {', '.join(obj)})"
                            )
                ts = obj["timestamp"]
                if (isinstance(ts, bool) or not isinstance(ts, int | float)
                        or not math.isfinite(ts)):
                    raise NapkinError(
                        f"trace: {path}:{line}: field 'timestamp': cannot parse {ts!r} as "
                        "milliseconds"
                    )
                n_in = _json_count(path, line, "input_length", obj.get("input_length"))
                n_out = _json_count(path, line, "output_length", obj.get("output_length"))
                ids = obj.get("hash_ids", [])
                if not isinstance(ids, list) or not all(type(h) is int for h in ids):
                    raise NapkinError(
                        f"trace: {path}:{line}: field 'hash_ids': expected a list of integers"
                    )
                reason = _drop_reason("mooncake", n_in, n_out)
                if reason is not None:
                    reasons[reason] = reasons.get(reason, 0) + 1
                    continue
                arrival.append(float(ts))
                inp.append(n_in)  # type: ignore[arg-type]
                out.append(n_out)  # type: ignore[arg-type]
                hashes.append(tuple(ids))
    except OSError as e:
        raise NapkinError(f"trace: cannot read {str(path)!r}: {e}") from None
    except UnicodeDecodeError as e:
        raise NapkinError(f"trace: {path}: not UTF-8 text near line {line + 1} ({e})") from None
    return _finish(path, "mooncake", arrival, inp, out, per_second=1e3, rows_read=rows_read,
                   reasons=reasons, prefix_hashes=hashes,
                   hash_block_tokens=MOONCAKE_BLOCK_TOKENS)


# --- parquet ------------------------------------------------------------------------------------


def _read_parquet(path: Path, arrival_col: str, input_col: str, output_col: str,
                  time_unit: str, max_rows: int | None) -> Trace:
    """Read a parquet table with pyarrow (imported here, so napkin does not need it)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise NapkinError(
            "trace: format 'parquet' needs pyarrow: pip install pyarrow"
        ) from None
    try:
        pf = pq.ParquetFile(path)
        names = list(pf.schema_arrow.names)
        for col in (arrival_col, input_col, output_col):
            if col not in names:
                raise NapkinError(
                    f"trace: {path}: missing column {col!r} for format 'parquet' "
                    f"(columns found: {', '.join(names)})"
                )
        wanted = list(dict.fromkeys((arrival_col, input_col, output_col)))
        if max_rows is None:
            table = pf.read(columns=wanted)
        else:
            batches = []
            n = 0
            for batch in pf.iter_batches(batch_size=min(max_rows, 65536), columns=wanted):
                batches.append(batch)
                n += batch.num_rows
                if n >= max_rows:
                    break
            table = (pa.Table.from_batches(batches).slice(0, max_rows) if batches
                     else pf.read(columns=wanted))
    except NapkinError:
        raise
    except (OSError, pa.ArrowException) as e:
        raise NapkinError(f"trace: cannot read {str(path)!r} as parquet: {e}") from None

    rows = table.num_rows
    if rows == 0:
        raise NapkinError(f"trace: {path}: no data rows")
    arrival, per_second = _arrow_arrivals(pa, path, table.column(arrival_col), arrival_col,
                                          time_unit)
    n_in, miss_in = _arrow_counts(pa, path, table.column(input_col), input_col)
    n_out, miss_out = _arrow_counts(pa, path, table.column(output_col), output_col)
    masks = {
        "input tokens missing": miss_in,
        "input tokens <= 0": ~miss_in & (n_in <= 0),
        "output tokens missing": miss_out,
        "output tokens <= 0": ~miss_out & (n_out <= 0),
    }
    reasons: dict[str, int] = {}
    dropped = np.zeros(rows, dtype=bool)
    for reason, mask in masks.items():
        new = mask & ~dropped
        if new.any():
            reasons[reason] = int(new.sum())
            dropped |= new
    keep = ~dropped
    return _finish(path, "parquet", arrival[keep], n_in[keep], n_out[keep],
                   per_second=per_second, rows_read=rows, reasons=reasons)


def _arrow_arrivals(pa: Any, path: Path, col: Any, name: str,
                    time_unit: str) -> tuple[np.ndarray, float]:
    """Arrival values (rebase-ready float64) and the units per second to divide by."""
    typ = col.type
    nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if nulls.any():
        raise NapkinError(
            f"trace: {path}: row {int(np.argmax(nulls)) + 1}: column {name!r}: missing arrival"
        )
    if pa.types.is_timestamp(typ):
        if time_unit != "datetime":
            raise NapkinError(
                f"time_unit: column {name!r} holds timestamps ({typ}); use time_unit='datetime'"
            )
        ticks = col.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
        per_second = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}[typ.unit]
        return (ticks - ticks.min()).astype(np.float64), per_second
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        values = col.to_pylist()
        out = np.empty(len(values), dtype=np.float64)
        clock = _Clock() if time_unit == "datetime" else None
        for i, text in enumerate(values):
            try:
                out[i] = clock.seconds(text) if clock is not None else _parse_number(text)
            except ValueError:
                what = "a datetime" if clock is not None else f"a number ({time_unit})"
                raise NapkinError(
                    f"trace: {path}: row {i + 1}: column {name!r}: cannot parse {_short(text)} as "
                    f"{what}"
                ) from None
        return out, 1.0 if clock is not None else _PER_SECOND[time_unit]
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        if time_unit == "datetime":
            raise NapkinError(
                f"time_unit: column {name!r} holds numbers ({typ}), not datetimes; use "
                "time_unit 's', 'ms' or 'us'"
            )
        values = col.to_numpy(zero_copy_only=False)
        if pa.types.is_integer(typ):
            values = values.astype(np.int64)
            return (values - values.min()).astype(np.float64), _PER_SECOND[time_unit]
        values = values.astype(np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.argmax(bad))
            raise NapkinError(
                f"trace: {path}: row {i + 1}: column {name!r}: cannot parse {values[i]!r} as a "
                f"number ({time_unit})"
            )
        return values, _PER_SECOND[time_unit]
    raise NapkinError(
        f"trace: {path}: column {name!r} holds {typ}; expected numbers, datetime strings or "
        "timestamps"
    )


def _arrow_counts(pa: Any, path: Path, col: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Token counts as int64 and a mask of missing (null or NaN) cells."""
    typ = col.type
    missing = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_integer(typ):
        values = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if (values > MAX_REQUEST_TOKENS).any():
            i = int(np.argmax(values > MAX_REQUEST_TOKENS))
            raise NapkinError(
                f"trace: {path}: row {i + 1}: column {name!r}: {values[i]} is not {_COUNT}"
            )
        return values, missing
    if pa.types.is_floating(typ):
        values = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
        missing |= np.isnan(values)
        bad = ~missing & (~np.isfinite(values) | (values != np.floor(values))
                          | (values > MAX_REQUEST_TOKENS))
        if bad.any():
            i = int(np.argmax(bad))
            raise NapkinError(
                f"trace: {path}: row {i + 1}: column {name!r}: cannot parse {values[i]!r} as "
                f"{_COUNT}"
            )
        return np.where(missing, 0, values).astype(np.int64), missing
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        values = col.to_pylist()
        counts = np.zeros(len(values), dtype=np.int64)
        for i, text in enumerate(values):
            try:
                n = None if text is None else _parse_count(text)
            except ValueError:
                raise NapkinError(
                    f"trace: {path}: row {i + 1}: column {name!r}: cannot parse {_short(text)} as "
                    f"{_COUNT}"
                ) from None
            if n is None:
                missing[i] = True
            else:
                counts[i] = n
        return counts, missing
    raise NapkinError(
        f"trace: {path}: column {name!r} holds {typ}; expected token counts (integers)"
    )
