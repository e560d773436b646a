"""Latency from a serving log: each request's arrival, first token, last token and output tokens.

Chapter 3.1.2: with t_a the arrival, t_1 the first output token and t_G the last of G,
``TTFT = t_1 − t_a``, ``TPOT = (t_G − t_1)/(G − 1)`` (G > 1; a one-token answer has none) and
``e2e = t_G − t_a``, each summarised by its mean and nearest-rank percentiles
(:func:`napkin.stats.nearest_rank`: the ⌈p/100·n⌉-th smallest).

Formats, told apart by their first character:

- CSV with a header naming the columns ``arrival_s``, ``first_token_s``, ``last_token_s``
  (seconds, any common origin: epoch or run start) and ``output_tokens`` (other columns are
  ignored, in any order; lines starting with ``#`` are comments);
- JSON lines (or one JSON array) of objects with those four keys;
- ``vllm bench serve --save-result --save-detailed`` JSON: one object with the per-request
  arrays ``ttfts`` (s), ``itls`` (each request's inter-token gaps, s) and ``output_lens``;
  times are then relative to each request's send (t_a = 0, t_1 = TTFT, t_G = TTFT + Σ ITL), and
  failed requests (an ``errors`` entry, or no output) are skipped.
"""

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from napkin.errors import NapkinError, require
from napkin.specs.files import read_user_text
from napkin.stats import nearest_rank

COLUMNS = ("arrival_s", "first_token_s", "last_token_s", "output_tokens")
"""The columns (CSV) or keys (JSON lines) of a request log."""
DEFAULT_PERCENTILES = (50.0, 90.0, 95.0, 99.0)


@dataclass(frozen=True)
class RequestTimes:
    """Per-request instants (s) and output token counts, one entry per logged request."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    last_token_s: np.ndarray
    output_tokens: np.ndarray
    skipped: int = 0
    """Requests of a vllm bench file left out as failed."""
    source: str = "log"
    """``log`` (CSV / JSON lines) or ``vllm-bench`` (times relative to each send)."""


@dataclass(frozen=True)
class MetricStats:
    """Mean and nearest-rank percentiles of one latency over ``count`` requests, seconds."""

    name: str
    count: int
    mean_s: float
    percentiles_s: tuple[tuple[float, float], ...]
    """(p, value) pairs, p in (0, 100]."""


MAX_OUTPUT_TOKENS = 10**9
"""Output tokens one logged request may have (far above any context; keeps counts integers)."""


def _number(value: Any, where: str, column: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise NapkinError(f"{where}: {column}: must be a number, got {value!r}") from None
    require(math.isfinite(x), f"{where}: {column}: must be finite, got {value!r}")
    return x


def _row(values: dict[str, Any], where: str) -> tuple[float, float, float, int]:
    """One request's (arrival, first, last, tokens), checked: t_a ≤ t_1 ≤ t_G, G ≥ 1."""
    missing = [c for c in COLUMNS if values.get(c) in (None, "")]
    require(not missing, f"{where}: {missing[0] if missing else ''}: missing; a request log "
                         f"needs {', '.join(COLUMNS)}")
    t_a, t_1, t_g = (_number(values[c], where, c) for c in COLUMNS[:3])
    g = _number(values["output_tokens"], where, "output_tokens")
    require(1 <= g <= MAX_OUTPUT_TOKENS and g == int(g),
            f"{where}: output_tokens: must be a whole number in [1, {MAX_OUTPUT_TOKENS:,}], "
            f"got {values['output_tokens']!r}")
    require(t_1 >= t_a, f"{where}: first_token_s: must be >= arrival_s ({t_a:g}), got {t_1:g}")
    require(t_g >= t_1,
            f"{where}: last_token_s: must be >= first_token_s ({t_1:g}), got {t_g:g}")
    require(math.isfinite(t_g - t_a),
            f"{where}: last_token_s: {t_g:g} − arrival_s {t_a:g} overflows a float")
    return t_a, t_1, t_g, int(g)


def _times(rows: list[tuple[float, float, float, int]], skipped: int = 0,
           source: str = "log") -> RequestTimes:
    cols = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    return RequestTimes(np.asarray(cols[0], float), np.asarray(cols[1], float),
                        np.asarray(cols[2], float), np.asarray(cols[3], np.int64), skipped,
                        source)


