"""Worked-example formulas as commands: ``napkin flops`` (6ND, D/N), ``napkin speculative``,
``napkin attention-matrix`` (naive score memory) and ``napkin loss-mask`` (q26)."""

from typing import Annotated

import typer

from napkin.cli.common import FiniteArgument, FiniteOption, Format, FormatOpt, emit
from napkin.errors import require
from napkin.report.econ_views import result_doc


def _positive(value: float, field: str) -> float:
    require(
        value == value and 0 < value < float("inf"),
        f"{field}: must be a finite number > 0, got {value}",
    )
    return value


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
    tokens: Annotated[float, FiniteOption("--tokens", help="D, training tokens.")] = 1e12,
    fmt: FormatOpt = Format.table,
) -> None:
    """Training compute by the 6ND rule and tokens per parameter D/N (§3.6.2, q18; Chinchilla's
    compute-optimal D/N ≈ 20). For a MoE model also its routed + shared expert matmuls,
    18·n_L·h·f·(k_routed + k_shared) FLOPs per token and × D (§3.6.2, DeepSeek V4)."""
    from napkin.accounting.rules import tokens_per_parameter, train_flops_6nd

    require(
        (ref is None) != (params is None),
        "params: give a MODEL or --params, not both and not neither",
    )
    model = None
    if params is None:
        from napkin.catalog import load_model

        model = load_model(str(ref))
        params = float(model.params)
    n, d = _positive(params, "params"), _positive(tokens, "tokens")
    c, ratio = train_flops_6nd(n, d), tokens_per_parameter(n, d)
    rows = [
        ["N", f"{n:.4g} parameters"],
        ["D", f"{d:.4g} tokens"],
        ["6ND", f"{c:.4g} FLOPs"],
        ["D/N", f"{ratio:,.1f}"],
    ]
    data: dict[str, float] = {"params": n, "tokens": d, "train_flops": c,
                              "tokens_per_param": ratio}
    notes = [f"D/N {ratio / 20:.1f}× Chinchilla's 20 tokens per parameter"]
    if model is not None and model.is_moe:
        from napkin.training.flops import expert_train_flops_per_token

        per_token = expert_train_flops_per_token(model)
        rows += [["active N (top-k + shared experts)", f"{model.active_params:.4g} parameters"],
                 ["expert matmuls per token (fwd + bwd)", f"{per_token / 1e9:,.4f} GFLOPs"],
                 ["expert matmuls × D", f"{per_token * d:.6g} FLOPs"]]
        data |= {"active_params": float(model.active_params),
                 "expert_train_flops_per_token": per_token,
                 "expert_train_flops": per_token * d}
        notes.append("expert matmuls: 3 SwiGLU projections × 2 FLOPs per multiply-add × 3 "
                     "(forward + backward) per routed and shared expert a token passes, "
                     "18·n_L·h·f·(k_routed + k_shared); attention, routers, head, MTP, "
                     "optimizer and recompute come on top")
    emit(
        result_doc("Training compute: 6ND", rows, data,
                   {"model": ref, "params": n, "tokens": d}, notes),
        fmt,
    )


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
    from napkin.inference.speculative import expected_tokens, speedup

    per, gain = expected_tokens(alpha, k), speedup(alpha, k, draft_cost)
    emit(
        result_doc(
            "Speculative decoding",
            [["tokens per verification", f"{per:.3f}"], ["speed-up in steps", f"{gain:.3f}×"]],
            {"tokens_per_verification": per, "speedup": gain},
            {"alpha": alpha, "k": k, "draft_cost": draft_cost},
            [
                "tokens are accepted independently with probability α; the first rejection "
                "ends the run and the target adds one token of its own"
            ],
        ),
        fmt,
    )


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
    from napkin.accounting.rules import attention_scores_bytes
    from napkin.catalog import load_model
    from napkin.specs.dtypes import kv_format
    from napkin.units import GB, GiB

    model = load_model(ref)
    fmt_ = kv_format(dtype)
    heads = max(g.block.attention.num_heads for g in model.layer_groups)
    one = attention_scores_bytes(batch, heads, seq, fmt_.bytes_per_element)
    kv_layer = model.kv_bytes(seq, fmt_.bytes_per_element) * batch / model.num_layers
    rows = [
        ["heads H", str(heads)],
        ["scores per layer", f"{one / GB:,.3f} GB ({one / GiB:,.3f} GiB)"],
        ["scores + softmax kept for backward", f"{2 * one / GB:,.3f} GB"],
        ["KV cache of the same layer", f"{kv_layer / GB:,.3f} GB"],
        ["scores / KV", f"{one / kv_layer:,.1f}×" if kv_layer else "—"],
    ]
    emit(
        result_doc(
            f"Naive attention matrix of {model.name}",
            rows,
            {
                "heads": heads,
                "scores_bytes_per_layer": one,
                "scores_and_probs_bytes_per_layer": 2 * one,
                "kv_bytes_per_layer": kv_layer,
            },
            {"model": ref, "seq": seq, "batch": batch, "dtype": dtype},
            ["grows as T²; the KV cache grows as T"],
        ),
        fmt,
    )


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
    from napkin.training.loss_norm import unmasked_prompt_share

    share = unmasked_prompt_share(prompt, answer)
    emit(
        result_doc(
            "SFT loss mask",
            [
                ["loss terms without a mask", f"{prompt + answer:,}"],
                ["of them about the prompt", f"{share:.1%}"],
                ["loss terms with the mask", f"{answer:,}"],
            ],
            {
                "prompt_share_unmasked": share,
                "terms_unmasked": prompt + answer,
                "terms_masked": answer,
            },
            {"prompt": prompt, "answer": answer},
        ),
        fmt,
    )


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
    fmt: FormatOpt = Format.table,
) -> None:
    """GPU-hours ↔ calendar days (hours / devices / 24, running without stops) ↔ another
    accelerator's hours at the same utilization (× dense BF16 peak ratio; §3.6.2)."""
    from napkin.catalog import load_accelerator
    from napkin.training.schedule import calendar_days, equivalent_hours

    h = _positive(hours, "gpu-hours")
    acc = load_accelerator(gpu)
    days = calendar_days(h, devices)
    rows = [[f"{acc.id} GPU-hours", f"{h:,.6g}"], [f"calendar days on {devices:,}", f"{days:,.2f}"]]
    others = {}
    for other in as_gpu or []:
        target = load_accelerator(other)
        others[target.id] = equivalent_hours(h, acc, target)
        rows.append([f"as {target.id} GPU-hours (BF16 peak ratio)", f"{others[target.id]:,.6g}"])
    emit(
        result_doc(
            "GPU-hours",
            rows,
            {"gpu_hours": h, "days": days, "equivalent_hours": others},
            {"gpu_hours": h, "gpu": acc.id, "devices": devices, "as": as_gpu or []},
            ["equivalence assumes the same MFU on both; memory or interconnect limits may differ"],
        ),
        fmt,
    )
