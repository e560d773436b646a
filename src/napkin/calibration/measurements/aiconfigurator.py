"""Reader of aiconfigurator's silicon-validation CSV (ai-dynamo/aiconfigurator's measured
sample: one row per engine run, ``silicon_ttft_ms``/``silicon_tpot_ms``), with the parallel
layout of its rows (:func:`silicon_layout`) and the weight and KV-cache formats they ran.
"""

import math
import re
from pathlib import Path

from napkin.calibration.inferencemax import launch_of
from napkin.calibration.measurements.catalog_ids import (
    catalog_gpu_id,
    model_ref,
    weight_format_name,
)
from napkin.calibration.measurements.fields import (
    MS,
    as_number,
    csv_rows,
    fail,
    is_missing,
    measurement_text,
    positive_float,
    positive_int,
    require_columns,
)
from napkin.calibration.measurements.records import Harness, Measurement
from napkin.calibration.protocol import PROTOCOLS
from napkin.catalog import accelerators
from napkin.catalog.checkpoints import checkpoint_int4, checkpoint_quantization, declares_fp8_kv
from napkin.specs.dtypes import SIXTEEN_BIT

AICONFIGURATOR_COLUMNS: tuple[str, ...] = (
    "id", "backend", "backend_version", "model_path", "system", "precision", "mode", "isl",
    "osl", "gemm_quant_mode", "batch_size", "tp_size", "pp_size", "silicon_ttft_ms",
    "silicon_tpot_ms",
)
AICONFIGURATOR_PARALLEL_COLUMNS: tuple[str, ...] = ("attention_dp_size", "moe_tp_size",
                                                    "moe_ep_size", "silicon_data_source")
"""Optional columns of the sample (newer snapshots): the parallel layout of MoE rows
(``moe_tp_size`` tells a database row's multiplied-out layout apart: :func:`silicon_layout`),
and where a row came from (``measured=`` the run's UTC time, which picks an InferenceMAX recipe)."""
MEASURED = re.compile(r"measured=(\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2})?)")
SILICON_CONCURRENCY = re.compile(r"(?:^|[;\s])silicon_concurrency=(\d+)")


def read_aiconfigurator_csv(path: str | Path) -> list[Measurement]:
    """Measurements from an aiconfigurator silicon-validation CSV.

    Columns (extra ones are ignored): ``id, backend, backend_version, model_path, system,
    precision, mode, isl, osl, gemm_quant_mode, batch_size, tp_size, pp_size, silicon_ttft_ms,
    silicon_tpot_ms``. Only aggregated serving is read: rows with ``mode`` other than ``agg``
    or ``pp_size`` other than 1 are skipped. The client concurrency of the closed loop and the
    layout are :func:`silicon_layout`'s (``batch_size`` is per attention-data-parallel rank);
    ``silicon_*_ms`` are the harness' mean TTFT/TPOT in ms (stored in seconds);
    the harness is unstated (a profile's protocol fills it in) except for the dated runs of
    :data:`INFERENCEMAX_ID`, which ran InferenceMAX's client;
    the weights are ``gemm_quant_mode`` (else ``precision``; empty → ``bf16``) through
    :func:`weight_format_name`, and the KV cache FP8 for InferenceMAX runs of FP8/FP4 weights
    (:data:`INFERENCEMAX_FP8_KV`), else BF16; ``system`` through :func:`catalog_gpu_id`,
    ``model_path`` through
    :func:`~napkin.calibration.measurements.catalog_ids.catalog_model_id`. ``source`` is
    ``<file name>:<id>``.
    Optional columns ``attention_dp_size`` and ``moe_ep_size`` (empty or 0: 1) give the
    attention data parallelism and the MoE expert parallelism of MoE rows; a replay refuses the
    layouts napkin does not model (:func:`napkin.validation.replay.engine_for`).
    """
    path = Path(path)
    header, rows = csv_rows(path, measurement_text(path))
    require_columns(path, header, AICONFIGURATOR_COLUMNS)
    out = []
    for line, row in rows:
        where = f"{path} line {line}"
        if row["mode"] != "agg" or positive_int(row["pp_size"], where, "pp_size") != 1:
            continue
        out.append(_aiconfigurator_row(path, where, row))
    return out


INFERENCEMAX_DATED = re.compile(r"^\d{4}_\d{2}_\d{2}_")
INFERENCEMAX_ID = re.compile(rf"{INFERENCEMAX_DATED.pattern}|_cfg\d+$")
"""Silicon-sample ids of InferenceMAX-protocol runs: dated (``2026_04_06_llama_3_1_70b_…``) or
from its results database (``dsr1_b200_sglang_fp8_agg_1024x1024_c4_cfg81``: a config id, with a
``workflow_run_id`` in ``silicon_data_source``), on InferenceMAX's grid (1k/1k, 1k/8k, 8k/1k at
concurrency 4–512)."""


