"""The fixed time an MLA attention block costs beyond a GQA one: the profiles' ``mla_layer``.

A fitted profile charges each decoder layer one fixed time (``layer``, set on GQA models) and
times attention by its FLOPs and bytes. An MLA block runs more kernels a layer — the query and
latent down-projections, two norms, the up-projections or, in decode, the absorbed batched
matmuls on each side of the latent attention, rotary on a split head — so at the small batches
where fixed time rules a step, an MLA model pays more than a GQA layer's. Serving rows the
profiles may be fitted on hold no MLA model, so ``mla_layer`` (seconds a MLA layer, every step)
is set on the engines' own timings: ai-dynamo/aiconfigurator (Apache-2.0) times DeepSeek-V3's
whole MLA block as one module under CUDA graphs (TensorRT-LLM, vLLM; SGLang's block is the sum
of its kernels timed apart, :data:`MLA_KERNELS` — on TensorRT-LLM's tables that sum's extra
matches the module's, 25.3 µs against 25.1 µs at the median), and the pieces of a GQA block
apart
(``catalog/measurements/aiconfigurator_<gpu>_mla_blocks.csv``, written by
``benchmarks/check_mla_modules.py --out``: decode at a 1,024-token context, 1–16 sequences,
DeepSeek-V3's heads and Llama-3.1-70B's GQA block over TP 2, 4 and 8, BF16). For each row,

    extra = t_MLA block − (t_GQA attention + t_QKV GEMM + t_output GEMM)
            − c_weights · Δweight bytes / (tp · bandwidth) − c_kv · ΔKV bytes / (d · bandwidth)

the difference of the two blocks less what the profile already charges for their different
weights (DeepSeek-V3's 187.1M attention parameters against Llama-3.1-70B's 151.0M, BF16) and
KV reads (MLA's 576-element latent read on every rank against GQA's heads split over the
ranks), Δ over the same batch and context; ``mla_layer`` is the median of ``extra`` over the
rows (:func:`mla_layer_s`), held out by TP size (:func:`holdout`). The attention FLOPs and the
projections' FLOPs differ by under a microsecond at these batches and are left out.
"""

from dataclasses import dataclass
from pathlib import Path
from statistics import median

from napkin.calibration.basis import StepModel
from napkin.calibration.measurements.fields import csv_table, positive_float, positive_int
from napkin.catalog import load_accelerator, load_model, measurement_file
from napkin.errors import NapkinError, require

TABLES = {"h100-sxm": "aiconfigurator_h100_mla_blocks.csv",
          "b200": "aiconfigurator_b200_mla_blocks.csv"}
"""The shipped table of each GPU (the same engine versions on each)."""
COLUMNS = ("engine", "version", "tp", "batch", "part", "latency_ms")
MLA_MODULE = "mla_module"
"""The MLA block timed as one module (TensorRT-LLM, vLLM)."""
MLA_KERNELS = ("mla_attention", "mla_bmm_pre", "mla_bmm_post", "mla_qkv_a", "mla_q_b",
               "mla_output")
"""The MLA block's kernels timed apart, where an engine has no module table (SGLang): the
latent attention, the absorbed batched matmuls before and after it, the fused query and
latent down-projection, the query up-projection and the output projection."""
GQA_PARTS = ("gqa_attention", "gqa_qkv", "gqa_output")
"""The timed pieces of the GQA block: its attention kernel, QKV and output projections."""
PARTS = (MLA_MODULE, *MLA_KERNELS, *GQA_PARTS)
MLA_MODEL, GQA_MODEL = "deepseek-v3", "llama-3.1-70b"
CONTEXT = 1024
"""Tokens each decoding sequence of the tables holds."""
BYTES = 2
"""BF16, the tables' format for weights and KV."""


@dataclass(frozen=True)
class BlockRow:
    """One timing: ``part`` of one decode layer at ``tp`` ranks over ``batch`` sequences."""

    engine: str
    version: str
    tp: int
    batch: int
    part: str
    latency_s: float


def read_mla_blocks(path: Path | None = None, gpu: str = "h100-sxm") -> list[BlockRow]:
    """Rows of a block table timed on ``gpu`` (default: its shipped table, :data:`TABLES`); a
    malformed row is one error line naming the file, the line and the column."""
    if path is None:
        require(gpu in TABLES, f"gpu: no shipped MLA block table for {gpu!r}; tables: "
                f"{', '.join(TABLES)}")
    source = measurement_file(TABLES[gpu]) if path is None else path
    rows = []
    for line, r in csv_table(source, COLUMNS):
        where = f"{source} line {line}"
        require(r["part"] in PARTS, f"{where}: part: {r['part']!r} not one of "
                f"{', '.join(PARTS)}")
        latency_s = positive_float(r["latency_ms"], where, "latency_ms") * 1e-3
        require(latency_s < 1, f"{where}: latency_ms: must be below 1000")
        rows.append(BlockRow(r["engine"], r["version"], positive_int(r["tp"], where, "tp"),
                             positive_int(r["batch"], where, "batch"), r["part"], latency_s))
    return rows


