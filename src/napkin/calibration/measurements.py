"""Measurements of real serving engines, as napkin replays them.

A :class:`Measurement` is one benchmark result: an engine (``backend``) serving a model on a
GPU at a tensor-parallel size and weight format, driven by a harness (:class:`Harness`: closed
loop at a concurrency, Poisson at a rate, or all requests at once), with the latencies the
harness reported. Readers for the formats users have live below
(:func:`read_measurements` picks one by content).
"""

import contextlib
import csv
import io
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, NoReturn

from napkin.catalog.checkpoints import checkpoint_int4, checkpoint_quantization
from napkin.errors import NapkinError
from napkin.specs.dtypes import SIXTEEN_BIT
from napkin.specs.files import read_text
from napkin.specs.limits import MAX_CLIENTS
from napkin.specs.releases import release
from napkin.specs.yaml_text import check_nesting

HarnessKind = Literal["closed_loop", "poisson", "burst"]
RangeStyle = Literal["symmetric", "below"]
"""How a benchmark's ``range_ratio`` spreads lengths (see :class:`Harness`)."""


@dataclass(frozen=True)
class Harness:
    """How the benchmark drove the engine.

    ``closed_loop``: ``concurrency`` clients, each sending its next request when the last one
    returned; ``poisson``: arrivals at ``rate_per_s``; ``burst``: every request at t = 0.
    ``num_requests`` counted requests (None: the replay's default, 8 rounds of the clients);
    ``warmup_requests`` sent first and excluded from the metrics; ``range_ratio`` r draws each
    length uniformly in [(1−r)·L, (1+r)·L] with ``range_style`` ``symmetric`` (``vllm bench
    serve --random-range-ratio``, vLLM ≥ 0.10) or in [r·L, L] with ``below`` (the older
    ``benchmark_serving.py``, SGLang's ``bench_serving``, InferenceMAX);
    ``ramp_s`` spreads the clients' first requests over [0, ramp_s]; None (the default)
    spreads them over ``ramp_cycles`` times one request's life (1: desynchronized clients,
    as in steady state; 0: all at once).
    """

    kind: HarnessKind = "closed_loop"
    concurrency: int | None = None
    rate_per_s: float | None = None
    num_requests: int | None = None
    warmup_requests: int = 0
    range_ratio: float = 0.0
    range_style: RangeStyle = "symmetric"
    ramp_s: float | None = None
    ramp_cycles: float = 1.0
    dispatch_intervals: float = 0.0
    """Mean completion intervals (request life / clients) the harness counts into each TTFT
    before the request is sent (:class:`~napkin.calibration.protocol.Protocol`)."""
    latency_s: float = 0.0
    """Fixed time the harness counts into each TTFT beyond the engine's (its client's own
    latency), seconds."""
    stated: bool = True
    """False: the source gives only the load (a silicon sample's concurrency); a profile's
    :class:`~napkin.calibration.protocol.Protocol` then says how the clients ran."""
    campaign: str = ""
    """The label of the profile's campaign whose protocol this harness was assumed from
    (:func:`~napkin.calibration.protocol.assume`); empty: its own or the default protocol."""


def version_at_least(version: str, floor: tuple[int, ...]) -> bool:
    """Whether a release string (``0.5.10.post1``) is ``floor`` or later; an empty or
    non-numeric one (``nightly-dev-…``) is not known to be
    (:func:`napkin.specs.releases.release`)."""
    parts = release(version) or ()
    return len(parts) >= len(floor) and parts[:len(floor)] >= floor


@dataclass(frozen=True)
class Launch:
    """Server flags a measured run was launched with where they differ from the engine's
    defaults (None: the default, :data:`napkin.validation.replay.BACKENDS`)."""

    max_num_seqs: int | None = None
    """vLLM ``--max-num-seqs``, SGLang ``--max-running-requests``, TensorRT-LLM
    ``max_batch_size``."""
    max_num_batched_tokens: int | None = None
    """vLLM ``--max-num-batched-tokens``, SGLang ``--chunked-prefill-size``, TensorRT-LLM
    ``max_num_tokens``."""
    memory_fraction: float | None = None
    """vLLM ``--gpu-memory-utilization``, SGLang ``--mem-fraction-static``, TensorRT-LLM
    ``kv_cache_free_gpu_memory_fraction``."""
    scheduler_recv_interval: int = 1
    """SGLang ``--scheduler-recv-interval``."""
    chunked_prefill: bool | None = None
    """Prompts split across steps (TensorRT-LLM ``enable_chunked_prefill``)."""
    batch_wait_timeout_iters: int = 0
    batch_wait_max_tokens_ratio: float = 0.0
    """TensorRT-LLM's batch waiting (:class:`napkin.serving.engine.EngineSpec`)."""
    source: str = ""
    """Where the flags are from (a launch script and its commit)."""


