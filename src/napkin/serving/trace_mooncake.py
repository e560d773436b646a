"""Read a Mooncake trace: JSON Lines with timestamps in milliseconds and the prompt's
512-token blocks named by hash ids (:mod:`napkin.serving.traces`)."""

import json
import math
from pathlib import Path
from typing import Any

from napkin.errors import NapkinError
from napkin.serving.requests import MAX_REQUEST_TOKENS
from napkin.serving.trace_cells import COUNT, short
from napkin.serving.trace_rows import Trace, build_trace, drop_reason

MOONCAKE_BLOCK_TOKENS = 512
"""Tokens per ``hash_ids`` entry in the Mooncake traces."""

_MOONCAKE_FIELDS = ("timestamp", "input_length", "output_length")


def _json_count(path: Path, line: int, key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NapkinError(
            f"trace: {path}:{line}: field {key!r}: expected a token count, got {short(value)}"
        )
    if isinstance(value, float) and math.isnan(value):
        return None
    if (isinstance(value, float) and not value.is_integer()) or value > MAX_REQUEST_TOKENS:
        raise NapkinError(f"trace: {path}:{line}: field {key!r}: {short(value)} is not {COUNT}")
    return int(value)


def read_mooncake(path: Path, max_rows: int | None) -> Trace:
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
                reason = drop_reason("mooncake", n_in, n_out)
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
    return build_trace(path, "mooncake", arrival, inp, out, per_second=1e3, rows_read=rows_read,
                   reasons=reasons, prefix_hashes=hashes,
                   hash_block_tokens=MOONCAKE_BLOCK_TOKENS)
