"""Read a trace from a parquet table with pyarrow (imported when a trace needs it, so napkin
does not depend on it): the columns a generic ``parquet`` trace names
(:mod:`napkin.serving.traces`)."""

from pathlib import Path
from typing import Any

import numpy as np

from napkin.errors import NapkinError
from napkin.serving.requests import MAX_REQUEST_TOKENS
from napkin.serving.trace_cells import COUNT, PER_SECOND, Clock, parse_count, parse_number, short
from napkin.serving.trace_rows import Trace, build_trace


def read_parquet(path: Path, arrival_col: str, input_col: str, output_col: str,
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
    return build_trace(path, "parquet", arrival[keep], n_in[keep], n_out[keep],
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
        clock = Clock() if time_unit == "datetime" else None
        for i, text in enumerate(values):
            try:
                out[i] = clock.seconds(text) if clock is not None else parse_number(text)
            except ValueError:
                what = "a datetime" if clock is not None else f"a number ({time_unit})"
                raise NapkinError(
                    f"trace: {path}: row {i + 1}: column {name!r}: cannot parse {short(text)} as "
                    f"{what}"
                ) from None
        return out, 1.0 if clock is not None else PER_SECOND[time_unit]
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        if time_unit == "datetime":
            raise NapkinError(
                f"time_unit: column {name!r} holds numbers ({typ}), not datetimes; use "
                "time_unit 's', 'ms' or 'us'"
            )
        values = col.to_numpy(zero_copy_only=False)
        if pa.types.is_integer(typ):
            values = values.astype(np.int64)
            return (values - values.min()).astype(np.float64), PER_SECOND[time_unit]
        values = values.astype(np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.argmax(bad))
            raise NapkinError(
                f"trace: {path}: row {i + 1}: column {name!r}: cannot parse {values[i]!r} as a "
                f"number ({time_unit})"
            )
        return values, PER_SECOND[time_unit]
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
                f"trace: {path}: row {i + 1}: column {name!r}: {values[i]} is not {COUNT}"
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
                f"{COUNT}"
            )
        return np.where(missing, 0, values).astype(np.int64), missing
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        values = col.to_pylist()
        counts = np.zeros(len(values), dtype=np.int64)
        for i, text in enumerate(values):
            try:
                n = None if text is None else parse_count(text)
            except ValueError:
                raise NapkinError(
                    f"trace: {path}: row {i + 1}: column {name!r}: cannot parse {short(text)} as "
                    f"{COUNT}"
                ) from None
            if n is None:
                missing[i] = True
            else:
                counts[i] = n
        return counts, missing
    raise NapkinError(
        f"trace: {path}: column {name!r} holds {typ}; expected token counts (integers)"
    )
