"""Measured training runs: a table with one row per configuration, read into napkin's inputs.

The format is the project's training-measurement table (``catalog/measurements/
torchtitan_training.csv``, copied from torchtitan's published performance tables): one row per
configuration and measured quantity, with columns

    id, model_ref (catalog id), gpu (catalog id), gpu_mem_gb / gpu_bw_gbs / gpu_tflops
    (overrides, blank = the catalog's), gpus, tp, pp, vp, cp, ep, zero, seq, micro_batch,
    global_batch, recompute (:data:`~napkin.training.flops.RECOMPUTE`), precision (bf16 |
    fp8 | fp8-rowwise), compile and async_tp (0 or 1; blank or absent = 0), optimizer
    (blank = adamw), grad_dtype (the gradient reduction's dtype), quantity
    (``tokens_per_s_per_gpu`` | ``peak_mem_gib``), measured, stated_mfu (blank = none), table,
    notes.

A row's layout: ``gpus = DP · TP · PP · CP`` (FSDP over DP ranks), and its update is
``global_batch / (DP · micro_batch)`` micro-batches of ``micro_batch`` sequences of ``seq``
tokens on every DP rank. A malformed row is one error line naming the file, the line and the
column.

:func:`plan_run` plans a row as napkin would be asked for it (``napkin train`` with the row's
inputs: FSDP over the DP ranks at the row's ZeRO stage, TP with sequence parallelism — the TP
plan torchtitan applies — pipeline stages and interleaving, the gradient reduction's dtype, the
GPU with its overrides); :func:`predicted` reads the row's quantity off the plan: tokens/s per
GPU (tokens per update / update time / GPUs) or peak memory per GPU in GiB (state,
activations and reserve).
"""

from dataclasses import dataclass
from pathlib import Path

from napkin.calibration.measurements.fields import csv_table, positive_float, positive_int
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError, require
from napkin.specs.hardware import Accelerator, override
from napkin.training.efficiency import PRECISIONS, TrainingProfile
from napkin.training.flops import RECOMPUTE, TrainShape
from napkin.training.memory import recipe
from napkin.training.parallel import GRAD_WIRE_BYTES
from napkin.training.plan import Cluster, TrainPlan, plan_training
from napkin.units import GiB

COLUMNS = ("id", "model_ref", "gpu", "gpu_mem_gb", "gpu_bw_gbs", "gpu_tflops", "gpus", "tp",
           "pp", "vp", "cp", "ep", "zero", "seq", "micro_batch", "global_batch", "recompute",
           "precision", "optimizer", "grad_dtype", "quantity", "measured", "stated_mfu")
QUANTITIES = {"tokens_per_s_per_gpu": "tokens/s per GPU", "peak_mem_gib": "peak memory, GiB"}


@dataclass(frozen=True)
class MeasuredRun:
    """One measured training configuration and quantity (module docstring)."""

    id: str
    model: str
    gpu: str
    gpus: int
    tp: int
    pp: int
    vp: int
    cp: int
    ep: int
    zero: int
    seq: int
    micro_batch: int
    global_batch: int
    recompute: str
    precision: str
    optimizer: str
    grad_dtype: str | None
    quantity: str
    measured: float
    stated_mfu: float | None = None
    compiled: bool = False
    async_tp: bool = False
    gpu_mem_gb: float | None = None
    gpu_bw_gbs: float | None = None
    gpu_tflops: float | None = None
    table: str = ""
    notes: str = ""

    @property
    def data_parallel(self) -> int:
        """FSDP ranks: ``gpus / (TP · PP · CP)``."""
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def accumulation(self) -> int:
        """Micro-batches per update on a DP rank: ``global_batch / (DP · micro_batch)``."""
        return self.global_batch // (self.data_parallel * self.micro_batch)

    @property
    def group(self) -> str:
        """The hold-out group: the source table (one setup of GPUs, cluster and code)."""
        return self.table or self.id


def _optional(row: dict[str, str], column: str, where: str) -> float | None:
    return None if not row[column].strip() else positive_float(row[column], where, column)


def _choice(row: dict[str, str], column: str, allowed: tuple[str, ...], where: str,
            default: str | None = None) -> str:
    value = row[column].strip() or default
    if value not in allowed:
        raise NapkinError(f"{where}: {column}: {row[column]!r} is not one of "
                          f"{', '.join(allowed)}")
    return value


