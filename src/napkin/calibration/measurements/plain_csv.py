"""Reader of napkin's plain measurement CSV: one measured benchmark per row, in napkin's own
column names (:func:`read_plain_csv` lists them).
"""

import contextlib
from pathlib import Path

from napkin.calibration.measurements.catalog_ids import (
    catalog_gpu_id,
    model_ref,
    weight_format_name,
)
from napkin.calibration.measurements.fields import (
    MS,
    csv_rows,
    fail,
    measurement_text,
    optional_float,
    positive_float,
    positive_int,
    require_columns,
    unit_fraction,
)
from napkin.calibration.measurements.records import Harness, Launch, Measurement
from napkin.specs.limits import MAX_CLIENTS

PLAIN_REQUIRED: tuple[str, ...] = (
    "backend", "model", "gpu", "weights", "tp", "input_tokens", "output_tokens", "harness",
    "load",
)
PLAIN_OPTIONAL: tuple[str, ...] = (
    "id", "backend_version", "kv_dtype", "num_requests", "warmup_requests", "range_ratio",
    "range_style", "ramp_s", "mean_ttft_ms", "mean_tpot_ms", "median_ttft_ms", "median_tpot_ms",
    "output_tokens_per_s", *(f"launch_{k}" for k in (
        "max_num_seqs", "max_num_batched_tokens", "memory_fraction", "chunked_prefill",
        "scheduler_recv_interval", "batch_wait_timeout_iters", "batch_wait_max_tokens_ratio")),
)


def read_plain_csv(path: str | Path) -> list[Measurement]:
    """Measurements from napkin's plain CSV: one measured benchmark per row.

    Required columns:

    ============== ===============================================================
    backend        the engine: ``vllm``, ``sglang``, ``trtllm`` …
    model          a catalog id (``qwen3-32b``), a Hugging Face id (``Qwen/Qwen3-32B``)
                   or a path to a ``config.json``
    gpu            a catalog GPU id (``h100-sxm``; ``h100_sxm`` is accepted)
    weights        a weight format (``bf16``, ``fp8``, ``int4-g128``, ``nvfp4`` …)
    tp             tensor-parallel size, integer ≥ 1
    input_tokens   prompt tokens per request, integer ≥ 1
    output_tokens  generated tokens per request, integer ≥ 1
    harness        ``closed_loop``, ``poisson`` or ``burst``
    load           closed_loop: client concurrency (integer ≥ 1); poisson: arrival rate
                   in requests/s (> 0); burst: empty (or the number of requests)
    ============== ===============================================================

    Optional columns (empty cell = not reported): ``id`` (the row's name in ``source``,
    default its line number), ``backend_version``, ``kv_dtype`` (default ``bf16``),
    ``num_requests`` (≥ 1), ``warmup_requests`` (≥ 0), ``range_ratio`` (in [0, 1]),
    ``range_style`` (``symmetric``: [(1−r)·L, (1+r)·L], the default; ``below``: [r·L, L]),
    ``ramp_s`` (≥ 0; empty: :class:`Harness`' default), ``mean_ttft_ms``, ``mean_tpot_ms``,
    ``median_ttft_ms``, ``median_tpot_ms`` (milliseconds, > 0; TPOT excludes the first token) and
    ``output_tokens_per_s`` (aggregate, > 0), and the server's launch flags where they differ
    from the engine's defaults (:class:`Launch`): ``launch_max_num_seqs``,
    ``launch_max_num_batched_tokens`` (integers ≥ 1), ``launch_memory_fraction`` (in (0, 1]),
    ``launch_chunked_prefill`` (``true``/``false``), ``launch_scheduler_recv_interval`` (SGLang,
    integer ≥ 1), ``launch_batch_wait_timeout_iters`` (TensorRT-LLM, integer ≥ 0) and
    ``launch_batch_wait_max_tokens_ratio`` (TensorRT-LLM, in [0, 1]). Any other column is an
    error. Lines are
    comma-separated with one header line, as written by ``csv``/spreadsheets (UTF-8)::

        backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,mean_ttft_ms
        vllm,qwen3-8b,h100-sxm,bf16,1,1024,128,closed_loop,16,84.1
        vllm,qwen3-8b,h100-sxm,bf16,1,1024,128,poisson,2.5,61.0
    """
    path = Path(path)
    header, rows = csv_rows(path, measurement_text(path))
    require_columns(path, header, PLAIN_REQUIRED)
    unknown = [c for c in header if c not in PLAIN_REQUIRED + PLAIN_OPTIONAL]
    if unknown:
        fail(str(path), "columns", f"unknown {', '.join(unknown)} (see read_plain_csv)")
    return [_plain_row(path, line, row) for line, row in rows]


def _non_negative(value: str, where: str, name: str, integer: bool) -> float:
    """An empty cell → 0; else a number ≥ 0 (an integer where ``integer``)."""
    with contextlib.suppress(ValueError):
        if not value.strip() or float(value) == 0:
            return 0
    return positive_int(value, where, name) if integer else positive_float(value, where, name)


