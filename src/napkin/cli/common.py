"""Options shared by commands, and building specs from them."""

import sys
from enum import StrEnum
from typing import Annotated

import typer

from napkin.accounting.forward import Precision
from napkin.catalog import load_accelerator
from napkin.errors import NapkinError
from napkin.report.document import Document
from napkin.report.render import render
from napkin.specs.hardware import Accelerator, override
from napkin.specs.model import ModelSpec
from napkin.timing import Deployment, Efficiency
from napkin.units import MS


class Format(StrEnum):
    table = "table"
    md = "md"
    json = "json"


FormatOpt = Annotated[Format, typer.Option("--format", help="Output: table, md or json.")]
ModelArg = Annotated[
    str, typer.Argument(metavar="MODEL", help="Catalog id (napkin models) or config.json path.")
]
GpuOpt = Annotated[str | None, typer.Option("--gpu", help="Accelerator id (napkin gpus).")]
MemOpt = Annotated[float | None, typer.Option("--gpu-mem-gb", help="Override memory, GB.")]
BwOpt = Annotated[float | None, typer.Option("--gpu-bw-gbs", help="Override bandwidth, GB/s.")]
TflopsOpt = Annotated[
    float | None, typer.Option("--gpu-tflops", help="Override dense peak, TFLOP/s.")
]
WeightsOpt = Annotated[
    str, typer.Option("--weights", help="Weight format: bf16 fp16 fp8 int8 int4 int4-g128 "
                                        "int4-g32 mxfp4 (W4A16) mxfp4-w4a4 nvfp4 (W4A4, FP4 "
                                        "rate) q4_k_m fp32.")
]
KvOpt = Annotated[str, typer.Option("--kv-dtype", help="KV-cache format: bf16 fp16 fp8 int8.")]
MfuOpt = Annotated[float, typer.Option("--mfu", help="Achieved share of peak FLOP/s (0, 1].")]
MbuOpt = Annotated[float, typer.Option("--mbu", help="Achieved share of bandwidth (0, 1].")]
OverheadOpt = Annotated[float, typer.Option("--overhead-ms", help="Fixed time per call, ms.")]
ReadEmbOpt = Annotated[
    bool, typer.Option("--read-embedding", help="Count the embedding table as read every step "
                                                "(question-bank convention).")
]


def parse_ints(text: str, field: str) -> list[int]:
    """``"1,8,16"`` → ``[1, 8, 16]``; every value an integer >= 1."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(
            f"{field}: {text!r} must be comma-separated integers, e.g. 1,8,16"
        ) from None
    if not values or min(values) < 1:
        raise NapkinError(f"{field}: values must be integers >= 1, got {text!r}")
    return values


def accelerator(gpu: str | None, mem: float | None, bw: float | None,
                tflops: float | None) -> Accelerator:
    """A catalog accelerator with overrides, or a custom one from all three overrides."""
    return override(load_accelerator(gpu) if gpu else None, mem, bw, tflops)


def deployment(model: ModelSpec, acc: Accelerator, weights: str, kv: str, read_embedding: bool,
               mfu: float, mbu: float, overhead_ms: float) -> Deployment:
    return Deployment(model, acc, Precision.of(weights, kv, read_embedding),
                      Efficiency(mfu, mbu, overhead_ms * MS))


def emit(doc: Document, fmt: Format) -> None:
    sys.stdout.write(render(doc, fmt.value))

