"""Read a trace written as CSV with a header row: Azure's and BurstGPT's columns, or the
columns a generic ``csv`` trace names (:mod:`napkin.serving.traces`)."""

import csv
from pathlib import Path

from napkin.errors import NapkinError
from napkin.serving.trace_cells import COUNT, PER_SECOND, Clock, parse_count, parse_number, short
from napkin.serving.trace_rows import Trace, build_trace, drop_reason


def _column_index(path: Path, fmt: str, header: list[str], name: str) -> int:
    try:
        return header.index(name)
    except ValueError:
        raise NapkinError(
            f"trace: {path}: missing column {name!r} for format {fmt!r} "
            f"(columns found: {', '.join(header)})"
        ) from None


def read_csv_trace(path: Path, fmt: str, arrival_col: str, input_col: str, output_col: str,
                   time_unit: str, max_rows: int | None, model_column: str | None = None,
                   model: str | None = None) -> Trace:
    """Read a CSV trace with a header row; ``time_unit`` is what the arrival column holds;
    ``model_column``: the column of each row's model (its label), ``model``: the one kept."""
    arrival: list[float] = []
    inp: list[int] = []
    out: list[int] = []
    label: list[int] = []
    label_index: dict[str, int] = {}
    models_seen: dict[str, None] = {}
    reasons: dict[str, int] = {}
    rows_read = filtered = 0
    clock = Clock() if time_unit == "datetime" else None
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
                    t = clock.seconds(text) if clock is not None else parse_number(text)
                except ValueError:
                    what = "a datetime" if clock is not None else f"a number ({time_unit})"
                    raise NapkinError(
                        f"trace: {path}:{line}: column {arrival_col!r}: cannot parse "
                        f"{short(text)} as {what}"
                    ) from None
                counts = []
                for i, col in ((i_in, input_col), (i_out, output_col)):
                    text = row[i] if i < len(row) else ""
                    try:
                        counts.append(parse_count(text))
                    except ValueError:
                        raise NapkinError(
                            f"trace: {path}:{line}: column {col!r}: cannot parse {short(text)} as "
                            f"{COUNT}"
                        ) from None
                n_in, n_out = counts
                reason = drop_reason(fmt, n_in, n_out)
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
        return build_trace(path, fmt, arrival, inp, out, per_second=PER_SECOND.get(time_unit, 1.0),
                       rows_read=rows_read, reasons=reasons, empty_hint=hint)
    return build_trace(path, fmt, arrival, inp, out, per_second=1.0, rows_read=rows_read,
                   reasons=reasons, rows_filtered=filtered, label=label,
                   labels=tuple(label_index), empty_hint=hint)