INFERENCEMAX_FP8_KV = ("fp8", "nvfp4", "mxfp4", "mxfp4-w4a8", "mxfp4-w4a4")
"""Weight formats InferenceMAX serves with an FP8 KV cache: its scripts set
``kv-cache-dtype: fp8`` for vLLM (``benchmarks/70b_fp8_h200_slurm.sh``) and
``kv_cache_config: dtype: fp8`` for TensorRT-LLM (``benchmarks/70b_fp8_h200_trt_slurm.sh``)."""


TRTLLM_FP8_KV = ("fp8", "nvfp4")
"""Weight formats TensorRT-LLM rows of the sample run with an FP8 KV cache (and FP8 attention):
aiconfigurator, whose sample it is, models FP8 and NVFP4 checkpoints so
(``sdk/models/helpers.py``: quant_algo fp8, fp8_block or nvfp4 → ``kvcache_quant_mode`` and
``fmha_quant_mode`` fp8), and the rows agree: Qwen3-32B FP8 at TP 1, 64 clients of 4,096/256
tokens measured 1.64 s mean TTFT, which needs all 64 requests' 278k tokens of KV resident,
while a BF16 cache in what TensorRT-LLM leaves free holds 171k."""


def _aiconfigurator_kv(row_id: str, backend: str, weights: str, model: str) -> str:
    """The KV-cache format of a row: FP8 for dated InferenceMAX runs of low-precision weights
    (:data:`INFERENCEMAX_FP8_KV`), for TensorRT-LLM's FP8 and NVFP4 rows
    (:data:`TRTLLM_FP8_KV`) and for the NVFP4 rows of NVIDIA's checkpoints (their
    hf_quant_config.json declares ``kv_cache_quant_algo: FP8``, and aiconfigurator's
    ``sdk/models/helpers.py`` serves them so on every backend; gpt-oss's FP4 rows run its own
    MXFP4 checkpoint, which declares no KV format), else BF16 (the sample does not say)."""
    if INFERENCEMAX_DATED.match(row_id):  # database rows: by recipe, else as below
        return "fp8" if weights in INFERENCEMAX_FP8_KV else "bf16"
    if declares_fp8_kv(model, weights):
        return "fp8"
    return "fp8" if backend == "trtllm" and weights in TRTLLM_FP8_KV else "bf16"


def _aiconfigurator_harness(row_id: str, concurrency: int) -> Harness:
    """A silicon-sample row's harness: InferenceMAX's for its dated runs, else unstated."""
    h = Harness("closed_loop", concurrency=concurrency, stated=False)
    return PROTOCOLS["inferencemax"].harness(h) if INFERENCEMAX_ID.search(row_id) else h


FP4_WITHOUT_FP4_RATE = "mxfp4"
"""What an FP4 (W4A4) row runs as on a GPU with no FP4 tensor rate (Hopper): FP4 weights with
16-bit matmuls, W4A16 — vLLM's Marlin and TensorRT-LLM's Hopper MXFP4 MoE kernels; the
sample labels gpt-oss-120b's H100/H200 rows ``nvfp4`` by class only."""


MXFP4_ON_BLACKWELL = "mxfp4-w4a8"
"""What an FP4 row of an MXFP4 checkpoint (gpt-oss) runs as on a GPU with an FP4 rate: MXFP4
weights with MXFP8 activations, matmuls at the FP8 rate — TensorRT-LLM's only MoE path for
gpt-oss on Blackwell (its GPT-OSS deployment guide: B200/GB200/B300 activation MXFP8, weights
MXFP4, TRTLLM backend) and vLLM's under ``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1``, which
InferenceMAX's B200 scripts set from 2025-11 on."""


def _fp4_rate(gpu: str) -> bool | None:
    """Whether catalog GPU ``gpu`` has an FP4 tensor rate; None for a GPU napkin does not know
    (left to fail where it is replayed)."""
    acc = accelerators().get(gpu)
    return None if acc is None else "fp4" in acc.dense_flops_per_s


def _runnable_weights(weights: str, gpu: str) -> str:
    """``weights``, or :data:`FP4_WITHOUT_FP4_RATE` for a W4A4 format on a catalog GPU that has
    no FP4 rate."""
    w4a4 = weights in ("nvfp4", "mxfp4-w4a4")
    return FP4_WITHOUT_FP4_RATE if w4a4 and _fp4_rate(gpu) is False else weights


