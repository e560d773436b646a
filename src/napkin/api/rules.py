"""Worked-example formulas: ``napkin flops | speculative | attention-matrix | loss-mask |
gpu-hours``."""

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, ModelRef, load_gpu, load_model
from napkin.errors import require
from napkin.report.econ_views import result_doc

if TYPE_CHECKING:
    from napkin.specs.model import ModelSpec


def _positive(value: float, field: str) -> float:
    require(value == value and 0 < value < float("inf"),
            f"{field}: must be a finite number > 0, got {value}")
    return value


MAX_CONTEXT = 10_000_000
"""Longest training sequence ``flops --context`` counts (tokens)."""


def _within(value: int, low: int, high: int, field: str) -> None:
    require(low <= value <= high, f"{field}: must be in [{low:,}, {high:,}], got {value}")


@checked
def flops(model: ModelRef | None = None, *, params: float | None = None,
          tokens: float | None = None, context: int | None = None) -> Result:
    """Training compute by the 6ND rule and tokens per parameter D/N (§3.6.2, q18).

    ``C = 6·N·D`` FLOPs (2N forward + 4N backward per token) for N parameters (``params``, or
    the parameters of ``model`` — a MoE's active ones, top-k routed plus shared experts, since
    a token passes only those; give one of the two) and D = ``tokens`` training tokens
    (default: Chinchilla's D = 20·N, so C = 120·N²);
    D/N beside Chinchilla's compute-optimal 20. For a MoE ``model`` also its routed + shared
    expert matmuls, ``18·n_L·h·f·(k_routed + k_shared)`` FLOPs per token (3 SwiGLU projections
    × 2 FLOPs per multiply-add × 3 for forward + backward) and × D (DeepSeek V4).
    With ``context`` T (tokens per training sequence; needs ``model``): what 6ND leaves out,
    causal attention's QKᵀ and AV forward + backward for one sequence, and its share of
    ``6·N·T`` with N the active parameters without embedding and head (q18: ≈ T/(12d), +8% at
    4K and +67% at 32K for d = 4,096); a T past the model's ``max_position_embeddings`` is
    counted with a warning (the model would need a context extension), not refused.
    ``value``: dict of the numbers (``params``, ``tokens``, ``train_flops``,
    ``tokens_per_param``; for a MoE also ``active_params``, ``total_params``,
    ``expert_train_flops_per_token``, ``expert_train_flops``; with ``context`` also
    ``context_tokens``, ``attention_flops_per_sequence``, ``attention_share_of_6nt``,
    ``warnings``).
    """
    from napkin.accounting.rules import tokens_per_parameter, train_flops_6nd
    from napkin.scaling.optimum import CHINCHILLA_TOKENS_PER_PARAM

    require((model is None) != (params is None),
            "params: give a MODEL or --params, not both and not neither")
    require(context is None or model is not None,
            "context: needs a MODEL (attention depends on its layers and heads)")
    spec = None
    if params is None:
        assert model is not None
        spec = load_model(model)
        # a token passes only its routed and shared experts: N of 6ND is the active count
        params = float(spec.active_params if spec.is_moe else spec.params)
    n = _positive(params, "params")
    chinchilla = tokens is None  # D = 20·N, Chinchilla's compute-optimal ratio
    d = CHINCHILLA_TOKENS_PER_PARAM * n if tokens is None else _positive(tokens, "tokens")
    c, ratio = train_flops_6nd(n, d), tokens_per_parameter(n, d)
    moe = spec is not None and spec.is_moe
    rows = [["N (active: top-k + shared experts)" if moe else "N", f"{n:.4g} parameters"],
            ["D", f"{d:.4g} tokens"], ["6ND", f"{c:.4g} FLOPs"], ["D/N", f"{ratio:,.1f}"]]
    data: dict[str, float] = {"params": n, "tokens": d, "train_flops": c,
                              "tokens_per_param": ratio}
    notes = [f"D = 20·N = {d:.4g} tokens (no --tokens given: Chinchilla's compute-optimal "
             f"ratio), so 6ND = 6·N·20N = 120·N² = {c:.4g} FLOPs" if chinchilla else
             f"D/N {ratio / 20:.1f}× Chinchilla's 20 tokens per parameter"]
    if spec is not None and spec.is_moe:
        from napkin.training.flops import expert_train_flops_per_token

        per_token = expert_train_flops_per_token(spec)
        total = float(spec.params)
        rows += [["total parameters (memory, not compute)", f"{total:.4g} parameters"],
                 ["6 · total · D (the mistake to avoid)", f"{train_flops_6nd(total, d):.4g} "
                                                           "FLOPs"],
                 ["expert matmuls per token (fwd + bwd)", f"{per_token / 1e9:,.4f} GFLOPs"],
                 ["expert matmuls × D", f"{per_token * d:.6g} FLOPs"]]
        data |= {"active_params": float(spec.active_params), "total_params": total,
                 "expert_train_flops_per_token": per_token,
                 "expert_train_flops": per_token * d}
        notes.insert(0, "a MoE token passes only its top-k routed and shared experts: 6ND and "
                        "D/N count the active parameters (the total sizes the weights in "
                        "memory, not the compute)")
        notes.append("expert matmuls: 3 SwiGLU projections × 2 FLOPs per multiply-add × 3 "
                     "(forward + backward) per routed and shared expert a token passes, "
                     "18·n_L·h·f·(k_routed + k_shared); attention, routers, head, MTP, "
                     "optimizer and recompute come on top")
    label = model if model is None or isinstance(model, str) else model.name
    inputs: dict[str, object] = {"model": label, "params": n, "tokens": d}
    if context is not None:
        assert spec is not None
        extra, warnings = _attention_rows(spec, context)
        rows += extra[0]
        data |= extra[1]
        notes += extra[2] + [f"warning: {w}" for w in warnings]
        data["warnings"] = warnings  # type: ignore[assignment]
        inputs["context"] = context
    return Result(result_doc("Training compute: 6ND", rows, data, inputs, notes), dict(data))


