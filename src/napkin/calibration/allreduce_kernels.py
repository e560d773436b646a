"""The engines' all-reduce kernels on H100, timed alone: the latency a profile's ``allreduce``
term holds.

At tensor parallel 2 and above every step runs two all-reduces a layer, so the serving rows
cannot tell a fixed time per all-reduce (``allreduce``) from one per layer (``layer``): the two
columns are proportional. Held out by TP size, a refit without the TP-1 rows moved
TensorRT-LLM's 62 µs a layer into 29 µs per all-reduce, and its TP-1 rows, which run none, then
read 11 % fast in TPOT. The kernels' own timings settle it: ai-dynamo/aiconfigurator's
``systems/data/h100_sxm/comm/<engine>/<version>/custom_allreduce_perf.parquet`` (Apache-2.0;
``catalog/measurements/aiconfigurator_h100_allreduce.csv``): TensorRT-LLM 1.2.0rc5's all-reduce
and vLLM 0.14.0's custom all-reduce (under CUDA graphs and eagerly), BF16, 2, 4 and 8 H100 SXM
GPUs, 128 to 2^29 elements a message. Small messages take a flat 3.1–4.0 µs at every TP
(TensorRT-LLM), the time a step's all-reduce of a few decode tokens costs; past a few thousand
elements the bytes take over (the profile's ``allreduce_bytes``). :func:`allreduce_latency_s`
is the median over messages of at most :data:`SMALL_ELEMENTS`.
"""

from dataclasses import dataclass
from pathlib import Path
from statistics import median

from napkin.calibration.measurements.fields import csv_table, positive_float, positive_int
from napkin.catalog import measurement_file
from napkin.errors import require

TABLE = "aiconfigurator_h100_allreduce.csv"
COLUMNS = ("engine", "version", "kernel", "dtype", "gpus", "message_elements", "latency_ms")
SMALL_ELEMENTS = 4096
"""Messages up to this many elements (8 KiB in BF16: a decode step of a few tokens of a
1–4k-wide model) are latency-bound: their median time is the all-reduce's latency."""


@dataclass(frozen=True)
class AllreduceTiming:
    """One timed all-reduce: the engine's kernel over ``gpus`` GPUs of a ``message_elements``
    message, in seconds."""

    engine: str
    version: str
    kernel: str
    gpus: int
    message_elements: int
    latency_s: float


def read_allreduce_kernels(path: Path | None = None) -> list[AllreduceTiming]:
    """Rows of an all-reduce timing table (default: the shipped one); a malformed row is one
    error line naming the file, the line and the column."""
    source = measurement_file(TABLE) if path is None else path
    rows = []
    for line, r in csv_table(source, COLUMNS):
        where = f"{source} line {line}"
        gpus = positive_int(r["gpus"], where, "gpus")
        latency_s = positive_float(r["latency_ms"], where, "latency_ms") * 1e-3
        require(gpus >= 2 and latency_s < 1,
                f"{where}: gpus must be >= 2 and latency_ms below 1000")
        rows.append(AllreduceTiming(r["engine"], r["version"], r["kernel"], gpus,
                                    positive_int(r["message_elements"], where,
                                                 "message_elements"), latency_s))
    return rows


def allreduce_latency_s(rows: list[AllreduceTiming], kernel: str) -> float:
    """The median time of ``kernel``'s all-reduces of at most :data:`SMALL_ELEMENTS`
    elements, over every GPU count (seconds)."""
    small = [r.latency_s for r in rows if r.kernel == kernel
             and r.message_elements <= SMALL_ELEMENTS]
    require(len(small) > 0, f"kernel: no all-reduce of {kernel!r} up to {SMALL_ELEMENTS} "
                            f"elements (have: {', '.join(sorted({r.kernel for r in rows}))})")
    return median(small)
