"""Options shared by commands, and printing a result."""

import math
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from napkin.api.result import Result
from napkin.cli import output
from napkin.report.render import render
from napkin.specs.files import PLOT_SUFFIXES, check_output


class Format(StrEnum):
    table = "table"
    md = "md"
    json = "json"


def finite(text: str) -> float:
    """A finite number: ``inf``, ``nan`` and what overflows to them (``1e400``) are refused."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {text!r}")
    return value


def FiniteOption(*flags: str, **kwargs: Any) -> Any:
    """``typer.Option`` for every float option: parsed by :func:`finite`, so no command sees
    a non-finite number (the error names the flag). Ranges are the library's to check."""
    return typer.Option(*flags, parser=finite, **kwargs)


def FiniteArgument(**kwargs: Any) -> Any:
    """``typer.Argument`` for a float argument, parsed by :func:`finite`."""
    return typer.Argument(parser=finite, **kwargs)


def plot_path(text: str) -> Path:
    """A figure path, checked when parsed (before any work): a known extension, an existing
    writable folder; the figure is written to exactly this path."""
    check_output(text, PLOT_SUFFIXES, None)
    return Path(text)


def PlotOption(**kwargs: Any) -> Any:
    """``--plot`` of every command, parsed by :func:`plot_path`."""
    return typer.Option("--plot", parser=plot_path, **kwargs)


FormatOpt = Annotated[Format, typer.Option("--format", help="Output: table, md or json.")]
ModelArg = Annotated[
    str, typer.Argument(metavar="MODEL", help="Catalog id (napkin models) or config.json path.")
]
GpuOpt = Annotated[str | None, typer.Option("--gpu", help="Accelerator id (napkin gpus).")]
MemOpt = Annotated[float | None, FiniteOption("--gpu-mem-gb", help="Override memory, GB.")]
BwOpt = Annotated[float | None, FiniteOption("--gpu-bw-gbs", help="Override bandwidth, GB/s.")]
TflopsOpt = Annotated[
    float | None, FiniteOption("--gpu-tflops", help="Override dense peak, TFLOP/s.")
]
WeightsOpt = Annotated[
    str, typer.Option("--weights", help="Weight format: bf16 fp16 fp8 int8 int4 int4-g128 "
                                        "int4-g32 mxfp4 (W4A16) mxfp4-w4a4 nvfp4 (W4A4, FP4 "
                                        "rate) q4_k_m fp32.")
]
KvOpt = Annotated[str, typer.Option("--kv-dtype", help="KV-cache format: bf16 fp16 fp8 int8.")]
UnquantizedOpt = Annotated[
    str | None, typer.Option("--unquantized", help="Parts the checkpoint keeps in BF16 "
                                                   "(comma-separated): attention router "
                                                   "shared-experts dense-mlp lm-head "
                                                   "embedding; or checkpoint (what the "
                                                   "catalog model's checkpoint keeps). "
                                                   "Default: none.")
]
MfuOpt = Annotated[float, FiniteOption("--mfu", help="Achieved share of peak FLOP/s (0, 1].")]
MbuOpt = Annotated[float, FiniteOption("--mbu", help="Achieved share of bandwidth (0, 1].")]
OverheadOpt = Annotated[float, FiniteOption("--overhead-ms", help="Fixed time per call, ms.")]
ReadEmbOpt = Annotated[
    bool, typer.Option("--read-embedding", help="Count the embedding table as read every step "
                                                "(question-bank convention).")
]


def emit(result: Result, fmt: Format) -> None:
    """Print an API :class:`~napkin.api.result.Result` in the asked format."""
    sys.stdout.write(render(result.document, fmt.value, wide=output.wide,
                            timing=output.timing))