def _attention_rows(spec: "ModelSpec", context: int
                    ) -> tuple[tuple[list[list[str]], dict[str, float], list[str]], list[str]]:
    """``flops --context``: the attention rows, data and notes, and the warnings."""
    from napkin.training.attention_share import attention_share, matmul_params

    _within(context, 1, MAX_CONTEXT, "context")
    limit = spec.max_position_embeddings
    warnings = ([f"context: {context:,} tokens exceeds {spec.name}'s max_position_embeddings "
                 f"({limit:,}); counted as if the model ran at this length, which needs a "
                 "context extension (RoPE scaling such as YaRN, then fine-tuning on long "
                 "texts): changing the config alone is not enough"]
                if limit and context > limit else [])
    att = attention_share(spec, context)
    rows = [[f"attention per {context:,}-token sequence (QKᵀ + AV, causal, fwd + bwd)",
             f"{att.attention_flops:.4g} FLOPs"],
            ["6·N·T (N without embedding and head)", f"{att.six_nt_flops:.4g} FLOPs"],
            ["attention on top of 6ND", f"{att.share:.1%}"]]
    data = {"context_tokens": float(context),
            "attention_flops_per_sequence": att.attention_flops,
            "six_nt_flops": att.six_nt_flops, "attention_share_of_6nt": att.share}
    notes = [f"attention share = attention / (6·N·T), N = {matmul_params(spec):.4g} active "
             "parameters without embedding and head (q18); QKᵀ and AV have no parameters, so "
             "6ND misses them, and they grow as T² against 6ND's T"]
    return (rows, data, notes), warnings


@checked
def speculative(*, alpha: float = 0.8, k: int = 4, draft_cost: float = 0.0) -> Result:
    """Speculative decoding: mean tokens per verification and the speed-up over plain decode
    (Leviathan et al. 2023; q39).

    Each of the ``k`` drafted tokens is accepted independently with probability ``alpha``; the
    first rejection ends the run and the target adds one token of its own:
    ``(1 − α^{k+1})/(1 − α)`` tokens per verification (k + 1 at α = 1). A draft step costs
    ``draft_cost`` target steps c, so the speed-up in steps is
    ``(1 − α^{k+1})/((1 − α)(k·c + 1))``. ``value``: dict with ``tokens_per_verification``
    and ``speedup``.
    """
    from napkin.inference.speculative import expected_tokens, speedup

    per, gain = expected_tokens(alpha, k), speedup(alpha, k, draft_cost)
    data = {"tokens_per_verification": per, "speedup": gain}
    return Result(result_doc(
        "Speculative decoding",
        [["tokens per verification", f"{per:.3f}"], ["speed-up in steps", f"{gain:.3f}×"]],
        data, {"alpha": alpha, "k": k, "draft_cost": draft_cost},
        ["tokens are accepted independently with probability α; the first rejection ends the "
         "run and the target adds one token of its own"]), dict(data))


