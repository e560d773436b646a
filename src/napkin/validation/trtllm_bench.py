"""The engine settings ``trtllm-bench throughput`` (TensorRT-LLM's offline benchmark, PyTorch
backend) runs with when the command gives no ``--max_batch_size`` / ``--max_num_tokens``, as
TensorRT-LLM's published perf-overview tables were run (``docs/source/developer-guide/
perf-overview.md``: ``trtllm-bench ... throughput --dataset ... --extra_llm_api_options``).

Source: NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/benchmark/utils/general.py`` (``get_settings``)
and ``tensorrt_llm/bench/tuning/heuristics.py`` (``calc_engine_setting``, ``finetune_setting``;
Apache-2.0). For a checkpoint whose quantization the heuristic tunes (none, FP8, FP8 block
scales, NVFP4) it sizes the batch to the requests whose ``ISL + OSL`` tokens fit the KV memory:

    KV GiB a token  = 2 · L · max(tp, kv_heads) · head_dim · kv_bytes / 2³⁰
                      (MLA: L · (kv_lora_rank + rope_dim) · kv_bytes / 2³⁰: the latent)
    memory          = device GiB · tp − checkpoint GiB          (attention DP: device GiB −
                                                                  checkpoint GiB / tp, per rank)
    requests        = memory · fraction / (KV GiB a token · (ISL + OSL))
    raw batch       = min(requests, 4096);  raw tokens = min(raw batch · (1 + ISL/OSL), 32768)
    max_batch_size  = max(64, 32⌈b/32⌉) below 256, 128⌈b/128⌉ below 1024, else 256⌈b/256⌉
    max_num_tokens  = max(2048, 256⌈t/256⌉) below 4096, 512⌈t/512⌉ below 8192, else 1024⌈t/1024⌉

Other checkpoints (gpt-oss's MXFP4) get TensorRT-LLM's ``TorchLlmArgs`` defaults, 2048 and 8192.
Chunked prefill is off unless the options turn it on, and then ``max_num_tokens`` is raised to
at least ``ISL + max_batch_size``. With attention data parallelism each rank schedules its own
batch of up to ``max_batch_size``.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from napkin.accounting.forward import Precision, weight_bytes
from napkin.calibration.measurements.fields import csv_table
from napkin.calibration.measurements.records import Harness, Launch, Measurement
from napkin.catalog import load_accelerator, load_model, measurement_file
from napkin.errors import NapkinError, require
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.units import GiB

TUNED_WEIGHTS = frozenset({"bf16", "fp16", "fp32", "fp8", "nvfp4"})
"""napkin weight formats whose TensorRT-LLM quantization the heuristic tunes (``TUNED_QUANTS``:
no quantization, FP8, FP8 block scales, NVFP4)."""
DEFAULT_SETTINGS = (2048, 8192)
"""``TorchLlmArgs`` defaults of ``max_batch_size`` and ``max_num_tokens``."""


@dataclass(frozen=True)
class BenchSettings:
    """What ``trtllm-bench`` runs with: per scheduling rank, a batch cap and a token budget."""

    max_batch_size: int
    max_num_tokens: int
    chunked_prefill: bool
    tuned: bool
    """False: the checkpoint's quantization is not tuned and the defaults apply."""
    kv_requests: float
    """Requests of ``ISL + OSL`` tokens the heuristic finds room for (0 when not tuned)."""


def finetune(requests: float, isl: int, osl: int) -> tuple[int, int]:
    """``finetune_setting`` (one pipeline stage, optimistic tuning): the batch cap and token
    budget for ``requests`` that fit the KV memory."""
    raw_bs = min(requests, 4096)
    raw_tokens = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_tokens < 4096:
        tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        tokens = 1024 * math.ceil(raw_tokens / 1024)
    return bs, tokens


def kv_gib_per_token(model: ModelSpec, precision: Precision, tp: int) -> float:
    """The heuristic's KV GiB a token over the whole tensor-parallel group: every KV head
    counted at least ``tp`` times (``max(tp, kv_heads)``), an MLA latent once."""
    kv = model.kv_bytes_per_token(precision.kv.bytes_per_element)
    attention = [g.block.attention for g in model.layer_groups]
    if all(a.kind == "mla" for a in attention):
        return kv / GiB
    kv_heads = max(a.num_kv_heads for a in attention)
    return kv * max(tp, kv_heads) / kv_heads / GiB


