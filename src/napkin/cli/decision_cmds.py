"""``napkin decision`` (prefill-only decision request vs generation) and ``napkin ced`` (over
:mod:`napkin.api.decision`)."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import decision as api
from napkin.api.text import parse_ints
from napkin.cli.common import (
    FiniteOption,
    Format,
    FormatOpt,
    GpuOpt,
    KvOpt,
    MbuOpt,
    MfuOpt,
    ModelArg,
    PlotOption,
    WeightsOpt,
    emit,
)


def decision(
    ref: ModelArg,
    prompt: Annotated[int, typer.Option("--prompt", help="Input tokens P (state + questions).")]
    = 1929,
    questions: Annotated[int, typer.Option("--questions", help="Read-out positions Q.")] = 8,
    gen: Annotated[int, typer.Option("--gen", help="Tokens the generating LLM writes.")] = 64,
    gpu: GpuOpt = "h100-sxm",
    weights: WeightsOpt = "bf16",
    kv: KvOpt = "bf16",
    mfu: MfuOpt = 0.4,
    mbu: MbuOpt = 0.5,
    usd_per_gpu_hour: Annotated[float, FiniteOption("--usd-per-gpu-hour")] = 2.0,
    decode_batch: Annotated[int, typer.Option(
        "--decode-batch", help="Requests sharing each decode step, for the generating "
                               "request's GPU time.")] = 64,
    gen_range: Annotated[str | None, typer.Option(
        "--gen-range", help="Generated lengths to compare GPU time over, e.g. 64,512.")] = None,
    request_usd: Annotated[float | None, FiniteOption(
        "--request-usd", help="A request's bill: with --usd-per-million-input it sets P.")]
    = None,
    usd_per_million_input: Annotated[float | None, FiniteOption(
        "--usd-per-million-input", help="A provider's price per 1M input tokens, $: the price "
                                        "÷ compute ratio (with --request-usd it sets P).")]
    = None,
    llm_usd: Annotated[float | None, FiniteOption(
        "--llm-usd", help="The generating LLM's bill for the same request, $ (with "
                          "--request-usd): the two bills' ratio split into generation and "
                          "the rest.")] = None,
    ced: Annotated[bool, typer.Option(
        "--ced", help="Run the decision forward on the CED path (encoder + replayed "
                      "decoder).")] = False,
    encoder_layers: Annotated[int | None, typer.Option(
        "--encoder-layers", help="With --ced: the first E layers encode all P tokens "
                                 "(default half the model's layers).")] = None,
    replay: Annotated[int, typer.Option(
        "--replay", help="With --ced: prompt tokens replayed through the decoder.")] = 128,
    plot: Annotated[Path | None, PlotOption(
        help="Write Figure 3-15: both paths on one time axis (png/svg).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """One P-token forward reading out Q answers vs prefill + G generated tokens: latency, GPU
    time (decode batched), $ per million input tokens (§3.2.4; defaults are the chapter's).
    --request-usd with --usd-per-million-input infers P from a bill; --usd-per-million-input
    gives the price ÷ compute ratio; --ced times the forward on the CED path."""
    result = api.decision(ref, prompt=prompt, questions=questions, gen=gen, gpu=gpu,
                          weights=weights, kv_dtype=kv, mfu=mfu, mbu=mbu,
                          usd_per_gpu_hour=usd_per_gpu_hour, decode_batch=decode_batch,
                          gen_range=parse_ints(gen_range, "gen-range") if gen_range else [],
                          request_usd=request_usd, usd_per_million_input=usd_per_million_input,
                          llm_usd=llm_usd, ced=ced, encoder_layers=encoder_layers,
                          replay=replay)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


def ced(
    prompt: Annotated[int, typer.Option("--prompt", help="Prompt tokens P.")] = 8192,
    encoder_layers: Annotated[int, typer.Option("--encoder-layers")] = 20,
    decoder_layers: Annotated[int, typer.Option("--decoder-layers")] = 20,
    replay: Annotated[int, typer.Option("--replay", help="Prompt tokens replayed through "
                                                         "the decoder.")] = 128,
    plot: Annotated[Path | None, PlotOption(
        help="Write passes against P, with and without CED (png/svg).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Expert-layer passes of a prefill: (E + D)·P vs CED's E·P + D·min(P, replay)."""
    result = api.ced(prompt=prompt, encoder_layers=encoder_layers,
                     decoder_layers=decoder_layers, replay=replay)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)