def _vllm_bench(doc: dict[str, Any], name: str) -> RequestTimes:
    """The per-request arrays of a ``vllm bench serve --save-detailed`` result."""
    ttfts, itls, lens = doc.get("ttfts"), doc.get("itls"), doc.get("output_lens")
    for key, value in (("ttfts", ttfts), ("itls", itls), ("output_lens", lens)):
        require(isinstance(value, list),
                f"{name}: {key}: a vllm bench result needs per-request arrays (run it with "
                "--save-result --save-detailed)")
    require(len(ttfts) == len(itls) == len(lens),
            f"{name}: ttfts, itls, output_lens: must have one entry per request, got "
            f"{len(ttfts)}, {len(itls)}, {len(lens)}")
    errors = doc.get("errors") or [""] * len(ttfts)
    rows, skipped = [], 0
    for i, (ttft, gaps, g, err) in enumerate(zip(ttfts, itls, lens, errors, strict=False)):
        if err or not g:
            skipped += 1
            continue
        where = f"{name} request {i}"
        first = _number(ttft, where, "ttfts")
        require(isinstance(gaps, list), f"{where}: itls: must be a list of seconds")
        last = first + sum(_number(x, where, "itls") for x in gaps)
        rows.append(_row({"arrival_s": 0.0, "first_token_s": first, "last_token_s": last,
                          "output_tokens": g}, where))
    return _times(rows, skipped, "vllm-bench")


def read_request_log(path: str | Path) -> RequestTimes:
    """The requests of a log file (see the module docstring for the formats)."""
    name = str(path)
    text = read_user_text(path, "log")
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = None  # JSON lines
        except RecursionError:
            raise NapkinError(f"{name}: nested too deeply to read") from None
        if isinstance(doc, dict) and "ttfts" in doc:
            return _vllm_bench(doc, name)
        records = doc if isinstance(doc, list) else [doc] if isinstance(doc, dict) else None
        numbered: list[tuple[int, Any]]
        if records is not None:
            numbered = list(enumerate(records, 1))
        else:
            numbered = []
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    numbered.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise NapkinError(f"{name} line {n}: not JSON ({e.msg})") from None
                except RecursionError:
                    raise NapkinError(f"{name} line {n}: nested too deeply to read") from None
        rows = []
        for n, rec in numbered:
            require(isinstance(rec, dict), f"{name} record {n}: must be an object with keys "
                                           f"{', '.join(COLUMNS)}")
            rows.append(_row(rec, f"{name} record {n}"))
        require(bool(rows), f"{name}: no requests")
        return _times(rows)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    try:
        cells = list(csv.reader(line for _, line in lines))
    except csv.Error as e:
        raise NapkinError(f"{name}: not a readable CSV ({e})") from None
    header = [h.strip() for h in cells[0]] if cells else []
    missing = [c for c in COLUMNS if c not in header]
    require(not missing, f"{name}: {missing[0] if missing else ''}: no such column; a CSV "
                         f"request log needs a header with {', '.join(COLUMNS)}")
    rows = [_row(dict(zip(header, cell, strict=False)), f"{name} line {n}")
            for (n, _), cell in zip(lines[1:], cells[1:], strict=True)]
    require(bool(rows), f"{name}: no requests")
    return _times(rows)


def check_percentiles(percentiles: tuple[float, ...]) -> None:
    require(len(percentiles) >= 1, "percentiles: give at least one")
    for p in percentiles:
        require(0 < p <= 100, f"percentiles: each must be in (0, 100], got {p:g}")


def stats(name: str, values: np.ndarray, percentiles: tuple[float, ...]) -> MetricStats:
    """Mean and nearest-rank percentiles of ``values`` (seconds); NaN when there are none."""
    ordered = np.sort(values)
    n = len(ordered)
    if n == 0:
        return MetricStats(name, 0, math.nan, tuple((p, math.nan) for p in percentiles))
    with np.errstate(over="ignore"):
        mean = float(ordered.mean())
    if not math.isfinite(mean):  # the sum overflowed; the mean of finite values cannot
        mean = float((ordered / n).sum())
    return MetricStats(name, n, mean,
                       tuple((p, float(ordered[nearest_rank(n, p / 100) - 1]))
                             for p in percentiles))


def latency_stats(times: RequestTimes, percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
                  ) -> tuple[MetricStats, MetricStats, MetricStats]:
    """TTFT, TPOT (requests with G > 1 only) and end-to-end latency of the logged requests."""
    from napkin.serving.metrics import RequestLatencies

    check_percentiles(percentiles)
    lat = RequestLatencies.of_times(times.arrival_s, times.first_token_s, times.last_token_s,
                                    times.output_tokens)
    multi = times.output_tokens > 1
    return (stats("ttft", lat.ttft_s, percentiles), stats("tpot", lat.tpot_s[multi], percentiles),
            stats("e2e", lat.e2e_s, percentiles))
