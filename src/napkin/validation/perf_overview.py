"""TensorRT-LLM's perf-overview H100 throughputs as measurements napkin replays: the shipped set
``trtllm-perf-overview`` (``catalog/measurements/trtllm_perf_overview_h100.csv``, NVIDIA/
TensorRT-LLM ``docs/source/developer-guide/perf-overview.md`` @03e27c7d, Apache-2.0).

Each row is ``trtllm-bench throughput`` (PyTorch backend, offline: every request queued at
once, fixed lengths) of one model in one layout on H100 SXM — gpt-oss-120b ``DEP4`` (attention
data parallel 4 with expert parallelism over the 4 GPUs), gpt-oss-20b TP 1, Qwen3-235B-A22B
``DEP8``, Llama-3.3-70B TP 2 — and its published figure is output tokens/s **per GPU**. As a
measurement it is a burst of the row's ``num_requests`` (1,000 where the table gives none) with
the batch cap and token budget ``trtllm-bench`` derives when given none
(:func:`~napkin.validation.trtllm_bench.bench_settings`, chunked prefill off, KV fraction
``kv_fraction``: the page's 0.95 "in many cases") and ``output_tokens_per_s`` the whole
layout's (per GPU × GPUs). KV cache: the FP8 checkpoints' in ``kv`` (default FP8: TensorRT-LLM's
benchmarking guide gives an FP8 checkpoint that names no KV quantization an FP8 cache);
gpt-oss's MXFP4 experts run W4A16 on Hopper (the TRITON MoE backend, BF16 activations) with
the page's "Hopper: use auto" KV cache, BF16. Llama-3.3-70B has Llama-3.1-70B's architecture.

No shipped profile is fitted on these rows: ``napkin validate trtllm-perf-overview`` scores
the shipped TensorRT-LLM profile on them as held out.
"""

from pathlib import Path

from napkin.accounting.forward import Precision
from napkin.calibration.measurements.fields import csv_table, positive_float, positive_int
from napkin.calibration.measurements.records import Harness, Launch, Measurement
from napkin.catalog import load_accelerator, load_model, measurement_file
from napkin.errors import NapkinError, require
from napkin.validation.trtllm_bench import bench_settings

PERF_OVERVIEW_TABLE = "trtllm_perf_overview_h100.csv"
PERF_OVERVIEW_COLUMNS = ("model", "gpu", "gpus", "parallelism", "isl", "osl", "num_requests",
                         "value")
PERF_OVERVIEW_MODELS = {"openai/gpt-oss-120b": "gpt-oss-120b", "openai/gpt-oss-20b": "gpt-oss-20b",
                        "Qwen/Qwen3-235B-A22B": "qwen3-235b-a22b",
                        "meta-llama/Llama-3.3-70B-Instruct": "llama-3.1-70b"}
"""The table's models as catalog ids (Llama-3.3-70B has Llama-3.1-70B's architecture)."""
PERF_OVERVIEW_WEIGHTS = {"gpt-oss-120b": "mxfp4", "gpt-oss-20b": "mxfp4"}
"""Weight formats other than FP8 (gpt-oss's MXFP4 checkpoints, whatever the table's column)."""
PERF_OVERVIEW_REQUESTS = 1000
"""Requests of a row whose ``num_requests`` is empty (the page's 1,000-token rows)."""
PERF_OVERVIEW_KV_FRACTION = 0.95


def layout_of(text: str) -> tuple[int, int, int]:
    """``DEP4`` → (tp 1, attention dp 4, ep 4); ``TP2`` → (2, 1, 1); anything else is refused."""
    for prefix in ("DEP", "TP"):
        digits = text[len(prefix):]
        if text.startswith(prefix) and digits.isdigit() and int(digits) >= 1:
            n = int(digits)
            return (1, n, n) if prefix == "DEP" else (n, 1, 1)
    raise NapkinError(f"parallelism: {text!r} is neither DEP<n> nor TP<n>")


def perf_overview_rows(path: Path | None = None, kv: str = "fp8",
                       kv_fraction: float = PERF_OVERVIEW_KV_FRACTION,
                       requests: int | None = None) -> list[Measurement]:
    """The table's rows as measurements (see the module docstring; ``requests`` replaces every
    row's count). A malformed row is one error line naming the file, the line and the field."""
    require(kv in ("fp8", "bf16"), f"kv: {kv!r} not one of fp8, bf16")
    require(0 < kv_fraction <= 1, f"kv_fraction: must be in (0, 1], got {kv_fraction!r}")
    require(requests is None or requests >= 1,
            f"requests: must be a whole number >= 1, got {requests!r}")
    source = measurement_file(PERF_OVERVIEW_TABLE) if path is None else path
    acc = load_accelerator("h100-sxm")
    out = []
    for line, row in csv_table(source, PERF_OVERVIEW_COLUMNS):
        where = f"{source} line {line}"
        model = PERF_OVERVIEW_MODELS.get(row["model"])
        require(model is not None, f"{where}: model: {row['model']!r} not one of "
                f"{', '.join(PERF_OVERVIEW_MODELS)}")
        require(row["gpu"] == "H100", f"{where}: gpu: {row['gpu']!r}; only H100 rows are read")
        try:
            tp, dp, ep = layout_of(row["parallelism"])
        except NapkinError as e:
            raise NapkinError(f"{where}: {e}") from None
        gpus = positive_int(row["gpus"], where, "gpus")
        isl, osl = positive_int(row["isl"], where, "isl"), positive_int(row["osl"], where, "osl")
        n = requests or (positive_int(row["num_requests"], where, "num_requests")
                         if row["num_requests"] else PERF_OVERVIEW_REQUESTS)
        tokens_per_gpu_s = positive_float(row["value"], where, "value")
        require(gpus == tp * dp, f"{where}: gpus: {gpus} is not the layout's {tp * dp}")
        weights = PERF_OVERVIEW_WEIGHTS.get(model, "fp8")
        kv_dtype = kv if weights == "fp8" else "bf16"
        bench = bench_settings(load_model(model), Precision.of(weights, kv_dtype), acc, gpus,
                               isl, osl, kv_fraction, attention_dp=dp > 1)
        launch = Launch(bench.max_batch_size, bench.max_num_tokens, kv_fraction,
                        chunked_prefill=False, source="trtllm-bench heuristic")
        out.append(Measurement(f"{PERF_OVERVIEW_TABLE}:{line}", "trtllm", "1.2", model,
                               "h100-sxm", weights, tp, isl, osl,
                               Harness("burst", num_requests=n), kv_dtype=kv_dtype,
                               output_tokens_per_s=tokens_per_gpu_s * gpus,
                               expert_parallel_size=ep, attention_data_parallel=dp,
                               launch=launch))
    return out