def bench_settings(model: ModelSpec, precision: Precision, acc: Accelerator, tp: int,
                   isl: int, osl: int, fraction: float = 0.95, attention_dp: bool = False,
                   chunked_prefill: bool = False) -> BenchSettings:
    """The settings of ``trtllm-bench throughput`` for a dataset of ``isl``/``osl`` tokens on
    ``tp`` GPUs at ``kv_cache_free_gpu_mem_fraction`` ``fraction`` (perf-overview: 0.95 "in
    many cases", the command's default 0.90); see the module docstring."""
    if precision.weights.name not in TUNED_WEIGHTS:
        bs, tokens = DEFAULT_SETTINGS
        requests, tuned = 0.0, False
    else:
        device_gib = (acc.device_memory_bytes or acc.memory_bytes) / GiB
        checkpoint_gib = weight_bytes(model, precision) / GiB
        memory = (device_gib - checkpoint_gib / tp if attention_dp
                  else device_gib * tp - checkpoint_gib)
        requests = max(memory, 0.0) * fraction / (kv_gib_per_token(model, precision, tp)
                                                   * (isl + osl))
        bs, tokens = finetune(requests, isl, osl)
        tuned = True
    if not chunked_prefill:
        tokens = max(tokens, isl + bs)
    return BenchSettings(bs, tokens, chunked_prefill, tuned, requests)


V017_TABLE = "trtllm_v0.17_throughput.csv"
"""TensorRT-LLM v0.17's published offline throughput (``catalog/measurements``)."""
V017_GPUS = {"H100-80GB": "h100-sxm", "H200-141GB": "h200", "L40S": "l40s",
             "A100-SXM4-80GB": "a100-80gb-sxm"}
"""The table's GPUs in the catalog (its GH200-480GB is the 96 GB HBM3 part, which is not)."""
V017_MODELS = {"LLaMA v3.1 8B": "llama-3.1-8b", "LLaMA v3.1 70B": "llama-3.1-70b",
               "LLaMA v3.1 405B": "llama-3.1-405b"}
V017_COLUMNS = ("model", "tp", "gpu", "precision", "isl", "osl", "value")
V017_REQUESTS = 1000
"""Requests a row's burst is replayed with (the table does not say)."""
V017_KV_FRACTION = 0.95


def v017_throughput_rows(path: Path | None = None,
                         requests: int = V017_REQUESTS) -> list[Measurement]:
    """The v0.17 table's rows of catalog GPUs as measurements: ``trtllm`` 0.17 (compiled
    engines), a burst of ``requests`` requests of the row's fixed lengths, the batch cap and
    token budget :func:`bench_settings` derives (``trtllm-bench build`` sizes its engine by the
    same heuristic), chunked prefill off, FP8 rows with an FP8 KV cache (``trtllm-bench build
    --quantization FP8`` quantizes the cache with the weights), FP16 rows (A100) BF16-sized;
    ``output_tokens_per_s`` the whole TP group's. A malformed row is one error line naming the
    file, the line and the column."""
    source = measurement_file(V017_TABLE) if path is None else path
    out = []
    for line, row in csv_table(source, V017_COLUMNS):
        gpu = V017_GPUS.get(row["gpu"])
        if gpu is None:
            continue
        where = f"{source} line {line}"
        require(row["model"] in V017_MODELS, f"{where}: model: {row['model']!r} not one of "
                f"{', '.join(V017_MODELS)}")
        try:
            tp, isl, osl = int(row["tp"]), int(row["isl"]), int(row["osl"])
            value = float(row["value"])
        except ValueError as e:
            raise NapkinError(f"{where}: tp, isl, osl and value must be numbers ({e})") from None
        require(tp >= 1 and isl >= 1 and osl >= 1 and 0 < value < float("inf"),
                f"{where}: tp, isl, osl and value must be positive (value finite)")
        model = V017_MODELS[row["model"]]
        weights = "fp8" if row["precision"] == "FP8" else "bf16"
        bench = bench_settings(load_model(model), Precision.of(weights, weights),
                               load_accelerator(gpu), tp, isl, osl, V017_KV_FRACTION)
        launch = Launch(bench.max_batch_size, bench.max_num_tokens, V017_KV_FRACTION,
                        chunked_prefill=False, source="trtllm-bench build heuristic")
        out.append(Measurement(f"{V017_TABLE}:{line}", "trtllm", "0.17", model, gpu, weights,
                               tp, isl, osl, Harness("burst", num_requests=requests),
                               kv_dtype=weights, output_tokens_per_s=value, launch=launch))
    return out