@checked
def attention_matrix(model: ModelRef, *, seq: int = 8192, batch: int = 1,
                     dtype: str = "bf16") -> Result:
    """Memory of naive attention's T×T score matrix against the layer's KV cache.

    Scores per layer ``B·H·T²·bytes`` (B = ``batch`` sequences, H the most query heads of a
    layer, T = ``seq`` tokens, bytes per element of ``dtype``: bf16 fp16 fp8 int8), twice
    that with the softmax output kept for backward; the KV cache of one layer at T tokens
    (bytes; the mean over the attention layers, linear-attention layers apart).
    FlashAttention never materializes the matrix. ``value``: dict with ``heads``,
    ``scores_bytes_per_layer``, ``scores_and_probs_bytes_per_layer``, ``kv_bytes_per_layer``.
    """
    from napkin.accounting.rules import attention_scores_bytes
    from napkin.specs.dtypes import kv_format
    from napkin.units import GB, GiB

    spec = load_model(model)
    _within(seq, 1, 10_000_000, "seq")
    _within(batch, 1, 1_000_000, "batch")
    element = kv_format(dtype).bytes_per_element
    attending = [g for g in spec.layer_groups if g.block.linear_attention is None]
    heads = max(g.block.attention.num_heads for g in attending)
    one = attention_scores_bytes(batch, heads, seq, element)
    # per attention layer: linear-attention layers have neither scores nor a KV cache
    kv_layer = spec.kv_bytes(seq, element) * batch / sum(g.num_layers for g in attending)
    rows = [
        ["heads H", str(heads)],
        ["scores per layer", f"{one / GB:,.3f} GB ({one / GiB:,.3f} GiB)"],
        ["scores + softmax kept for backward", f"{2 * one / GB:,.3f} GB"],
        ["KV cache of the same layer", f"{kv_layer / GB:,.3f} GB"],
        ["scores / KV", f"{one / kv_layer:,.1f}×" if kv_layer else "—"],
    ]
    data = {"heads": heads, "scores_bytes_per_layer": one,
            "scores_and_probs_bytes_per_layer": 2 * one, "kv_bytes_per_layer": kv_layer}
    label = model if isinstance(model, str) else spec.name
    return Result(result_doc(f"Naive attention matrix of {spec.name}", rows, data,
                             {"model": label, "seq": seq, "batch": batch, "dtype": dtype},
                             ["grows as T²; the KV cache grows as T"]), dict(data))


@checked
def loss_mask(*, prompt: int = 3000, answer: int = 100) -> Result:
    """SFT without a loss mask: the share of the loss terms that model the prompt (q26).

    A sample of P = ``prompt`` tokens and A = ``answer`` tokens (closing token included) has
    P + A loss terms without a mask, a share ``P/(P + A)`` of them about the prompt; with the
    mask (prompt labels −100) only the A answer terms remain. ``value``: dict with
    ``prompt_share_unmasked``, ``terms_unmasked``, ``terms_masked``.
    """
    from napkin.training.loss_norm import unmasked_prompt_share

    _within(prompt, 0, 10**9, "prompt")
    _within(answer, 1, 10**9, "answer")
    share = unmasked_prompt_share(prompt, answer)
    data = {"prompt_share_unmasked": share, "terms_unmasked": prompt + answer,
            "terms_masked": answer}
    return Result(result_doc(
        "SFT loss mask",
        [["loss terms without a mask", f"{prompt + answer:,}"],
         ["of them about the prompt", f"{share:.1%}"],
         ["loss terms with the mask", f"{answer:,}"]],
        data, {"prompt": prompt, "answer": answer}), dict(data))


