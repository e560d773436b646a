"""``napkin decision`` (prefill-only decision request vs generation) and ``napkin ced``."""

from typing import Annotated

import typer

from napkin.cli.common import (
    FiniteOption,
    Format,
    FormatOpt,
    GpuOpt,
    KvOpt,
    MbuOpt,
    MfuOpt,
    ModelArg,
    WeightsOpt,
    accelerator,
    deployment,
    emit,
    parse_ints,
)
from napkin.errors import require


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
        "--usd-per-million-input", help="Price per 1M input tokens (for --request-usd).")]
    = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """One P-token forward reading out Q answers vs prefill + G generated tokens: latency, GPU
    time (decode batched), $ per million input tokens (§3.2.4; defaults are the chapter's).
    --request-usd with --usd-per-million-input infers P from a bill."""
    from napkin.catalog import load_model
    from napkin.inference.decision import (
        batched_generation_gpu_s,
        decision_vs_generation,
        prompt_tokens_for_price,
        usd_per_million,
    )
    from napkin.report.econ_views import table_doc
    from napkin.units import MS, TFLOP

    require(gpu is not None, "gpu: give an accelerator id")
    require((request_usd is None) == (usd_per_million_input is None),
            "request-usd: give it together with --usd-per-million-input")
    notes = []
    if request_usd is not None and usd_per_million_input is not None:
        prompt = prompt_tokens_for_price(request_usd, usd_per_million_input)
        notes.append(f"P = ${request_usd:g} / ${usd_per_million_input:g} per 1M = "
                     f"{prompt:,} input tokens")
    lengths = parse_ints(gen_range, "gen-range") if gen_range else []
    dep = deployment(load_model(ref), accelerator(gpu, None, None, None), weights, kv, False,
                     mfu, mbu, 0.0)
    c = decision_vs_generation(dep, prompt, questions, gen, usd_per_gpu_hour, decode_batch)
    g = c.generation
    gen_usd = usd_per_million(g.e2e_s, prompt, usd_per_gpu_hour)
    by_length = {n: batched_generation_gpu_s(dep, prompt, n, decode_batch)
                 / c.decision_time.time_s for n in lengths}
    rows = [
        ["decision forward", f"{c.decision.flops / TFLOP:,.2f} TFLOPs",
         f"{c.decision_time.time_s / MS:,.1f} ms",
         f"${c.decision_usd_per_million_input_tokens:.4f}"],
        [f"prefill + {gen} tokens", f"{(g.prefill.flops + g.decode_flops) / TFLOP:,.2f} TFLOPs",
         f"{g.e2e_s / MS:,.1f} ms (TPOT {g.tpot_s / MS:,.2f} ms)",
         f"${gen_usd:.4f} (one sequence alone)"],
        [f"prefill + {gen} tokens, decode batched at {decode_batch}", "",
         f"{c.generation_gpu_s / MS:,.1f} ms GPU time ({c.gpu_time_ratio:.2f}× the decision)",
         f"${usd_per_million(c.generation_gpu_s, prompt, usd_per_gpu_hour):.4f}"],
    ]
    rows += [[f"prefill + {n} tokens, decode batched at {decode_batch}", "", f"{r:.2f}× the "
              "decision's GPU time", ""] for n, r in by_length.items()]
    emit(table_doc("Decision request vs generation", "one request",
                   ["path", "work", "latency", "$ per 1M input tokens"], rows,
                   {"comparison": c, "generation_usd_per_million_input_tokens": gen_usd,
                    "latency_ratio": c.latency_ratio, "gpu_time_ratio": c.gpu_time_ratio,
                    "gpu_time_ratio_by_gen": {str(n): r for n, r in by_length.items()}},
                   {"model": ref, "prompt": prompt, "questions": questions, "gen": gen,
                    "gpu": gpu, "request_usd": request_usd,
                    "usd_per_million_input": usd_per_million_input},
                   {"mfu": mfu, "mbu": mbu, "weights": weights, "usd_per_gpu_hour":
                    usd_per_gpu_hour, "decode_batch": decode_batch},
                   [*notes,
                    f"generation is {c.latency_ratio:.1f}× the decision latency but "
                    f"{c.gpu_time_ratio:.2f}× its GPU time: batched decode shares each step "
                    f"among {decode_batch} requests",
                    "escalation: napkin cost escalation --decision-cost … --llm-cost …"]), fmt)


def ced(
    prompt: Annotated[int, typer.Option("--prompt", help="Prompt tokens P.")] = 8192,
    encoder_layers: Annotated[int, typer.Option("--encoder-layers")] = 20,
    decoder_layers: Annotated[int, typer.Option("--decoder-layers")] = 20,
    replay: Annotated[int, typer.Option("--replay", help="Prompt tokens replayed through "
                                                         "the decoder.")] = 128,
    fmt: FormatOpt = Format.table,
) -> None:
    """Expert-layer passes of a prefill: (E + D)·P vs CED's E·P + D·min(P, replay)."""
    from napkin.inference.ced import expert_layer_passes
    from napkin.report.econ_views import table_doc

    p = expert_layer_passes(prompt, encoder_layers, decoder_layers, replay)
    emit(table_doc("CED expert-layer passes", f"P = {prompt:,}", ["path", "passes"],
                   [["all layers (E + D)·P", f"{p.full:,}"],
                    ["CED E·P + D·min(P, replay)", f"{p.ced:,}"],
                    ["CED / full", f"{p.ced_frac:.1%}"]],
                   {"passes": p}, {"prompt": prompt, "encoder_layers": encoder_layers,
                                   "decoder_layers": decoder_layers, "replay": replay}), fmt)