@dataclass(frozen=True)
class Measurement:
    """One measured row. Latencies in seconds; None where the source does not report one."""

    source: str
    """File and row (or benchmark id) it came from."""
    backend: str
    """``vllm``, ``trtllm``, ``sglang`` (or what the file says)."""
    backend_version: str
    model: str
    """A napkin catalog id (``qwen3-32b``) or a path to a config.json."""
    gpu: str
    """A napkin catalog id (``h100-sxm``)."""
    weights: str
    """A napkin weight format (``bf16``, ``fp8``, ``nvfp4`` …)."""
    tensor_parallel: int
    input_tokens: int
    output_tokens: int
    harness: Harness
    kv_dtype: str = "bf16"
    mean_ttft_s: float | None = None
    mean_tpot_s: float | None = None
    median_ttft_s: float | None = None
    median_tpot_s: float | None = None
    output_tokens_per_s: float | None = None
    extra: dict[str, str] = field(default_factory=dict)
    expert_parallel_size: int = 1
    """Expert-parallel groups of the replica's ``tensor_parallel × attention_data_parallel``
    ranks (1: every MoE layer tensor-parallel like the rest; all of them: whole experts spread
    over the ranks, napkin's ``engine.expert_parallel: true``; between: MoE TP × EP, each
    expert split over ``ranks / expert_parallel_size`` ranks)."""
    attention_data_parallel: int = 1
    """Attention replicated over this many data-parallel ranks (napkin models 1 only)."""
    launch: Launch | None = None
    """The server flags of the run where the source says (None: the engine's defaults)."""

    @property
    def group(self) -> tuple[str, str, int]:
        """The cross-validation group: (GPU, model, tensor-parallel size)."""
        return (self.gpu, self.model, self.tensor_parallel)

    def group_by(self, by: str) -> tuple[str | int, ...]:
        """The row's group under a :data:`GROUPINGS` key: ``group`` (GPU, model, TP), ``gpu``,
        ``engine`` (backend), ``version`` (backend and release), ``tp`` or ``model``."""
        return {"group": self.group, "gpu": (self.gpu,), "engine": (self.backend,),
                "version": (self.backend, self.backend_version or "unknown"),
                "tp": (self.tensor_parallel,), "model": (self.model,)}[by]


GROUPINGS = ("group", "gpu", "engine", "version", "tp", "model")
"""How validation groups rows (and, refitting, which rows a fold holds out together)."""


def group_label(by: str, g: tuple[str | int, ...]) -> str:
    """A group of :meth:`Measurement.group_by` in words."""
    if by == "group":
        return f"{g[1]} on {g[0]}, tp {g[2]}"
    if by == "tp":
        return f"tp {g[0]}"
    return " ".join(str(x) for x in g)


# --- Readers -------------------------------------------------------------------------------
#
# Every reader returns ``list[Measurement]`` and raises :class:`NapkinError` with one line
# ``<file>[ <where>]: <field>: <what is wrong>`` on bad input.

_GPU_ALIASES: dict[str, str] = {
    "h100-sxm": "h100-sxm",
    "h100-pcie": "h100-pcie",
    "h200-sxm": "h200",
    "h800-sxm": "h800",
    "b200-sxm": "b200",
    "b300-sxm": "b300",
    "a100-sxm": "a100-80gb-sxm",
    "a100-80gb-sxm": "a100-80gb-sxm",
    "l40s": "l40s",
    "rtx-pro-6000-server": "rtx-pro-6000",
    "rtxpro6000-blackwell-server": "rtx-pro-6000",
}

_WEIGHT_ALIASES: dict[str, str] = {
    "": "bf16",
    "auto": "bf16",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp8-block": "fp8",
    "fp8-static": "fp8",
    "fp8-dynamic": "fp8",
    "fp8-e4m3": "fp8",
    "w8a8": "int8",
    "int8-sq": "int8",
}

_MS = 1e-3


def catalog_gpu_id(system: str) -> str:
    """The napkin GPU id of a benchmark's system name (``h100_sxm`` → ``h100-sxm``).

    Underscores become hyphens; aiconfigurator's ``h200_sxm``, ``b200_sxm``, ``b300_sxm``,
    ``a100_sxm``, ``gb200*`` … map to the catalog ids (``h200``, ``b200``, ``b300``,
    ``a100-80gb-sxm``, ``gb200``).
    A name napkin does not know is returned hyphenated.
    """
    name = system.strip().lower().replace("_", "-")
    if name.startswith("gb200"):
        return "gb200"
    return _GPU_ALIASES.get(name, name)


def weight_format_name(precision: str) -> str:
    """The napkin weight format of a benchmark's precision (empty → ``bf16``).

    ``fp8_block``/``fp8_static`` → ``fp8``; ``w4a16*`` → ``int4-g128``; ``w8a8`` → ``int8``;
    other names (``nvfp4``, ``fp8``, ``int4-g128`` …) pass through lower-cased.
    """
    name = precision.strip().lower().replace("_", "-")
    if name.startswith("w4a16"):
        return "int4-g128"
    return _WEIGHT_ALIASES.get(name, name)


_QUANT_SUFFIXES = ("-fp8", "-nvfp4", "-fp4", "-mxfp4", "-fp8-dynamic", "-w8a8", "-awq",
                   "-gptq")
"""Suffixes of quantized checkpoints (``nvidia/Llama-3.1-8B-Instruct-FP8``): the same
architecture, whose precision the measurement's own column states."""


def _model_key(repo: str) -> str:
    """A repository id normalized for matching: lower case, no quantization suffix
    (:data:`_QUANT_SUFFIXES`), no ``-Instruct``, no ``Meta-``."""
    org, _, name = repo.strip().lower().rpartition("/")
    for suffix in _QUANT_SUFFIXES:
        name = name.removesuffix(suffix)
    name = name.removesuffix("-instruct").removeprefix("meta-")
    return f"{org}/{name}" if org else name