def charged_difference_s(model: StepModel, gpu: str, tp: int, batch: int) -> float:
    """What ``model`` already charges the MLA block beyond the GQA one at ``tp`` ranks over
    ``batch`` sequences: its weights' and KV reads' difference (module docstring)."""
    acc = load_accelerator(gpu)
    mla, gqa = load_model(MLA_MODEL), load_model(GQA_MODEL)
    c = model.as_dict()
    weights = (mla.blocks[-1].params_by_part()["attention"]
               - gqa.blocks[-1].params_by_part()["attention"]) * BYTES / tp
    kv = batch * CONTEXT * (_kv_elements(mla) / mla.kv_devices(tp)
                            - _kv_elements(gqa) / gqa.kv_devices(tp)) * BYTES
    return (c["weights"] * weights + c["kv"] * kv) / acc.mem_bytes_per_s


def _kv_elements(model) -> int:
    """KV elements a token holds in one layer (the last one's: these models' are alike)."""
    a = model.blocks[-1].attention
    return a.k_elements + a.v_elements


@dataclass(frozen=True)
class Extra:
    """One (engine, tp, batch) point's MLA block time, its GQA block time and its extra fixed
    time (module docstring), seconds."""

    tp: int
    batch: int
    mla_s: float
    gqa_s: float
    extra_s: float


def extras(rows: list[BlockRow], engine: str, model: StepModel,
           gpu: str = "h100-sxm") -> list[Extra]:
    """Each point of ``engine``'s rows with every part timed, as :class:`Extra` under
    ``model``'s weight and KV coefficients."""
    times: dict[tuple[int, int], dict[str, float]] = {}
    for r in rows:
        if r.engine == engine:
            times.setdefault((r.tp, r.batch), {})[r.part] = r.latency_s
    out = []
    for (tp, batch), t in sorted(times.items()):
        mla = (t[MLA_MODULE] if MLA_MODULE in t else sum(t[p] for p in MLA_KERNELS)
               if all(p in t for p in MLA_KERNELS) else None)
        if mla is not None and all(p in t for p in GQA_PARTS):
            gqa = sum(t[p] for p in GQA_PARTS)
            out.append(Extra(tp, batch, mla, gqa,
                             mla - gqa - charged_difference_s(model, gpu, tp, batch)))
    if not out:
        raise NapkinError(f"engine: no MLA block rows of {engine!r}")
    return out


def mla_layer_s(rows: list[BlockRow], engine: str, model: StepModel,
                gpu: str = "h100-sxm") -> float:
    """``mla_layer`` for ``engine`` on ``gpu``: the median extra fixed time of its rows, at the
    H100's clock (divided by the GPU's :attr:`~napkin.specs.hardware.Accelerator.
    fixed_time_scale`, as every seconds term is read), floored at 0."""
    scale = load_accelerator(gpu).fixed_time_scale
    return max(median(e.extra_s for e in extras(rows, engine, model, gpu)) / scale, 0.0)


@dataclass(frozen=True)
class Holdout:
    """Median |error| of the MLA block time predicted as the GQA block's plus what the profile
    charges of the difference, without and with ``mla_layer`` set on the other TP sizes."""

    without: float
    held_out: float
    points: int


def holdout(rows: list[BlockRow], engine: str, model: StepModel,
            gpu: str = "h100-sxm") -> Holdout:
    """:class:`Holdout` of ``engine``'s rows, each TP size predicted with ``mla_layer`` from
    the others' rows."""
    points = extras(rows, engine, model, gpu)
    without, held = [], []
    for p in points:
        base = p.mla_s - p.extra_s  # the GQA block and what the profile charges beyond it
        others = [e.extra_s for e in points if e.tp != p.tp]
        fixed = max(median(others), 0.0) if others else 0.0
        without.append(abs(base / p.mla_s - 1))
        held.append(abs((base + fixed) / p.mla_s - 1))
    return Holdout(median(without), median(held), len(points))


def architecture_scale(h100: list[BlockRow], other: list[BlockRow], engine: str,
                       model: StepModel, gpu: str) -> float:
    """How much more (or less) fixed time ``engine``'s MLA block takes on ``gpu`` than on the
    H100, both at the H100's clock: ``mla_layer`` set on ``other`` (timed on ``gpu``) over
    that set on ``h100`` — the factor a profile's ``architecture_scales`` gives the term on
    ``gpu``'s architecture (:meth:`StepModel.on`)."""
    base = mla_layer_s(h100, engine, model)
    require(base > 0, f"engine: {engine!r} takes no extra MLA time on the H100")
    return mla_layer_s(other, engine, model, gpu) / base
