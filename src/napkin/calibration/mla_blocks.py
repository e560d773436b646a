"""The fixed time a latent-attention block costs beyond a GQA one: the profiles' ``mla_layer``
and ``dsa_layer``.

A fitted profile charges each decoder layer one fixed time (``layer``, set on GQA models) and
times attention by its FLOPs and bytes. An MLA block runs more kernels a layer — the query and
latent down-projections, two norms, the up-projections or, in decode, the absorbed batched
matmuls on each side of the latent attention, rotary on a split head — and a DSA block
(DeepSeek's sparse attention: DeepSeek-V3.2, GLM-5) those and its indexer (its own query and
key projections, the index scores over the cached keys, a top-k), so at the small batches
where fixed time rules a step such a model pays more than a GQA layer's. Serving rows the
profiles may be fitted on hold neither kind, so ``mla_layer`` and ``dsa_layer`` (seconds a
layer of that kind, every step) are set on the engines' own timings: ai-dynamo/aiconfigurator
(Apache-2.0) times DeepSeek-V3's whole MLA block and DeepSeek-V3.2's and GLM-5's DSA blocks as
one module under CUDA graphs (SGLang times no MLA module: its MLA block is the sum of its
kernels timed apart, :data:`MLA_KERNELS` — on TensorRT-LLM's H100 tables that sum's extra is
13.6 µs against the module's 14.3 µs), and the pieces of a GQA block apart
(``catalog/measurements/aiconfigurator_<gpu>_mla_blocks.csv``, written by
``benchmarks/check_mla_modules.py --out``: decode at a 1,024-token context, 1–16 sequences,
TP 2, 4 and 8 — the rank's heads of each model — against Llama-3.1-70B's GQA block at the same
TP, BF16). For each point,

    extra = t_block − (t_GQA attention + t_QKV GEMM + t_output GEMM)
            − c_weights · Δweight bytes / (tp · bandwidth) − c_kv · ΔKV bytes / (d · bandwidth)

the difference of the two blocks less what the profile already charges for their different
weights (attention projections: DeepSeek-V3's 187.1M parameters against Llama-3.1-70B's
151.0M, BF16, the down-projections' 15.1M read whole on every rank,
:data:`~napkin.accounting.linear.REPLICATED`) and KV reads (a latent cache read whole on every
rank, against GQA's heads split over the ranks), Δ over the same batch and context; the term
is the median of ``extra`` over the points (:func:`layer_s`), held out by TP size or by model
(:func:`holdout`). The attention FLOPs and the projections' FLOPs differ by under a
microsecond at these batches and are left out.
"""

from dataclasses import dataclass
from pathlib import Path
from statistics import median

from napkin.accounting.forward import Precision, op_rates
from napkin.accounting.linear import replicated_rates
from napkin.calibration.basis import StepModel
from napkin.calibration.measurements.fields import csv_table, positive_float, positive_int
from napkin.catalog import gpu_measurement_file, load_accelerator, load_model
from napkin.errors import NapkinError, require
from napkin.specs.model import ModelSpec

TABLES = {"h100-sxm": "aiconfigurator_h100_mla_blocks.csv",
          "b200": "aiconfigurator_b200_mla_blocks.csv"}
"""The shipped table of each GPU (the same engine versions on each)."""
COLUMNS = ("engine", "version", "model", "tp", "batch", "part", "latency_ms")
MLA_MODULE = "mla_module"
"""The MLA block timed as one module (TensorRT-LLM, vLLM)."""
MLA_KERNELS = ("mla_attention", "mla_bmm_pre", "mla_bmm_post", "mla_qkv_a", "mla_q_b",
               "mla_output")
