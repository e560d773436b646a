"""What every trace reader shares: the :class:`Trace` it returns, which rows it drops and why,
and the arrivals it kept rebased to the first (:mod:`napkin.serving.traces`)."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from napkin.errors import NapkinError
from napkin.serving.requests import RequestSet


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


def drop_reason(fmt: str, n_in: int | None, n_out: int | None) -> str | None:
    """Why a row of format ``fmt`` with these input and output lengths is dropped; None: kept."""
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


def build_trace(path: Path, fmt: str, arrival: Any, inp: Any, out: Any, *, per_second: float,
                rows_read: int, reasons: dict[str, int], rows_filtered: int = 0,
                label: Any = None, labels: tuple[str, ...] | None = None,
                prefix_hashes: list[tuple[int, ...]] | None = None,
                hash_block_tokens: int = 16, empty_hint: str = "") -> Trace:
    """The kept rows' arrivals rebased to the first, converted to seconds (``per_second``
    units each) and wrapped as a :class:`Trace`; ``reasons``: rows dropped, by reason."""
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