@checked
def loss_norm(*, tokens: Sequence[int], mean_losses: Sequence[float] | None = None,
              loss_sums: Sequence[float] | None = None) -> Result:
    """Loss normalization over the micro-batches of one accumulated batch (§3.5.2, q24).

    Micro-batch k has n_k = ``tokens[k]`` labelled tokens and a loss sum s_k (nats; give
    ``loss_sums``, or ``mean_losses`` m_k with s_k = n_k·m_k). The per-token mean
    ``Σ s_k / Σ n_k`` weighs every token ``1/N`` (N = Σ n_k); the mean of the micro-batch
    means ``(1/a)·Σ s_k/n_k`` (a micro-batches) weighs a token of micro-batch k
    ``1/(a·n_k)``, so tokens of short micro-batches count ``N/(a·n_k)`` times as much.
    ``value``: :class:`~napkin.training.loss_norm.LossNormalization`.
    """
    from napkin.training.loss_norm import from_loss_sums, loss_normalization

    require((mean_losses is None) != (loss_sums is None),
            "mean-losses: give --mean-losses or --loss-sums, one per micro-batch, not both")
    labels = list(tokens)
    norm = (loss_normalization(labels, list(mean_losses)) if mean_losses is not None
            else from_loss_sums(labels, list(loss_sums or ())))
    a, total = len(labels), sum(labels)
    rows = [[f"micro-batch {k + 1}", f"{n:,}", f"{m:.4g}", f"{norm.per_token_weight:.4g}",
             f"{norm.trap_weight(k):.4g}", f"{norm.token_weight(k):.3g}×"]
            for k, (n, m) in enumerate(zip(labels, norm.mean_losses, strict=True))]
    rows += [["per-token mean Σs/Σn", f"{total:,}", f"{norm.token_mean:.4g}", "", "", ""],
             [f"mean of the {a} micro-batch means", "", f"{norm.mean_of_means:.4g}", "", "",
              ""]]
    data = {"token_mean": norm.token_mean, "mean_of_means": norm.mean_of_means,
            "tokens": total,
            "micro_batches": [{"tokens": n, "mean_loss": m, "loss_sum": sk,
                               "weight_per_token": norm.per_token_weight,
                               "weight_mean_of_means": norm.trap_weight(k),
                               "weight_ratio": norm.token_weight(k)}
                              for k, (n, m, sk) in enumerate(zip(
                                  labels, norm.mean_losses, norm.loss_sums, strict=True))]}
    doc = result_doc("Loss normalization over micro-batches", rows, data,
                     {"tokens": labels, "mean_losses": list(norm.mean_losses)},
                     [f"right: divide the summed loss by all {total:,} labelled tokens of the "
                     "batch (every token weighs 1/N); the trap: average each micro-batch, then "
                     f"the {a} means (a token of micro-batch k weighs 1/(a·n_k))"],
                     ["", "labelled tokens", "mean loss, nats", "weight per token (right)",
                      "weight, mean of means", "ratio"])
    return Result(doc, norm)