"""The MLA block's kernels timed apart, where an engine has no module table (SGLang): the
latent attention, the absorbed batched matmuls before and after it, the fused query and
latent down-projection, the query up-projection and the output projection."""
DSA_MODULE = "dsa_module"
"""The DSA block timed as one module (every engine)."""
GQA_PARTS = ("gqa_attention", "gqa_qkv", "gqa_output")
"""The timed pieces of the GQA block: its attention kernel, QKV and output projections."""
PARTS = (MLA_MODULE, *MLA_KERNELS, DSA_MODULE, *GQA_PARTS)
KINDS = {"mla": "mla_layer", "dsa": "dsa_layer"}
"""Attention kind → the profile term its extra fixed time sets."""
MODELS = {"mla": ("deepseek-v3",), "dsa": ("deepseek-v3.2", "glm-5")}
"""The catalog models whose blocks the tables time, by kind."""
GQA_MODEL = "llama-3.1-70b"
CONTEXT = 1024
"""Tokens each decoding sequence of the tables holds."""
BYTES = 2
"""BF16, the tables' format for weights and KV (bytes an element)."""
BF16 = Precision.of("bf16")


@dataclass(frozen=True)
class BlockRow:
    """One timing: ``part`` of one decode layer of ``model`` (the GQA parts: Llama-3.1-70B's)
    at ``tp`` ranks over ``batch`` sequences."""

    engine: str
    version: str
    model: str
    tp: int
    batch: int
    part: str
    latency_s: float


def read_mla_blocks(path: Path | None = None, gpu: str = "h100-sxm") -> list[BlockRow]:
    """Rows of a block table timed on ``gpu`` (default: its shipped table, :data:`TABLES`); a
    malformed row is one error line naming the file, the line and the column."""
    source = gpu_measurement_file(TABLES, gpu, "MLA block") if path is None else path
    rows = []
    for line, r in csv_table(source, COLUMNS):
        where = f"{source} line {line}"
        require(r["part"] in PARTS, f"{where}: part: {r['part']!r} not one of "
                f"{', '.join(PARTS)}")
        latency_s = positive_float(r["latency_ms"], where, "latency_ms") * 1e-3
        require(latency_s < 1, f"{where}: latency_ms: must be below 1000")
        rows.append(BlockRow(r["engine"], r["version"], r["model"],
                             positive_int(r["tp"], where, "tp"),
                             positive_int(r["batch"], where, "batch"), r["part"], latency_s))
    return rows


def charged_difference_s(model: StepModel, gpu: str, tp: int, batch: int,
                         block_model: str = "deepseek-v3") -> float:
    """What ``model`` already charges ``block_model``'s attention block beyond the GQA one at
    ``tp`` ranks over ``batch`` sequences: its weights' and KV reads' difference (module
    docstring)."""
    acc = load_accelerator(gpu)
    block, gqa = load_model(block_model), load_model(GQA_MODEL)
    c = model.as_dict()
    whole = replicated_rates(block, BF16)[2] / block.num_layers  # every rank's, whole
    weights = (_attention_bytes(block) - whole) / tp + whole - _attention_bytes(gqa) / tp
    kv = batch * CONTEXT * (_kv_bytes(block) / block.kv_devices(tp)
                            - _kv_bytes(gqa) / gqa.kv_devices(tp))
    return (c["weights"] * weights + c["kv"] * kv) / acc.mem_bytes_per_s


def _attention_bytes(model: ModelSpec) -> float:
    """BF16 weight bytes of a layer's attention projections (the accounting's ``attn/`` ops
    over the model's layers)."""
    return sum(r.weight_bytes for r in op_rates(model, BF16)
               if r.module.startswith("attn/")) / model.num_layers


def _kv_bytes(model: ModelSpec) -> float:
    """KV bytes a token holds in one layer, BF16 (the model's per token over its layers:
    these models' layers hold alike)."""
    return model.kv_bytes_per_token(BYTES) / model.num_layers


def _block_s(t: dict[str, float], kind: str) -> float | None:
    """A point's ``kind`` block time from its parts (its module, else its kernels summed);
    None without them."""
    if kind == "dsa":
        return t.get(DSA_MODULE)
    if MLA_MODULE in t:
        return t[MLA_MODULE]
    return sum(t[p] for p in MLA_KERNELS) if all(p in t for p in MLA_KERNELS) else None


@dataclass(frozen=True)
class Extra:
    """One (model, tp, batch) point's block time, its GQA block time and its extra fixed time
    (module docstring), seconds."""

    model: str
    tp: int
    batch: int
    block_s: float
    gqa_s: float
    extra_s: float