def _mxfp4_path(gpu: str) -> str:
    """What a quantized row of an MXFP4 checkpoint (gpt-oss, which has no other form) ran on
    ``gpu``, whatever the row's label says: :data:`MXFP4_ON_BLACKWELL` on a GPU with an FP4
    rate, else :data:`FP4_WITHOUT_FP4_RATE`. The sample labels gpt-oss's TensorRT-LLM H100 rows
    ``fp8`` (gemm and MoE), but the checkpoint has no FP8 experts, and TensorRT-LLM runs it on
    Hopper as BF16 activations × MXFP4 weights on its TRITON MoE backend (the support matrix
    of its GPT-OSS deployment guide; the perf-overview's notes: "GPT-OSS on Hopper: kv dtype
    auto, MoE backend TRITON"): those rows read as W4A16 with the checkpoint's own KV cache
    (BF16; it declares none)."""
    return MXFP4_ON_BLACKWELL if _fp4_rate(gpu) else FP4_WITHOUT_FP4_RATE


def _aiconfigurator_row(path: Path, where: str, row: dict[str, str]) -> Measurement:
    """One ``agg``, ``pp_size = 1`` row of an aiconfigurator CSV."""
    if not row["backend"]:
        fail(where, "backend", "empty")
    # gemm_quant_mode names the format (nvfp4, fp8_block); precision only its class (fp4)
    gpu = catalog_gpu_id(row["system"])
    weights = _runnable_weights(weight_format_name(row["gemm_quant_mode"] or row["precision"]),
                                gpu)
    model = model_ref(row["model_path"], where, "model_path")
    if weights == "int4-wo":  # weight-only INT4: the checkpoint's own grouping
        weights = checkpoint_int4(model)
    if checkpoint_quantization(model).get("quant_method") == "mxfp4" \
            and weights not in SIXTEEN_BIT:
        weights = _mxfp4_path(gpu)
    isl, osl = (positive_int(row["isl"], where, "isl"), positive_int(row["osl"], where, "osl"))
    concurrency, tp, attention_dp, expert_parallel = silicon_layout(row, where)
    kv = _aiconfigurator_kv(row["id"], row["backend"], weights, model)
    launch = None
    if INFERENCEMAX_ID.search(row["id"]):
        when = MEASURED.search(row.get("silicon_data_source") or "")
        recipe = launch_of(row["backend"], model, gpu, weights, row["backend_version"], tp,
                           concurrency, isl, osl, when.group(1) if when else "")
        if recipe is not None:
            launch, kv = recipe
    return Measurement(
        source=f"{path.name}:{row['id'] or where.rpartition(' ')[2]}",
        backend=row["backend"],
        backend_version=row["backend_version"],
        model=model,
        gpu=gpu,
        weights=weights,
        kv_dtype=kv,
        tensor_parallel=tp,
        input_tokens=isl,
        output_tokens=osl,
        harness=_aiconfigurator_harness(row["id"], concurrency),
        mean_ttft_s=positive_float(row["silicon_ttft_ms"], where, "silicon_ttft_ms") * MS,
        mean_tpot_s=positive_float(row["silicon_tpot_ms"], where, "silicon_tpot_ms") * MS,
        extra={"gemm_quant_mode": row["gemm_quant_mode"]} if row["gemm_quant_mode"] else {},
        expert_parallel_size=expert_parallel,
        attention_data_parallel=attention_dp,
        launch=launch,
    )


INFERENCEMAX_LAYOUT = re.compile(r"_c(\d+)_tp(\d+)(?:_\d+)?_ep(\d+|none)")
"""A dated InferenceMAX id's concurrency, GPUs (InferenceMAX's ``tp``) and expert-parallel
size: ``…_c32_tp4_ep4_1322``, ``…_c8_tp8_0_ep1_0_30``."""