def _plain_harness(row: dict[str, str], where: str) -> Harness:
    """The harness of a plain CSV row."""
    kind, load = row["harness"], row["load"]
    num = row.get("num_requests", "")
    common = {
        "num_requests": positive_int(num, where, "num_requests") if num else None,
        "warmup_requests": int(_non_negative(row.get("warmup_requests", ""), where,
                                             "warmup_requests", integer=True)),
        "range_ratio": unit_fraction(row.get("range_ratio"), where, "range_ratio"),
    }
    style = row.get("range_style", "").strip()
    if style:
        if style not in ("symmetric", "below"):
            fail(where, "range_style", f"{style!r} is not one of symmetric, below")
        common["range_style"] = style
    if row.get("ramp_s"):  # empty: the Harness default
        common["ramp_s"] = float(_non_negative(row["ramp_s"], where, "ramp_s", integer=False))
    if kind == "closed_loop":
        clients = positive_int(load, where, "load")
        if clients > MAX_CLIENTS:
            fail(where, "load", f"{clients:,} clients; a closed loop holds at most "
                                 f"{MAX_CLIENTS:,}")
        return Harness(kind, concurrency=clients, **common)
    if kind == "poisson":
        return Harness(kind, rate_per_s=positive_float(load, where, "load"), **common)
    if kind == "burst":
        if load and common["num_requests"] is None:
            common["num_requests"] = positive_int(load, where, "load")
        return Harness(kind, **common)
    fail(where, "harness", f"{kind!r} is not one of closed_loop, poisson, burst")


def _plain_row(path: Path, line: int, row: dict[str, str]) -> Measurement:
    """One row of a plain CSV."""
    where = f"{path} line {line}"
    for name in ("backend", "model", "gpu", "weights"):
        if not row[name]:
            fail(where, name, "empty")

    def ms(name: str) -> float | None:
        return optional_float(row.get(name), where, name, MS)

    return Measurement(
        source=f"{path.name}:{row.get('id') or line}",
        backend=row["backend"],
        backend_version=row.get("backend_version", ""),
        model=model_ref(row["model"], where, "model"),
        gpu=catalog_gpu_id(row["gpu"]),
        weights=weight_format_name(row["weights"]),
        tensor_parallel=positive_int(row["tp"], where, "tp"),
        input_tokens=positive_int(row["input_tokens"], where, "input_tokens"),
        output_tokens=positive_int(row["output_tokens"], where, "output_tokens"),
        harness=_plain_harness(row, where),
        kv_dtype=row.get("kv_dtype") or "bf16",
        mean_ttft_s=ms("mean_ttft_ms"),
        mean_tpot_s=ms("mean_tpot_ms"),
        median_ttft_s=ms("median_ttft_ms"),
        median_tpot_s=ms("median_tpot_ms"),
        output_tokens_per_s=optional_float(row.get("output_tokens_per_s"), where,
                                            "output_tokens_per_s"),
        launch=_plain_launch(row, where),
    )


def _plain_launch(row: dict[str, str], where: str) -> Launch | None:
    """The ``launch_*`` columns of a plain CSV row as a :class:`Launch` (None when all are
    empty); a flag of one engine on another's row is an error."""
    cells = {k.removeprefix("launch_"): v.strip() for k, v in row.items()
             if k.startswith("launch_") and v and v.strip()}
    if not cells:
        return None
    flags: dict[str, object] = {}
    for name in ("max_num_seqs", "max_num_batched_tokens", "scheduler_recv_interval"):
        if name in cells:
            flags[name] = positive_int(cells[name], where, f"launch_{name}")
    if "batch_wait_timeout_iters" in cells:
        flags["batch_wait_timeout_iters"] = int(_non_negative(
            cells["batch_wait_timeout_iters"], where, "launch_batch_wait_timeout_iters", True))
    if "batch_wait_max_tokens_ratio" in cells:
        flags["batch_wait_max_tokens_ratio"] = unit_fraction(
            cells["batch_wait_max_tokens_ratio"], where, "launch_batch_wait_max_tokens_ratio")
    if "memory_fraction" in cells:
        fraction = unit_fraction(cells["memory_fraction"], where, "launch_memory_fraction")
        if fraction <= 0:
            fail(where, "launch_memory_fraction", "must be in (0, 1]")
        flags["memory_fraction"] = fraction
    if "chunked_prefill" in cells:
        text = cells["chunked_prefill"].lower()
        if text not in ("true", "false", "1", "0"):
            fail(where, "launch_chunked_prefill", f"{cells['chunked_prefill']!r} is not true "
                  "or false")
        flags["chunked_prefill"] = text in ("true", "1")
    backend = row["backend"]
    if flags.get("scheduler_recv_interval", 1) != 1 and backend != "sglang":
        fail(where, "launch_scheduler_recv_interval", f"applies to backend sglang, not "
              f"{backend}")
    for name in ("batch_wait_timeout_iters", "batch_wait_max_tokens_ratio"):
        if flags.get(name) and backend != "trtllm":
            fail(where, f"launch_{name}", f"applies to backend trtllm, not {backend}")
    return Launch(**flags, source=f"{where} launch_* columns")  # type: ignore[arg-type]