def extras(rows: list[BlockRow], engine: str, model: StepModel, gpu: str = "h100-sxm",
           kind: str = "mla") -> list[Extra]:
    """Each point of ``engine``'s rows with a ``kind`` block and every GQA part timed, as
    :class:`Extra` under ``model``'s weight and KV coefficients."""
    require(kind in KINDS, f"kind: {kind!r} not one of {', '.join(KINDS)}")
    gqa: dict[tuple[int, int], dict[str, float]] = {}
    blocks: dict[tuple[str, int, int], dict[str, float]] = {}
    for r in rows:
        if r.engine != engine:
            continue
        if r.part in GQA_PARTS:
            gqa.setdefault((r.tp, r.batch), {})[r.part] = r.latency_s
        elif r.model in MODELS[kind]:
            blocks.setdefault((r.model, r.tp, r.batch), {})[r.part] = r.latency_s
    out = []
    for (name, tp, batch), t in sorted(blocks.items()):
        block_s, g = _block_s(t, kind), gqa.get((tp, batch), {})
        if block_s is not None and all(p in g for p in GQA_PARTS):
            gqa_s = sum(g[p] for p in GQA_PARTS)
            out.append(Extra(name, tp, batch, block_s, gqa_s, block_s - gqa_s
                             - charged_difference_s(model, gpu, tp, batch, name)))
    if not out:
        raise NapkinError(f"engine: no {kind.upper()} block rows of {engine!r}")
    return out


def layer_s(rows: list[BlockRow], engine: str, model: StepModel, gpu: str = "h100-sxm",
            kind: str = "mla") -> float:
    """The ``kind`` term (:data:`KINDS`) for ``engine`` on ``gpu``: the median extra fixed
    time of its points, at the H100's clock (divided by the GPU's :attr:`~napkin.specs.
    hardware.Accelerator.fixed_time_scale`, as every seconds term is read), floored at 0."""
    scale = load_accelerator(gpu).fixed_time_scale
    return max(median(e.extra_s for e in extras(rows, engine, model, gpu, kind)) / scale, 0.0)


@dataclass(frozen=True)
class Holdout:
    """Median |error| of the block time predicted as the GQA block's plus what the profile
    charges of the difference, without and with the term set on the other groups."""

    without: float
    held_out: float
    points: int


def holdout(rows: list[BlockRow], engine: str, model: StepModel, gpu: str = "h100-sxm",
            kind: str = "mla", by: str = "tp") -> Holdout:
    """:class:`Holdout` of ``engine``'s ``kind`` points, each group (``by``: ``tp`` or
    ``model``) predicted with the term from the other groups' points (a group alone is
    predicted without it)."""
    require(by in ("tp", "model"), f"by: {by!r} not tp or model")
    points = extras(rows, engine, model, gpu, kind)
    without, held = [], []
    for p in points:
        base = p.block_s - p.extra_s  # the GQA block and what the profile charges beyond it
        others = [e.extra_s for e in points if getattr(e, by) != getattr(p, by)]
        fixed = max(median(others), 0.0) if others else 0.0
        without.append(abs(base / p.block_s - 1))
        held.append(abs((base + fixed) / p.block_s - 1))
    return Holdout(median(without), median(held), len(points))


def architecture_scale(h100: list[BlockRow], other: list[BlockRow], engine: str,
                       model: StepModel, gpu: str, kind: str = "mla") -> float:
    """How much more (or less) fixed time ``engine``'s ``kind`` block takes on ``gpu`` than
    on the H100, both at the H100's clock: the term set on ``other`` (timed on ``gpu``) over
    that set on ``h100`` — the factor a profile's ``architecture_scales`` gives the term on
    ``gpu``'s architecture (:meth:`StepModel.on`)."""
    base = layer_s(h100, engine, model, kind=kind)
    require(base > 0, f"engine: {engine!r} takes no extra {kind.upper()} time on the H100")
    return layer_s(other, engine, model, gpu, kind) / base