def _flag(row: dict[str, str], column: str, where: str) -> bool:
    value = (row.get(column) or "").strip() or "0"
    require(value in ("0", "1"), f"{where}: {column}: {row[column]!r} is not 0 or 1")
    return value == "1"


def read_measured_runs(path: str | Path) -> list[MeasuredRun]:
    """The rows of a training-measurement table (module docstring)."""
    out = []
    for line, row in csv_table(path, COLUMNS):
        where = f"{path} line {line}"
        ints = {c: positive_int(row[c], where, c) for c in (
            "gpus", "tp", "pp", "vp", "cp", "ep", "seq", "micro_batch", "global_batch")}
        zero = row["zero"].strip()
        require(zero in ("0", "1", "2", "3"), f"{where}: zero: {zero!r} is not 0, 1, 2 or 3")
        model_parallel = ints["tp"] * ints["pp"] * ints["cp"]
        require(ints["gpus"] % model_parallel == 0,
                f"{where}: gpus: {ints['gpus']} is not a multiple of tp × pp × cp "
                f"({model_parallel})")
        dp = ints["gpus"] // model_parallel
        require(ints["global_batch"] % (dp * ints["micro_batch"]) == 0,
                f"{where}: global_batch: {ints['global_batch']} is not a multiple of "
                f"data-parallel ranks × micro_batch ({dp} × {ints['micro_batch']})")
        grad = row["grad_dtype"].strip() or None
        require(grad in (None, "bf16", "fp16", "fp32"),
                f"{where}: grad_dtype: {row['grad_dtype']!r} is not bf16, fp16 or fp32")
        out.append(MeasuredRun(
            id=row["id"].strip() or f"line {line}", model=row["model_ref"].strip(),
            gpu=row["gpu"].strip(), zero=int(zero),
            recompute=_choice(row, "recompute", RECOMPUTE, where),
            precision=_choice(row, "precision", PRECISIONS, where),
            optimizer=row["optimizer"].strip() or "adamw", grad_dtype=grad,
            quantity=_choice(row, "quantity", tuple(QUANTITIES), where),
            measured=positive_float(row["measured"], where, "measured"),
            stated_mfu=_optional(row, "stated_mfu", where),
            compiled=_flag(row, "compile", where), async_tp=_flag(row, "async_tp", where),
            gpu_mem_gb=_optional(row, "gpu_mem_gb", where),
            gpu_bw_gbs=_optional(row, "gpu_bw_gbs", where),
            gpu_tflops=_optional(row, "gpu_tflops", where),
            table=row.get("table", "").strip(), notes=row.get("notes", "").strip(), **ints))
    return out


def accelerator(run: MeasuredRun) -> Accelerator:
    """The row's GPU with its overrides (memory GB, bandwidth GB/s, dense TFLOP/s)."""
    acc = load_accelerator(run.gpu)
    if run.gpu_mem_gb is None and run.gpu_bw_gbs is None and run.gpu_tflops is None:
        return acc
    return override(acc, run.gpu_mem_gb, run.gpu_bw_gbs, run.gpu_tflops)


def plan_run(run: MeasuredRun, mfu: float = 0.4,
             profile: TrainingProfile | None = None) -> TrainPlan:
    """``run`` planned as ``napkin train`` plans it (module docstring), its compute at ``mfu``
    or by ``profile``."""
    acc = accelerator(run)
    shape = TrainShape((run.seq,), run.micro_batch, run.accumulation, recompute=run.recompute)
    grads = GRAD_WIRE_BYTES.get(run.grad_dtype or "")
    cluster = Cluster(acc, run.data_parallel, run.zero, link_bytes_per_s=acc.allreduce_bytes_per_s,
                      mfu=mfu, tensor_parallel=run.tp, sequence_parallel=run.tp > 1,
                      pipeline_stages=run.pp, virtual_stages=run.vp, grad_wire_bytes=grads,
                      precision=run.precision, compiled=run.compiled, async_tp=run.async_tp,
                      profile=profile, context_parallel=run.cp, expert_parallel=run.ep)
    return plan_training(load_model(run.model), shape, cluster, recipe(run.optimizer))


def predicted(run: MeasuredRun, plan: TrainPlan) -> float:
    """The row's quantity off ``plan``: tokens/s per GPU, or peak GiB per GPU."""
    if run.quantity == "peak_mem_gib":
        return plan.fit.total_bytes / GiB
    return plan.tokens_per_s / plan.gpus