def _unique(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """``key → id`` for the keys that name exactly one id."""
    ids: dict[str, set[str]] = {}
    for key, model_id in pairs:
        ids.setdefault(key, set()).add(model_id)
    return {key: next(iter(v)) for key, v in ids.items() if len(v) == 1}


def _model_tables() -> tuple[dict[str, str], dict[str, str]]:
    """Catalog ids by normalized ``org/name`` and by normalized ``name`` alone."""
    from napkin.catalog import MODELS

    repos = [(m.hf_repo.split()[0], m.id) for m in MODELS]
    full = _unique([(_model_key(r), i) for r, i in repos])
    bare = _unique([(_model_key(r).rpartition("/")[2], i) for r, i in repos])
    return full, bare


def catalog_model_id(hf_id: str) -> str:
    """The napkin catalog id of a Hugging Face repository id (``Qwen/Qwen3-32B`` → ``qwen3-32b``).

    Matches the catalog's ``hf_repo`` case-insensitively, ignoring an ``-Instruct`` suffix and a
    ``Meta-`` name prefix (``meta-llama/Meta-Llama-3.1-8B-Instruct`` → ``llama-3.1-8b``); a
    catalog id is returned as is, and a local path matches by its last component
    (``/models/Qwen3-32B``). Unknown → :class:`NapkinError` pointing to ``napkin models``.
    """
    from napkin.catalog import MODELS

    ref = hf_id.strip()
    if ref.lower() in {m.id for m in MODELS}:
        return ref.lower()
    full, bare = _model_tables()
    key = _model_key(ref.rstrip("/"))
    found = full.get(key) or bare.get(key.rpartition("/")[2])
    if found is None:
        raise NapkinError(
            f"model: {hf_id!r} is not a catalog model; see `napkin models` for the ids "
            "(or give a path to a config.json)"
        )
    return found


def _model_ref(value: str, where: str, name: str) -> str:
    """A catalog id for a repository id or catalog id; a ``.json`` path is kept as is."""
    if value.strip().endswith(".json"):
        return value.strip()
    try:
        return catalog_model_id(value)
    except NapkinError as e:
        _fail(where, name, str(e).removeprefix("model: "))


# --- value checks ---


def _fail(where: str, name: str, message: str) -> NoReturn:
    """Raise the one-line error ``<where>: <name>: <message>``, the message cut to 300
    characters (it quotes a cell's value, which a file may make arbitrarily long)."""
    text = message if len(message) <= 300 else message[:297] + "..."
    raise NapkinError(f"{where}: {name}: {text}")


def _missing(value: object) -> bool:
    """Whether ``value`` is absent: None or a blank string."""
    return value is None or (isinstance(value, str) and not value.strip())


MAX_COUNT = 10**9
"""Largest integer a measurement field (tokens, concurrency, TP, requests) may hold."""


def _number(value: object) -> float | None:
    """``value`` as a float (numbers and numeric strings; not booleans), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return float(value.strip())
    return None


def positive_int(value: object, where: str, name: str) -> int:
    """``value`` as an integer in [1, 10⁹] (``"16"``, ``16`` and ``16.0`` are accepted)."""
    if _missing(value):
        _fail(where, name, "missing (an integer ≥ 1 is required)")
    number = _number(value)
    if (number is None or not math.isfinite(number) or number != int(number) or number < 1
            or number > MAX_COUNT):
        _fail(where, name, f"{value!r} is not an integer in [1, {MAX_COUNT:.0e}]")
    return int(number)


def positive_float(value: object, where: str, name: str) -> float:
    """``value`` as a finite number > 0 (NaN, inf, zero and negatives are rejected)."""
    if _missing(value):
        _fail(where, name, "missing (a finite positive number is required)")
    number = _number(value)
    if number is None or not math.isfinite(number) or number <= 0:
        _fail(where, name, f"{value!r} is not a finite positive number")
    return number


def _optional_float(value: object, where: str, name: str, scale: float = 1.0) -> float | None:
    """``None`` for a missing or empty value, else a finite positive number × ``scale``."""
    if _missing(value):
        return None
    return positive_float(value, where, name) * scale


def _fraction(value: object, where: str, name: str) -> float:
    """A number in [0, 1] (empty or missing → 0)."""
    if _missing(value):
        return 0.0
    number = -1.0
    with contextlib.suppress(TypeError, ValueError):
        number = float(value)  # type: ignore[arg-type]
    if not 0.0 <= number <= 1.0:
        _fail(where, name, f"{value!r} is not a number in [0, 1]")
    return number


def _mean_count(total: object, completed: int, where: str, name: str) -> int:
    """``total / completed`` rounded, at least 1."""
    return max(1, round(positive_float(total, where, name) / completed))


# --- files ---


MAX_MEASUREMENT_BYTES = 256 * 2**20
"""Largest measurement file read."""


def _read_text(path: Path) -> str:
    """The UTF-8 text of ``path`` (a byte-order mark is dropped): a regular file of at most
    :data:`MAX_MEASUREMENT_BYTES`."""
    try:
        return read_text(path, "measurements", MAX_MEASUREMENT_BYTES, "utf-8-sig")
    except FileNotFoundError:
        raise NapkinError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise NapkinError(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError as e:
        raise NapkinError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise NapkinError(f"{path}: cannot be read ({e.strerror})") from None


def _csv_rows(path: Path, text: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and ``(line number, row)`` pairs of a CSV text; ragged rows are errors."""
    try:
        reader = csv.DictReader(io.StringIO(text), restkey="\0extra")
        header = [h.strip() for h in reader.fieldnames or []]
        rows = []
        for row in reader:
            line = reader.line_num
            if "\0extra" in row:
                _fail(f"{path} line {line}", "row", f"more fields than the {len(header)} columns")
            rows.append((line, {k.strip(): (v or "").strip() for k, v in row.items()}))
    except csv.Error as e:
        raise NapkinError(f"{path}: not valid CSV ({e})") from None
    if not header:
        raise NapkinError(f"{path}: not valid CSV (no header line)")
    return header, rows


def csv_table(path: str | Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """The ``(line number, row)`` pairs of a CSV file holding at least ``columns``; an
    unreadable file, bad CSV, a ragged row or a missing column is one error line naming the
    file (and the line)."""
    path = Path(path)
    header, rows = _csv_rows(path, _read_text(path))
    _require_columns(path, header, columns)
    return rows


def _require_columns(path: Path, header: list[str], required: tuple[str, ...]) -> None:
    """Error naming the columns of ``required`` that ``header`` lacks."""
    missing = [c for c in required if c not in header]
    if missing:
        _fail(str(path), "columns", f"missing {', '.join(missing)}")


def _json_documents(path: Path, text: str) -> list[object]:
    """One JSON document, or one per non-empty line (JSON lines)."""
    check_nesting(text, str(path))
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as first:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise NapkinError(
                f"{path}: not valid JSON or JSON lines (line {first.lineno} column "
                f"{first.colno}: {first.msg})"
            ) from None


def _json_records(path: Path, docs: list[object]) -> list[dict]:
    """The objects of ``docs``, a list document contributing its elements."""
    records: list[object] = []
    for doc in docs:
        records.extend(doc if isinstance(doc, list) else [doc])
    for i, record in enumerate(records, 1):
        if not isinstance(record, dict):
            _fail(f"{path} result {i}", "result", f"expected a JSON object, got {record!r:.40}")
    if not records:
        raise NapkinError(f"{path}: no results in the file")
    return records  # type: ignore[return-value]


# --- aiconfigurator CSV ---

AICONFIGURATOR_COLUMNS: tuple[str, ...] = (
    "id", "backend", "backend_version", "model_path", "system", "precision", "mode", "isl",
    "osl", "gemm_quant_mode", "batch_size", "tp_size", "pp_size", "silicon_ttft_ms",
    "silicon_tpot_ms",
)
AICONFIGURATOR_PARALLEL_COLUMNS: tuple[str, ...] = ("attention_dp_size", "moe_ep_size",
                                                    "silicon_data_source")
"""Optional columns of the sample (newer snapshots): the parallel layout of MoE rows, and where
a row came from (``measured=`` the run's UTC time, which picks an InferenceMAX recipe)."""
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
    ``model_path`` through :func:`catalog_model_id`. ``source`` is ``<file name>:<id>``.
    Optional columns ``attention_dp_size`` and ``moe_ep_size`` (empty or 0: 1) give the
    attention data parallelism and the MoE expert parallelism of MoE rows; a replay refuses the
    layouts napkin does not model (:func:`napkin.validation.replay.engine_for`).
    """
    path = Path(path)
    header, rows = _csv_rows(path, _read_text(path))
    _require_columns(path, header, AICONFIGURATOR_COLUMNS)
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


def declares_fp8_kv(model: str, weights: str) -> bool:
    """Whether the checkpoint a row of ``weights`` ran declares an FP8 KV cache: NVIDIA's NVFP4
    releases (TensorRT Model Optimizer) do, in hf_quant_config.json's ``kv_cache_quant_algo:
    FP8``; gpt-oss's own MXFP4 checkpoint (also run as ``nvfp4`` by the sample) does not."""
    return weights == "nvfp4" and checkpoint_quantization(model).get("quant_method") != "mxfp4"


def _aiconfigurator_harness(row_id: str, concurrency: int) -> Harness:
    """A silicon-sample row's harness: InferenceMAX's for its dated runs, else unstated."""
    from napkin.calibration.protocol import PROTOCOLS  # protocol.py builds on this module

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
    from napkin.catalog import accelerators

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
        _fail(where, "backend", "empty")
    # gemm_quant_mode names the format (nvfp4, fp8_block); precision only its class (fp4)
    gpu = catalog_gpu_id(row["system"])
    weights = _runnable_weights(weight_format_name(row["gemm_quant_mode"] or row["precision"]),
                                gpu)
    model = _model_ref(row["model_path"], where, "model_path")
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
        from napkin.calibration.inferencemax import launch_of  # it builds on this module

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
        mean_ttft_s=positive_float(row["silicon_ttft_ms"], where, "silicon_ttft_ms") * _MS,
        mean_tpot_s=positive_float(row["silicon_tpot_ms"], where, "silicon_tpot_ms") * _MS,
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
    ranks of one GPU each (TensorRT-LLM ``enable_attention_dp``, vLLM ``--data-parallel-size``,
    SGLang ``--dp``). A database row (``…_cfg201``) whose columns are squared — ``moe_tp_size`` =
    ``moe_ep_size`` = e > 1 and ``tp_size × attention_dp_size`` = e² — ran on e GPUs with EP e.
    Other rows: :func:`clients_and_layout` and the ``moe_ep_size`` column."""
    ep = _optional_size(row.get("moe_ep_size"), where, "moe_ep_size")
    dp = _optional_size(row.get("attention_dp_size"), where, "attention_dp_size")
    stated = INFERENCEMAX_LAYOUT.search(row["id"]) if INFERENCEMAX_DATED.match(row["id"]) \
        else None
    if stated:
        clients, gpus = int(stated.group(1)), int(stated.group(2))
        experts = 1 if stated.group(3) == "none" else int(stated.group(3))
        if clients >= 1 and gpus >= 1 and experts >= 1:
            return (clients, 1, gpus, experts) if dp > 1 else (clients, gpus, 1, experts)
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
    if _missing(value):
        return 1
    number = _number(value)
    if (number is None or not math.isfinite(number) or number != int(number)
            or not 0 <= number <= 4096):
        _fail(where, column, f"{value!r} is not a whole number in [0, 4096]")
    return max(int(number), 1)


# --- vllm bench serve JSON ---


def read_vllm_bench_json(
    path: str | Path,
    *,
    backend: str = "vllm",
    gpu: str | None = None,
    model: str | None = None,
    tensor_parallel: int | None = None,
    weights: str | None = None,
) -> list[Measurement]:
    """Measurements from ``vllm bench serve --save-result`` JSON (one object, a list, or lines).

    Keys read (vLLM ``vllm/benchmarks/serve.py``, ``result_json``): ``completed``,
    ``total_input_tokens``, ``total_output_tokens``, ``num_prompts``, ``max_concurrency``,
    ``request_rate`` (a number or ``"inf"``), ``burstiness``, ``model_id``, ``mean_ttft_ms``,
    ``median_ttft_ms``, ``mean_tpot_ms``, ``median_tpot_ms``, ``output_throughput``; and the
    ``--metadata KEY=VALUE`` keys ``random_input_len``, ``random_output_len``,
    ``random_range_ratio``, ``gpu``, ``tensor_parallel``, ``weights``, ``kv_dtype``,
    ``backend_version`` where given. ``--append-result`` files are JSON lines.

    Harness: ``max_concurrency`` set → closed loop at it, every client starting at t = 0
    under ``request_rate`` inf (a finite ``request_rate`` is kept in ``extra``); else a finite
    ``request_rate`` → Poisson at that rate (``burstiness`` ≠ 1, gamma arrivals, is kept in
    ``extra``); else burst. Lengths: ``random_input_len`` /
    ``random_output_len`` if present, else ``total_*_tokens / completed`` rounded.

    The file names neither GPU nor parallelism nor weight format: the keywords give them
    (they win over metadata; default TP 1, ``bf16``); ``model`` (a catalog id, a Hugging Face
    id or a config.json path) overrides ``model_id``. ``backend`` is the engine; the file's
    own ``backend`` (the endpoint type, e.g. ``openai-chat``) goes to ``extra``.
    """
    path = Path(path)
    records = _json_records(path, _json_documents(path, _read_text(path)))
    defaults = _Overrides(backend, gpu, model, tensor_parallel, weights)
    return [_vllm_record(path, i, r, defaults) for i, r in enumerate(records, 1)]


@dataclass(frozen=True)
class _Overrides:
    """What the caller says about a benchmark file that does not say it itself."""

    backend: str
    gpu: str | None
    model: str | None
    tensor_parallel: int | None
    weights: str | None


def _pick(given: object, record: dict, key: str, default: object) -> object:
    """The caller's value, else the record's ``key``, else ``default``."""
    if given is not None:
        return given
    value = record.get(key)
    return default if value is None or value == "" else value


def _vllm_harness(record: dict, where: str) -> tuple[Harness, dict[str, str]]:
    """The harness of a vllm bench result and the ``extra`` notes on it."""
    extra: dict[str, str] = {}
    rate = record.get("request_rate")
    finite = rate is not None and str(rate).strip().lower() not in ("inf", "infinity")
    num = record.get("num_prompts")
    common = {
        "num_requests": None if num is None else positive_int(num, where, "num_prompts"),
        "range_ratio": _fraction(record.get("random_range_ratio"), where, "random_range_ratio"),
    }
    burstiness = record.get("burstiness")
    if finite and burstiness not in (None, 1, 1.0, "1", "1.0"):
        extra["burstiness"] = str(burstiness)
    if record.get("ramp_up_strategy"):
        extra["ramp_up_strategy"] = str(record["ramp_up_strategy"])
    if record.get("max_concurrency") is not None:
        concurrency = positive_int(record["max_concurrency"], where, "max_concurrency")
        if finite:
            extra["request_rate"] = str(rate)
        else:  # every client's first request at t = 0 (the semaphore admits C at once)
            common["ramp_s"] = 0.0
        return Harness("closed_loop", concurrency=concurrency, **common), extra
    if finite:
        rate_per_s = positive_float(rate, where, "request_rate")
        return Harness("poisson", rate_per_s=rate_per_s, **common), extra
    return Harness("burst", **common), extra


def _vllm_lengths(record: dict, where: str) -> tuple[int, int]:
    """Input and output tokens per request of a vllm bench result."""
    completed = positive_int(record.get("completed"), where, "completed")
    if record.get("random_input_len") is not None:
        isl = positive_int(record["random_input_len"], where, "random_input_len")
    else:
        isl = _mean_count(record.get("total_input_tokens"), completed, where,
                          "total_input_tokens")
    if record.get("random_output_len") is not None:
        osl = positive_int(record["random_output_len"], where, "random_output_len")
    else:
        osl = _mean_count(record.get("total_output_tokens"), completed, where,
                          "total_output_tokens")
    return isl, osl


def _vllm_record(path: Path, index: int, record: dict, given: _Overrides) -> Measurement:
    """One vllm bench result."""
    where = f"{path} result {index}"
    gpu = _pick(given.gpu, record, "gpu", None)
    if gpu is None:
        _fail(where, "gpu", "the file does not name the GPU; give it (--gpu)")
    model = _pick(given.model, record, "model_id", None)
    if model is None:
        _fail(where, "model_id", "missing; give the model (--model)")
    harness, extra = _vllm_harness(record, where)
    isl, osl = _vllm_lengths(record, where)
    extra |= {k: str(record[k]) for k in ("backend", "label", "date") if record.get(k)}
    return Measurement(
        source=f"{path.name}:{index}",
        backend=given.backend,
        backend_version=str(record.get("backend_version", "")),
        model=_model_ref(str(model), where, "model" if given.model else "model_id"),
        gpu=catalog_gpu_id(str(gpu)),
        weights=weight_format_name(str(_pick(given.weights, record, "weights", "bf16"))),
        tensor_parallel=positive_int(_pick(given.tensor_parallel, record, "tensor_parallel",
                                            1), where, "tensor_parallel"),
        input_tokens=isl,
        output_tokens=osl,
        harness=harness,
        kv_dtype=str(record.get("kv_dtype") or "bf16"),
        mean_ttft_s=_optional_float(record.get("mean_ttft_ms"), where, "mean_ttft_ms", _MS),
        mean_tpot_s=_optional_float(record.get("mean_tpot_ms"), where, "mean_tpot_ms", _MS),
        median_ttft_s=_optional_float(record.get("median_ttft_ms"), where, "median_ttft_ms",
                                      _MS),
        median_tpot_s=_optional_float(record.get("median_tpot_ms"), where, "median_tpot_ms",
                                      _MS),
        output_tokens_per_s=_optional_float(record.get("output_throughput"), where,
                                            "output_throughput"),
        extra=extra,
    )


# --- guidellm benchmark report JSON ---


def read_guidellm_json(
    path: str | Path,
    *,
    gpu: str | None = None,
    model: str | None = None,
    tensor_parallel: int = 1,
    weights: str = "bf16",
    backend: str = "vllm",
) -> list[Measurement]:
    """Measurements from a guidellm report (``guidellm benchmark --output-path report.json``).

    Follows ``GenerativeBenchmarksReport`` of guidellm 0.4-0.7 (``benchmarks[i].config.strategy``,
    ``benchmarks[i].config.backend.model``) and accepts 0.3 (``benchmarks[i].args.strategy``,
    ``benchmarks[i].worker.backend_model``); ``metrics`` are alike in both:
    ``time_to_first_token_ms``, ``inter_token_latency_ms``, ``prompt_token_count``,
    ``output_token_count``, ``output_tokens_per_second``, each ``successful.mean`` /
    ``successful.median``, and ``request_totals.successful``. TPOT is guidellm's
    ``inter_token_latency_ms`` (first token excluded, as vLLM's TPOT; guidellm weights its mean
    by output tokens − 1); guidellm's ``time_per_output_token_ms`` counts the first token too
    and is only kept in ``extra``.

    One Measurement per benchmark. Strategy ``type_``: ``synchronous`` → closed loop at 1;
    ``concurrent`` → closed loop at ``streams`` (a positive ``rampup_duration`` → ``ramp_s``);
    ``poisson`` and ``constant`` → Poisson at ``rate`` (``constant`` noted in ``extra``);
    ``throughput`` → burst, or a closed loop at its ``max_concurrency`` when one is set.
    Lengths are the rounded successful means. The report names no GPU, parallelism or weight
    format: the keywords give them; ``model`` overrides the backend's model name.
    """
    path = Path(path)
    docs = _json_documents(path, _read_text(path))
    given = _Overrides(backend, gpu, model, tensor_parallel, weights)
    return _guidellm_measurements(path, docs, given)


def _guidellm_measurements(path: Path, docs: list[object], given: _Overrides) -> list[Measurement]:
    """Every benchmark of the guidellm reports in ``docs``."""
    benchmarks: list[object] = []
    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            _fail(str(path), "benchmarks", "expected a report object with a benchmarks list")
        benchmarks.extend(doc["benchmarks"])
    if given.gpu is None:
        _fail(str(path), "gpu", "a guidellm report does not name the GPU; give it (--gpu)")
    return [_guidellm_benchmark(path, i, b, given) for i, b in enumerate(benchmarks)]


def _dig(obj: object, *keys: str) -> object:
    """``obj[k1][k2]…``, or None where a level is missing or not an object."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _guidellm_stat(metrics: object, name: str, stat: str) -> object:
    """``metrics[name].successful[stat]`` (None where absent)."""
    return _dig(metrics, name, "successful", stat)


def _guidellm_harness(
    strategy: object, where: str, field_: str
) -> tuple[Harness, dict[str, str]]:
    """The harness of a guidellm scheduling strategy (at ``field_``) and ``extra`` notes."""
    kind = _dig(strategy, "type_")
    if not isinstance(strategy, dict) or not isinstance(kind, str):
        _fail(where, f"{field_}.type_", "missing")
    extra = {"strategy": kind}
    ramp: dict[str, float] = {}  # no ramp given: the Harness default
    if strategy.get("rampup_duration"):
        ramp["ramp_s"] = positive_float(strategy["rampup_duration"], where,
                                         f"{field_}.rampup_duration")
    if kind == "synchronous":
        return Harness("closed_loop", concurrency=1), extra
    if kind == "concurrent":
        streams = positive_int(strategy.get("streams"), where, f"{field_}.streams")
        return Harness("closed_loop", concurrency=streams, **ramp), extra
    if kind in ("poisson", "constant"):
        rate = positive_float(strategy.get("rate"), where, f"{field_}.rate")
        return Harness("poisson", rate_per_s=rate), extra
    if kind == "throughput":
        cap = strategy.get("max_concurrency")
        if cap is None:
            return Harness("burst"), extra
        limit = positive_int(cap, where, f"{field_}.max_concurrency")
        return Harness("closed_loop", concurrency=limit, **ramp), extra
    _fail(where, f"{field_}.type_", f"{kind!r} is not one of synchronous, concurrent, "
          "throughput, constant, poisson")


def _guidellm_model(bench: dict, given: _Overrides, where: str) -> str:
    """The catalog model of a guidellm benchmark (the caller's ``model`` wins)."""
    if given.model:
        return _model_ref(given.model, where, "model")
    for keys in (("config", "backend", "model"), ("worker", "backend_model")):
        name = _dig(bench, *keys)
        if isinstance(name, str) and name:
            return _model_ref(name, where, ".".join(keys))
    _fail(where, "config.backend.model", "missing; give the model (--model)")


def _guidellm_benchmark(path: Path, index: int, bench: object, given: _Overrides) -> Measurement:
    """One benchmark of a guidellm report."""
    where = f"{path} benchmarks[{index}]"
    if not isinstance(bench, dict):
        _fail(where, "benchmark", "expected a JSON object")
    field_ = "args.strategy" if "args" in bench and "config" not in bench else "config.strategy"
    harness, extra = _guidellm_harness(_dig(bench, *field_.split(".")), where, field_)
    metrics = bench.get("metrics")
    totals = _dig(metrics, "request_totals", "successful")
    tpot_incl_first = _guidellm_stat(metrics, "time_per_output_token_ms", "mean")
    if tpot_incl_first is not None:
        extra["time_per_output_token_ms"] = str(tpot_incl_first)
    if totals is not None:
        harness = replace(harness, num_requests=positive_int(
            totals, where, "metrics.request_totals.successful"))

    def stat(name: str, which: str = "mean", scale: float = 1.0) -> float | None:
        return _optional_float(_guidellm_stat(metrics, name, which), where,
                               f"metrics.{name}.successful.{which}", scale)

    def tokens(name: str) -> int:
        mean = _guidellm_stat(metrics, name, "mean")
        return max(1, round(positive_float(mean, where, f"metrics.{name}.successful.mean")))

    return Measurement(
        source=f"{path.name}:{index}",
        backend=given.backend,
        backend_version="",
        model=_guidellm_model(bench, given, where),
        gpu=catalog_gpu_id(str(given.gpu)),
        weights=weight_format_name(str(given.weights)),
        tensor_parallel=positive_int(given.tensor_parallel, where, "tensor_parallel"),
        input_tokens=tokens("prompt_token_count"),
        output_tokens=tokens("output_token_count"),
        harness=harness,
        mean_ttft_s=stat("time_to_first_token_ms", scale=_MS),
        mean_tpot_s=stat("inter_token_latency_ms", scale=_MS),
        median_ttft_s=stat("time_to_first_token_ms", "median", _MS),
        median_tpot_s=stat("inter_token_latency_ms", "median", _MS),
        output_tokens_per_s=stat("output_tokens_per_second"),
        extra=extra,
    )


# --- napkin's plain CSV ---

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
    header, rows = _csv_rows(path, _read_text(path))
    _require_columns(path, header, PLAIN_REQUIRED)
    unknown = [c for c in header if c not in PLAIN_REQUIRED + PLAIN_OPTIONAL]
    if unknown:
        _fail(str(path), "columns", f"unknown {', '.join(unknown)} (see read_plain_csv)")
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
        "range_ratio": _fraction(row.get("range_ratio"), where, "range_ratio"),
    }
    style = row.get("range_style", "").strip()
    if style:
        if style not in ("symmetric", "below"):
            _fail(where, "range_style", f"{style!r} is not one of symmetric, below")
        common["range_style"] = style
    if row.get("ramp_s"):  # empty: the Harness default
        common["ramp_s"] = float(_non_negative(row["ramp_s"], where, "ramp_s", integer=False))
    if kind == "closed_loop":
        clients = positive_int(load, where, "load")
        if clients > MAX_CLIENTS:
            _fail(where, "load", f"{clients:,} clients; a closed loop holds at most "
                                 f"{MAX_CLIENTS:,}")
        return Harness(kind, concurrency=clients, **common)
    if kind == "poisson":
        return Harness(kind, rate_per_s=positive_float(load, where, "load"), **common)
    if kind == "burst":
        if load and common["num_requests"] is None:
            common["num_requests"] = positive_int(load, where, "load")
        return Harness(kind, **common)
    _fail(where, "harness", f"{kind!r} is not one of closed_loop, poisson, burst")


def _plain_row(path: Path, line: int, row: dict[str, str]) -> Measurement:
    """One row of a plain CSV."""
    where = f"{path} line {line}"
    for name in ("backend", "model", "gpu", "weights"):
        if not row[name]:
            _fail(where, name, "empty")

    def ms(name: str) -> float | None:
        return _optional_float(row.get(name), where, name, _MS)

    return Measurement(
        source=f"{path.name}:{row.get('id') or line}",
        backend=row["backend"],
        backend_version=row.get("backend_version", ""),
        model=_model_ref(row["model"], where, "model"),
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
        output_tokens_per_s=_optional_float(row.get("output_tokens_per_s"), where,
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
        flags["batch_wait_max_tokens_ratio"] = _fraction(
            cells["batch_wait_max_tokens_ratio"], where, "launch_batch_wait_max_tokens_ratio")
    if "memory_fraction" in cells:
        fraction = _fraction(cells["memory_fraction"], where, "launch_memory_fraction")
        if fraction <= 0:
            _fail(where, "launch_memory_fraction", "must be in (0, 1]")
        flags["memory_fraction"] = fraction
    if "chunked_prefill" in cells:
        text = cells["chunked_prefill"].lower()
        if text not in ("true", "false", "1", "0"):
            _fail(where, "launch_chunked_prefill", f"{cells['chunked_prefill']!r} is not true "
                  "or false")
        flags["chunked_prefill"] = text in ("true", "1")
    backend = row["backend"]
    if flags.get("scheduler_recv_interval", 1) != 1 and backend != "sglang":
        _fail(where, "launch_scheduler_recv_interval", f"applies to backend sglang, not "
              f"{backend}")
    for name in ("batch_wait_timeout_iters", "batch_wait_max_tokens_ratio"):
        if flags.get(name) and backend != "trtllm":
            _fail(where, f"launch_{name}", f"applies to backend trtllm, not {backend}")
    return Launch(**flags, source=f"{where} launch_* columns")  # type: ignore[arg-type]


# --- dispatch ---


SPLITWISE_GPUS = {"a100-80gb": "a100-80gb-sxm", "h100-80gb": "h100-sxm"}
"""splitwise-sim hardware names napkin replays (``h100-80gb-pcap``, power-capped, is not)."""
SPLITWISE_MODELS = {"llama2-70b": "llama-2-70b"}
SPLITWISE_VERSION = "0.2"
"""The vLLM release splitwise-sim's perf model is read as (:func:`read_splitwise_csv`)."""


def read_splitwise_csv(path: str | Path) -> list[Measurement]:
    """splitwise-sim's ``data/perf_model.csv`` (Mutinifni/splitwise-sim, MIT): prompt (prefill)
    and per-token (decode) times in ms of a batch of ``batch_size`` identical requests
    (``prompt_size`` in, ``token_size`` out) at ``tensor_parallel``, repeated five times.

    Repeats are averaged into one measurement, replayed as a burst of ``batch_size``
    requests whose prompts run in one iteration (the simulator's perf model times a batch's
    prompt phase as one: the launch holds the whole batch, no chunking): ``prompt_time`` is its
    mean TTFT and ``token_time`` its mean TPOT. FP16 weights (the BF16 rate). The engine is
    vLLM as of late 2023 (Splitwise's prototype ran "on top of an internal vLLM branch",
    vllm-project/vllm#2472, January 2024, when the public releases were 0.2.x: no CUDA graphs
    before 0.2.2, NCCL all-reduces before 0.3's custom all-reduce), recorded as
    :data:`SPLITWISE_VERSION`. Rows of models or hardware not in :data:`SPLITWISE_MODELS` and
    :data:`SPLITWISE_GPUS` (BLOOM-176B, power-capped H100), and rows longer than the model's
    context (Llama-2-70B: 4,096 tokens; the file has 8,192-token prompts), are skipped."""
    path = Path(path)
    header, rows = _csv_rows(path, _read_text(path))
    _require_columns(path, header, ("model", "hardware", "prompt_size", "batch_size",
                                    "token_size", "prompt_time", "token_time",
                                    "tensor_parallel"))
    groups: dict[tuple[str, str, int, int, int, int], list[tuple[float, float]]] = {}
    for line, row in rows:
        where = f"{path} line {line}"
        if row["model"] not in SPLITWISE_MODELS or row["hardware"] not in SPLITWISE_GPUS:
            continue
        key = (row["model"], row["hardware"],
               *(positive_int(row[c], where, c) for c in ("prompt_size", "batch_size",
                                                           "token_size", "tensor_parallel")))
        groups.setdefault(key, []).append(
            (positive_float(row["prompt_time"], where, "prompt_time") / 1e3,
             positive_float(row["token_time"], where, "token_time") / 1e3))
    out = []
    for (model, hw, prompt, batch, tokens, tp), times in groups.items():
        from napkin.catalog import load_model

        limit = load_model(SPLITWISE_MODELS[model]).max_position_embeddings
        if limit and prompt + tokens > limit:
            continue
        out.append(Measurement(
            f"{path.name}:{model}-{hw}-p{prompt}-b{batch}-t{tokens}-tp{tp}", "vllm",
            SPLITWISE_VERSION, SPLITWISE_MODELS[model], SPLITWISE_GPUS[hw], "bf16", tp,
            prompt, tokens, Harness("burst", num_requests=batch),
            launch=Launch(max_num_seqs=batch, max_num_batched_tokens=batch * prompt,
                          chunked_prefill=False,
                          source="splitwise-sim perf model: a batch's prompts in one iteration"),
            mean_ttft_s=sum(t for t, _ in times) / len(times),
            mean_tpot_s=sum(t for _, t in times) / len(times),
            extra={"repeats": str(len(times))}))
    return out


def read_measurements(
    paths: str | Path | Iterable[str | Path],
    *,
    gpu: str | None = None,
    model: str | None = None,
    tensor_parallel: int | None = None,
    weights: str | None = None,
    backend: str | None = None,
) -> list[Measurement]:
    """Measurements from every file of ``paths``, each read by the reader its content calls for.

    ``.csv`` with a ``silicon_ttft_ms`` column → :func:`read_aiconfigurator_csv`; other
    ``.csv`` → :func:`read_plain_csv`; ``.json``/``.jsonl`` (or any other name) holding an
    object with a ``benchmarks`` key → :func:`read_guidellm_json`, else
    :func:`read_vllm_bench_json`. The keywords describe the JSON benchmarks (which do not
    name GPU, TP or weights; ``None`` = the reader's default); CSV files carry their own and
    ignore them.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    out: list[Measurement] = []
    for p in paths:
        rows = _read_one(Path(p), gpu, model, tensor_parallel, weights, backend)
        if not rows:
            raise NapkinError(f"{p}: no measurements napkin can replay in this file")
        out.extend(rows)
    return out


def _read_one(
    path: Path,
    gpu: str | None,
    model: str | None,
    tensor_parallel: int | None,
    weights: str | None,
    backend: str | None,
) -> list[Measurement]:
    """The measurements of one file, by content."""
    text = _read_text(path)
    if path.suffix.lower() == ".csv":
        header, _ = _csv_rows(path, text)
        if "silicon_ttft_ms" in header:
            return read_aiconfigurator_csv(path)
        if "prompt_time" in header and "token_time" in header:
            return read_splitwise_csv(path)
        return read_plain_csv(path)
    docs = _json_documents(path, text)
    engine = backend or "vllm"
    if any(isinstance(d, dict) and "benchmarks" in d for d in docs):
        given = _Overrides(engine, gpu, model, tensor_parallel or 1, weights or "bf16")
        return _guidellm_measurements(path, docs, given)
    given = _Overrides(engine, gpu, model, tensor_parallel, weights)
    return [_vllm_record(path, i, r, given)
            for i, r in enumerate(_json_records(path, docs), 1)]
