"""Worked-example formulas as commands: ``napkin flops`` (6ND, D/N), ``napkin speculative``,
``napkin attention-matrix`` (naive score memory), ``napkin loss-mask`` (q26),
``napkin loss-norm`` (q24), ``napkin lora`` (q27) and ``napkin gpu-hours`` (over
:mod:`napkin.api.rules`)."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import rules as api
from napkin.cli.common import (
    FiniteArgument,
    FiniteOption,
    Format,
    FormatOpt,
    PlotOption,
    emit,
    finite,
)
from napkin.errors import NapkinError, require


def flops(
    ref: Annotated[
        str | None,
        typer.Argument(
            help="Catalog id or config.json (its total parameters are N).", metavar="[MODEL]"
        ),
    ] = None,
    params: Annotated[
        float | None,
        FiniteOption("--params", help="N, parameters (instead of a model, e.g. a nominal 6.7e9)."),
    ] = None,
    tokens: Annotated[float | None, FiniteOption(
        "--tokens", help="D, training tokens (default: Chinchilla's 20 per parameter).")] = None,
    context: Annotated[int | None, typer.Option(
        "--context", help="T, tokens per training sequence: attention's QKᵀ + AV and their "
                          "share of 6ND (needs MODEL; past max_position_embeddings with a "
                          "warning).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Training compute by the 6ND rule and tokens per parameter D/N (§3.6.2, q18; Chinchilla's
    compute-optimal D/N ≈ 20). For a MoE model also its routed + shared expert matmuls,
    18·n_L·h·f·(k_routed + k_shared) FLOPs per token and × D (§3.6.2, DeepSeek V4)."""
    emit(api.flops(ref, params=params, tokens=tokens, context=context), fmt)


def speculative(
    alpha: Annotated[
        float, FiniteOption("--alpha", help="Acceptance rate per drafted token in [0, 1].")
    ] = 0.8,
    k: Annotated[int, typer.Option("--k", help="Drafted tokens per verification.")] = 4,
    draft_cost: Annotated[
        float,
        FiniteOption("--draft-cost", help="One draft step's time in target steps (0: free draft)."),
    ] = 0.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Speculative decoding: tokens per verification (1 − α^{k+1})/(1 − α) and the speed-up
    over plain decode (1 − α^{k+1})/((1 − α)(k·c + 1)) (Leviathan et al. 2023; q39)."""
    emit(api.speculative(alpha=alpha, k=k, draft_cost=draft_cost), fmt)


def attention_matrix(
    ref: Annotated[str, typer.Argument(help="Catalog id or config.json.", metavar="MODEL")],
    seq: Annotated[
        int, typer.Option("--seq", min=1, max=10_000_000, help="Sequence length T.")
    ] = 8192,
    batch: Annotated[int, typer.Option("--batch", min=1, max=1_000_000, help="Sequences B.")] = 1,
    dtype: Annotated[
        str, typer.Option("--dtype", help="Score precision: bf16 fp16 fp8 int8.")
    ] = "bf16",
    fmt: FormatOpt = Format.table,
) -> None:
    """Memory of naive attention's T×T score matrix: B·H·T²·bytes per layer (and ×2 with the
    softmax output kept for backward), against the layer's KV cache; FlashAttention never
    materializes it."""
    emit(api.attention_matrix(ref, seq=seq, batch=batch, dtype=dtype), fmt)


def loss_mask(
    prompt: Annotated[
        int, typer.Option("--prompt", min=0, max=10**9, help="Prompt tokens P.")
    ] = 3000,
    answer: Annotated[
        int,
        typer.Option("--answer", min=1, max=10**9, help="Answer tokens A, closing token included."),
    ] = 100,
    fmt: FormatOpt = Format.table,
) -> None:
    """SFT without a loss mask: the share P/(P + A) of the loss terms that model the prompt
    instead of the answer (q26); with the mask (prompt labels −100) it is 0."""
    emit(api.loss_mask(prompt=prompt, answer=answer), fmt)


def _numbers(text: str, field: str) -> list[float]:
    """Comma-separated finite numbers (their range is the library's to check)."""
    try:
        return [finite(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(f"{field}: {text!r} must be comma-separated finite numbers") from None


def _counts(text: str, field: str) -> list[int]:
    """Comma-separated whole numbers."""
    values = _numbers(text, field)
    require(all(v == int(v) for v in values), f"{field}: {text!r} must be whole numbers")
    return [int(v) for v in values]


def loss_norm(
    tokens: Annotated[str, typer.Option(
        "--tokens", help="Labelled tokens of each micro-batch, comma-separated (100,900).")],
    mean_losses: Annotated[str | None, typer.Option(
        "--mean-losses", help="Mean loss of each micro-batch, nats/token (1.0,2.0).")] = None,
    loss_sums: Annotated[str | None, typer.Option(
        "--loss-sums", help="Or the summed loss of each micro-batch, nats.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Gradient accumulation: the per-token mean Σs/Σn against the mean of micro-batch means,
    and the weight each token gets under both (§3.5.2, q24)."""
    emit(api.loss_norm(
        tokens=_counts(tokens, "tokens"),
        mean_losses=_numbers(mean_losses, "mean-losses") if mean_losses is not None else None,
        loss_sums=_numbers(loss_sums, "loss-sums") if loss_sums is not None else None), fmt)


def lora(
    ref: Annotated[str | None, typer.Argument(
        help="Catalog id or config.json (with --proj).", metavar="[MODEL]")] = None,
    rank: Annotated[int, typer.Option("--rank", help="Adapter rank r.")] = 8,
    d_in: Annotated[int | None, typer.Option("--d-in", help="Input width of W.")] = None,
    d_out: Annotated[int | None, typer.Option("--d-out", help="Output width of W.")] = None,
    proj: Annotated[str, typer.Option(
        "--proj", help="The MODEL's projection: attn/q attn/k attn/v attn/o mlp/gate mlp/up "
                       "mlp/down.")] = "attn/q",
    fmt: FormatOpt = Format.table,
) -> None:
    """LoRA on one matrix: r·(d_in + d_out) trainable parameters beside the frozen d_in·d_out
    (q27), from --d-in/--d-out or a MODEL's --proj."""
    emit(api.lora(ref, rank=rank, d_in=d_in, d_out=d_out, proj=proj), fmt)


def gpu_hours(
    hours: Annotated[float, FiniteArgument(help="GPU-hours of --gpu.", metavar="GPU_HOURS")],
    gpu: Annotated[str, typer.Option("--gpu", help="Accelerator the hours are on.")] = "h100-sxm",
    devices: Annotated[
        int, typer.Option("--devices", min=1, max=10_000_000, help="Accelerators running at once.")
    ] = 1,
    as_gpu: Annotated[
        list[str] | None,
        typer.Option("--as", help="Express in hours of this accelerator too (repeatable)."),
    ] = None,
    plot: Annotated[Path | None, PlotOption(
        help="Write the figure: hours per accelerator, days against devices (png/svg).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """GPU-hours ↔ calendar days (hours / devices / 24, running without stops) ↔ another
    accelerator's hours at the same utilization (× dense BF16 peak ratio; §3.6.2)."""
    result = api.gpu_hours(hours, gpu=gpu, devices=devices, as_gpu=as_gpu or ())
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)