def silicon_layout(row: dict[str, str], where: str) -> tuple[int, int, int, int]:
    """(clients, attention TP, attention DP, EP size) of an aiconfigurator row.

    The sample's export of 2026-04-06 and its database dump write a run's layout multiplied
    out: InferenceMAX's ``tp 8, ep 8`` on one 8-GPU B200 as ``tp_size`` 64, ``moe_tp_size`` 8,
    ``moe_ep_size`` 8, and vLLM's ``tp 4, ep 4`` with data-parallel attention as ``tp_size`` 4,
    ``attention_dp_size`` 4, ``moe_ep_size`` 16 — 64 and 16 GPUs a replica where the run had 8
    and 4 (its ``tp4 ep4`` MiniMax-M2.5 runs on H100 with and without attention DP have the
    same TPOT at the same concurrency). A dated InferenceMAX id states the run itself: its
    ``c``, ``tp`` (the GPUs) and ``ep``; with ``attention_dp_size`` > 1 the GPUs are attention-DP
    ranks of one GPU each (TensorRT-LLM ``enable_attention_dp``, SGLang ``--dp``) — but not for
    vLLM: no single-node vLLM entry of InferenceX's ``.github/configs/nvidia-master.yaml`` set
    ``dp-attn`` before 9 April 2026 (the sample's runs are older), its scripts pass
    ``--tensor-parallel-size`` with ``--enable-expert-parallel`` only, and the 2026-04-06 export
    writes those ``tp 4, ep 4`` runs as ``attention_dp_size`` 4, ``moe_ep_size`` 16 where the
    2026-03-25 export of the same configuration wrote 1 and 4. A database row (``…_cfg201``)
    whose columns are squared — ``moe_tp_size`` = ``moe_ep_size`` = e > 1 and ``tp_size ×
    attention_dp_size`` = e² — ran on e GPUs with EP e.
    Other rows: :func:`clients_and_layout` and the ``moe_ep_size`` column."""
    ep = _optional_size(row.get("moe_ep_size"), where, "moe_ep_size")
    dp = _optional_size(row.get("attention_dp_size"), where, "attention_dp_size")
    stated = INFERENCEMAX_LAYOUT.search(row["id"]) if INFERENCEMAX_DATED.match(row["id"]) \
        else None
    if stated:
        clients, gpus = int(stated.group(1)), int(stated.group(2))
        experts = 1 if stated.group(3) == "none" else int(stated.group(3))
        if clients >= 1 and gpus >= 1 and experts >= 1:
            data_parallel = dp > 1 and row["backend"] != "vllm"
            return (clients, 1, gpus, experts) if data_parallel else (clients, gpus, 1, experts)
    moe_tp = _optional_size(row.get("moe_tp_size"), where, "moe_tp_size")
    tp = positive_int(row["tp_size"], where, "tp_size")
    if row["id"].rpartition("_")[2].startswith("cfg") and moe_tp == ep > 1 and tp * dp == ep * ep:
        batch = positive_int(row["batch_size"], where, "batch_size")
        found = SILICON_CONCURRENCY.search(row.get("silicon_data_source") or "")
        clients = int(found.group(1)) if found else batch * (ep if dp > 1 else 1)
        return (clients, 1, ep, ep) if dp > 1 else (clients, ep, 1, ep)
    clients, tp, dp = clients_and_layout(row, where)
    return clients, tp, dp, ep


def clients_and_layout(row: dict[str, str], where: str) -> tuple[int, int, int]:
    """The clients of an aiconfigurator row's closed loop, its attention tensor parallelism
    and its attention data parallelism (napkin's ``tensor_parallel`` × ``attention_dp`` GPUs).

    aiconfigurator's ``batch_size`` is per attention-data-parallel rank (its ``global_bs = bs ×
    attention_dp_size`` is the concurrency, ``sdk/backends/base_backend.py``), and the sample's
    ``silicon_data_source`` states the measured concurrency (``silicon_concurrency=N``): its 168
    aggregated rows with attention DP state ``batch_size × attention_dp_size`` (an InferenceMAX
    ``c32`` over DP 4 lists ``batch_size`` 8). 21 rows state ``batch_size × tp_size`` with no
    attention DP in the column (TensorRT-LLM runs with ``enable_attention_dp``, DP = TP: a
    ``c224`` at TP 4 lists 56): they ran ``tp_size`` attention-DP ranks of one GPU each. A row
    whose stated concurrency is its ``batch_size`` keeps that; the 8 other statements, all
    TensorRT-LLM Qwen3-32B rows (one states 416 beside a ``batch_size`` of 13 and a 0.7 s TTFT
    for 15,000-token prompts, which 416 clients could not see), are not read, and the product
    stands, as it does without one. (Dated InferenceMAX ids and squared database rows are read
    by :func:`silicon_layout` first.)"""
    batch = positive_int(row["batch_size"], where, "batch_size")
    dp = _optional_size(row.get("attention_dp_size"), where, "attention_dp_size")
    tp = positive_int(row["tp_size"], where, "tp_size")
    found = SILICON_CONCURRENCY.search(row.get("silicon_data_source") or "")
    stated = int(found.group(1)) if found else 0
    if dp == 1 and tp > 1 and stated == batch * tp:
        return stated, 1, tp
    if stated == batch:
        return batch, tp, dp
    return batch * dp, tp, dp


def _optional_size(value: str | None, where: str, column: str) -> int:
    """A parallel size from an optional column: empty, missing or 0 mean 1 (not used)."""
    if is_missing(value):
        return 1
    number = as_number(value)
    if (number is None or not math.isfinite(number) or number != int(number)
            or not 0 <= number <= 4096):
        fail(where, column, f"{value!r} is not a whole number in [0, 4096]")
    return max(int(number), 1)