@checked
def lora(model: ModelRef | None = None, *, rank: int = 8, d_in: int | None = None,
         d_out: int | None = None, proj: str = "attn/q") -> Result:
    """Trainable parameters of a LoRA adapter on one weight matrix (q27).

    ``W x + (α/r)·B A x`` with ``A: d_in → r`` and ``B: r → d_out`` adds ``r·(d_in + d_out)``
    parameters beside the frozen ``d_in·d_out`` of W (4096 × 4096 at r = 8: 65,536, 0.39% of
    16.8M). Give ``d_in`` and ``d_out``, or a ``model`` and the name ``proj`` of one of its
    projections (``attn/q``, ``attn/k``, ``attn/v``, ``attn/o``, ``mlp/gate``, ``mlp/up``,
    ``mlp/down``…), for which the count over every layer that has it is added.
    ``value``: dict with ``adapter_params``, ``matrix_params``, ``share``, ``d_in``,
    ``d_out``, ``rank`` (and ``layers``, ``adapter_params_all_layers`` with a model).
    """
    from napkin.specs.lora import adapter_params

    _within(rank, 1, 1_000_000, "rank")
    layers = 0
    if model is None:
        require(d_in is not None and d_out is not None,
                "d-in: give --d-in and --d-out, or a MODEL and --proj")
        assert d_in is not None and d_out is not None
        _within(d_in, 1, 10**9, "d-in")
        _within(d_out, 1, 10**9, "d-out")
        label = None
    else:
        require(d_in is None and d_out is None,
                "d-in: give --d-in/--d-out or a MODEL with --proj, not both")
        spec = load_model(model)
        found = [lin for b in spec.blocks for lin in b.linears if lin.name == proj]
        names = sorted({lin.name for b in spec.blocks for lin in b.linears})
        require(bool(found), f"proj: {proj!r} is not a projection of {spec.name}; it has "
                             f"{', '.join(names)}")
        d_in, d_out, layers = found[0].in_features, found[0].out_features, len(found)
        label = model if isinstance(model, str) else spec.name
    adapter, full = adapter_params(d_in, d_out, rank), d_in * d_out
    rows = [["W", f"{d_in:,} × {d_out:,} = {full:,} parameters (frozen)"],
            [f"A ({d_in:,} × {rank}) + B ({rank} × {d_out:,})",
             f"r·(d_in + d_out) = {adapter:,} parameters"],
            ["share of W", f"{adapter / full:.3%}"]]
    data: dict[str, float] = {"adapter_params": adapter, "matrix_params": full,
                              "share": adapter / full, "d_in": d_in, "d_out": d_out,
                              "rank": rank}
    if layers:
        rows.append([f"{proj} in all {layers} layers", f"{adapter * layers:,} parameters"])
        data |= {"layers": layers, "adapter_params_all_layers": adapter * layers}
    return Result(result_doc(
        "LoRA adapter on one matrix", rows, data,
        {"model": label, "proj": proj if label else None, "rank": rank, "d_in": d_in,
         "d_out": d_out},
        ["B starts at zero, so the model is unchanged at step 0; after training B·A merges "
         "into W and inference costs nothing extra"]), dict(data))


@checked
def gpu_hours(hours: float, *, gpu: GpuRef = "h100-sxm", devices: int = 1,
              as_gpu: Sequence[GpuRef] = ()) -> Result:
    """GPU-hours ↔ calendar days ↔ another accelerator's hours (§3.6.2).

    ``hours`` GPU-hours of ``gpu`` on ``devices`` accelerators at once take
    ``hours / devices / 24`` days of wall-clock time, running without stops; as hours of each
    accelerator in ``as_gpu`` at the same utilization: ``hours × peak(gpu) / peak(other)``
    (dense BF16 peaks). ``value``: dict with ``gpu_hours``, ``days`` and
    ``equivalent_hours`` (accelerator id → hours). The result has a figure (Figure 3-31's
    equivalent hours on a log axis, and calendar days against the number of devices).
    """
    from napkin.report.econ_views import full_number
    from napkin.training.schedule import calendar_days, equivalent_hours

    h = _positive(hours, "gpu-hours")
    acc = load_gpu(gpu)
    _within(devices, 1, 10_000_000, "devices")
    days = calendar_days(h, devices)
    rows = [[f"{acc.id} GPU-hours", full_number(h)],
            [f"calendar days on {devices:,}", f"{days:,.2f}"]]
    others: dict[str, float] = {}
    for other in as_gpu:
        target = load_gpu(other)
        others[target.id] = equivalent_hours(h, acc, target)
        v = others[target.id]
        rows.append([f"as {target.id} GPU-hours (BF16 peak ratio)",
                     f"{v:,.0f}" if v >= 100 else f"{v:,.4g}"])
    given = [g if isinstance(g, str) else g.id for g in as_gpu]
    by_gpu = {acc.id: h, **others}
    # devices 1, 2, 4, … past 4× the user's count, and the user's count itself
    counts = sorted({2 ** k for k in range(max(11, (4 * devices).bit_length()))} | {devices})
    curves = {gid: [calendar_days(v, n) for n in counts] for gid, v in by_gpu.items()}

    def plotter(path: Path) -> None:
        from napkin.report.cost_plots import plot_gpu_hours

        plot_gpu_hours(by_gpu, counts, curves, devices, path)

    return Result(result_doc(
        "GPU-hours", rows, {"gpu_hours": h, "days": days, "equivalent_hours": others},
        {"gpu_hours": h, "gpu": acc.id, "devices": devices, "as": given},
        ["equivalence assumes the same MFU on both; memory or interconnect limits may differ"]),
        {"gpu_hours": h, "days": days, "equivalent_hours": dict(others)}, plotter)
