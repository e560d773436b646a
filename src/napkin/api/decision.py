"""A prefill-only decision request vs generation, and CED expert-layer passes:
``napkin decision | ced`` (chapter 3.2.4)."""

from collections.abc import Sequence
from pathlib import Path

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, ModelRef, deployment, load_model
from napkin.errors import require
from napkin.inference.ced import CedPath, expert_layer_passes
from napkin.inference.decision import (
    batched_generation_gpu_s,
    decision_vs_generation,
    memory_fit,
    price_over_compute,
    prompt_tokens_for_price,
    tariff_split,
    usd_per_million,
)
from napkin.report.document import Document, Section
from napkin.report.econ_views import table_doc
from napkin.units import GB, MS, TFLOP


@checked
def decision(model: ModelRef, *, prompt: int = 1929, questions: int = 8, gen: int = 64,
             gpu: GpuRef | None = "h100-sxm", weights: str = "bf16", kv_dtype: str = "bf16",
             mfu: float = 0.4, mbu: float = 0.5, usd_per_gpu_hour: float = 2.0,
             decode_batch: int = 64, gen_range: Sequence[int] = (),
             request_usd: float | None = None,
             usd_per_million_input: float | None = None, llm_usd: float | None = None,
             ced: bool = False, encoder_layers: int | None = None,
             replay: int = 128) -> Result:
    """What a prefill-only decision request costs against an LLM that generates (§3.2.4;
    the defaults are the chapter's).

    The decision path is one forward of ``prompt`` tokens P reading out ``questions`` answers
    Q (the LM head runs Q times, no KV kept); the generating path is the prefill plus
    ``gen`` − 1 decode steps. Times are roofline ``max(FLOPs/(peak·mfu), bytes/(BW·mbu))``
    on ``gpu``, seconds. Latency is one request alone; GPU time batches decode at
    ``decode_batch`` B: ``t(prefill P) + Σ_{j=1}^{G−1} t(decode of B at P + j)/B``. Cost per
    million input tokens at ``usd_per_gpu_hour``: ``seconds · price/3600 · 1e6/P`` ($); the
    compute cost uses the FLOPs time alone. ``gen_range`` also compares the generating GPU
    time at those generated lengths, as a multiple of the decision's.

    ``ced``: the decision forward takes the CED path — the first ``encoder_layers`` E layers
    (default half the model's) see all P tokens, the other D replay the last ``replay`` tokens
    through their expert matrices: expert-layer passes ``E·P + D·min(P, replay)``
    (:func:`napkin.inference.ced.ced_prefill`).

    ``usd_per_million_input`` (a provider's price, $ per 1e6 input tokens): the price ÷
    compute ratio; with ``request_usd`` ($, one request's bill) it also sets
    ``P = round(request_usd/usd_per_million_input · 1e6)``. ``llm_usd`` ($, the generating
    LLM's bill for the same request, with ``request_usd``): the ratio of the two bills split
    into the GPU time generation adds and the rest.

    A warning line says when weights + the KV of P + G − 1 tokens exceed one GPU's memory
    (the times assume one GPU holds them).

    ``value``: dict with ``comparison`` (the
    :class:`~napkin.inference.decision.DecisionComparison`),
    ``generation_usd_per_million_input_tokens`` (one sequence alone, $),
    ``gpu_time_ratio_by_gen`` (generated length → GPU-time ratio), ``price_over_compute``,
    ``tariff`` (:class:`~napkin.inference.decision.TariffSplit` or None), ``fit``
    (:class:`~napkin.inference.decision.MemoryFit`) and ``ced`` (CED passes or None).
    ``.plot(path)``: the two paths on one time axis (Figure 3-15).
    """
    require(gpu is not None, "gpu: give an accelerator id")
    require(request_usd is None or usd_per_million_input is not None,
            "request-usd: give it together with --usd-per-million-input")
    require(llm_usd is None or request_usd is not None,
            "llm-usd: give it together with --request-usd (the decision's bill)")
    notes = []
    if request_usd is not None and usd_per_million_input is not None:
        prompt = prompt_tokens_for_price(request_usd, usd_per_million_input)
        notes.append(f"P = ${request_usd:g} / ${usd_per_million_input:g} per 1M = "
                     f"{prompt:,} input tokens")
    lengths = list(dict.fromkeys(gen_range))
    require(all(isinstance(n, int) and n >= 1 for n in lengths),
            f"gen-range: values must be integers >= 1, got {gen_range!r}")
    spec = load_model(model)
    dep = deployment(spec, gpu, weights=weights, kv_dtype=kv_dtype, mfu=mfu, mbu=mbu)
    path = None
    if ced:
        path = CedPath(spec.num_layers // 2 if encoder_layers is None else encoder_layers,
                       replay)
    else:
        require(encoder_layers is None, "encoder-layers: applies with --ced")
        require(replay == 128, "replay: applies with --ced")
    c = decision_vs_generation(dep, prompt, questions, gen, usd_per_gpu_hour, decode_batch, path)
    g = c.generation
    gen_usd = usd_per_million(g.e2e_s, prompt, usd_per_gpu_hour)
    by_length = {n: batched_generation_gpu_s(dep, prompt, n, decode_batch)
                 / c.decision_time.time_s for n in lengths}
    forward = "decision forward" + (
        f" (CED: {path.encoder_layers} encoder + {spec.num_layers - path.encoder_layers} "
        f"decoder layers, replay {path.replay_tokens})" if path else "")
    rows = [
        [forward, f"{c.decision.flops / TFLOP:,.2f} TFLOPs",
         f"{c.decision_time.time_s / MS:,.1f} ms",
         f"${c.decision_usd_per_million_input_tokens:.4f}" + (
             "" if c.decision_time.bound == "compute" else
             f" (compute alone ${c.compute_usd_per_million_input_tokens:.4f})")],
        [f"prefill + {gen} tokens", f"{(g.prefill.flops + g.decode_flops) / TFLOP:,.2f} TFLOPs",
         f"{g.e2e_s / MS:,.1f} ms (TPOT {g.tpot_s / MS:,.2f} ms)",
         f"${gen_usd:.4f} (one sequence alone)"],
        [f"prefill + {gen} tokens, decode batched at {decode_batch}", "",
         f"{c.generation_gpu_s / MS:,.1f} ms GPU time ({c.gpu_time_ratio:.2f}× the decision)",
         f"${usd_per_million(c.generation_gpu_s, prompt, usd_per_gpu_hour):.4f}"],
    ]
    rows += [[f"prefill + {n} tokens, decode batched at {decode_batch}", "", f"{r:.2f}× the "
              "decision's GPU time", ""] for n, r in by_length.items() if n != gen]
    sections: list[Section] = []
    ratio = tariff = None
    if usd_per_million_input is not None:
        ratio = price_over_compute(usd_per_million_input, c.compute_usd_per_million_input_tokens)
        price_rows = [["provider's price", f"${usd_per_million_input:g} per 1M input tokens"],
                      ["compute cost of this forward",
                       f"${c.compute_usd_per_million_input_tokens:.4f} per 1M at "
                       f"${usd_per_gpu_hour:g}/GPU-hour, MFU {mfu:g}"],
                      ["price ÷ compute", f"{ratio:.2f}×"],
                      ["compute per token the price pays for at cost",
                       f"{ratio * c.decision.flops / prompt / 1e9:,.1f} GFLOPs/token "
                       f"({ratio:.2f}× this forward's)"]]
        if llm_usd is not None and request_usd is not None:
            tariff = tariff_split(request_usd, llm_usd, c.gpu_time_ratio)
            price_rows += [["LLM bill ÷ decision bill",
                            f"${llm_usd:g} / ${request_usd:g} = {tariff.bill_ratio:,.1f}×"],
                           [f"of it, skipping {gen} generated tokens (GPU time)",
                            f"{tariff.gpu_time_ratio:.2f}×"],
                           ["the rest (the LLM's price, tokens it generates while thinking)",
                            f"{tariff.rest_ratio:,.1f}×"]]
        sections.append(Section("price against compute", ["item", "value"], price_rows))
    fit = memory_fit(dep, prompt + gen - 1)
    if not fit.fits:
        notes.append(f"warning: weights {fit.weights_bytes / GB:,.1f} GB + KV "
                     f"{fit.kv_bytes / GB:,.2f} GB exceed the {fit.memory_bytes / GB:,.0f} GB of "
                     f"one {dep.acc.id}: it takes at least {fit.devices_needed} of them; the "
                     "times above assume one GPU holds the model")
    passes = None
    if path is not None:
        passes = expert_layer_passes(prompt, path.encoder_layers,
                                     spec.num_layers - path.encoder_layers, path.replay_tokens)
        notes.append(f"CED expert-layer passes {passes.ced:,} vs {passes.full:,} on all layers "
                     f"({passes.ced_frac:.1%}); attention, projections and the LM head still "
                     "run for all P tokens; the generating path runs every layer")
    sections.insert(0, Section(
        "one request", ["path", "work", "latency", "$ per 1M input tokens"], rows,
        [*notes,
         f"generation is {c.latency_ratio:.1f}× the decision latency but "
         f"{c.gpu_time_ratio:.2f}× its GPU time: batched decode shares each step "
         f"among {decode_batch} requests",
         "escalation: napkin cost escalation --decision-cost … --llm-cost …"]))
    value = {"comparison": c, "generation_usd_per_million_input_tokens": gen_usd,
             "gpu_time_ratio_by_gen": by_length, "price_over_compute": ratio,
             "tariff": tariff, "fit": fit, "ced": passes}
    data = {**value, "latency_ratio": c.latency_ratio, "gpu_time_ratio": c.gpu_time_ratio,
            "decision_flops": c.decision.flops,
            "compute_usd_per_million_input_tokens": c.compute_usd_per_million_input_tokens,
            "gpu_time_ratio_by_gen": {str(n): r for n, r in by_length.items()}}
    doc = Document(
        "Decision request vs generation",
        {"model": model if isinstance(model, str) else spec.name, "prompt": prompt,
         "questions": questions, "gen": gen, "gpu": gpu if isinstance(gpu, str) else dep.acc.id,
         "request_usd": request_usd, "usd_per_million_input": usd_per_million_input,
         "llm_usd": llm_usd, "ced": ced,
         **({"encoder_layers": path.encoder_layers, "replay": path.replay_tokens}
            if path else {})},
        {"mfu": mfu, "mbu": mbu, "weights": weights, "usd_per_gpu_hour": usd_per_gpu_hour,
         "decode_batch": decode_batch}, sections, data)

    def plotter(target: Path) -> None:
        from napkin.report.decision_plots import plot_decision_timeline

        plot_decision_timeline(c, forward, target)

    return Result(doc, value, plotter)


@checked
def ced(*, prompt: int = 8192, encoder_layers: int = 20, decoder_layers: int = 20,
        replay: int = 128) -> Result:
    """How many token-layer passes a CED (encoder–decoder) prefill saves (§3.2.4).

    A plain decoder sends each of the ``prompt`` tokens P through all E + D layers:
    ``(E + D)·P`` passes; CED sends them through the ``encoder_layers`` E and replays only the
    last ``replay`` tokens through the ``decoder_layers`` D: ``E·P + D·min(P, replay)``.
    ``value``: the :class:`~napkin.inference.ced.LayerPasses` (``full``, ``ced``,
    ``ced_frac``). ``.plot(path)``: both paths' passes against P (1 to 4·max(P, replay),
    log axes) with the user's P marked (Figure 3-14 as a curve).
    """
    p = expert_layer_passes(prompt, encoder_layers, decoder_layers, replay)
    doc = table_doc("CED expert-layer passes", f"P = {prompt:,}", ["path", "passes"],
                    [["all layers (E + D)·P", f"{p.full:,}"],
                     ["CED E·P + D·min(P, replay)", f"{p.ced:,}"],
                     ["CED / full", f"{p.ced_frac:.1%}"]],
                    {"passes": p}, {"prompt": prompt, "encoder_layers": encoder_layers,
                                    "decoder_layers": decoder_layers, "replay": replay})

    def plotter(target: Path) -> None:
        from napkin.report.decision_plots import plot_ced_passes

        top = 4 * max(prompt, replay)
        lengths = sorted({round(top ** (i / 200)) for i in range(201)} | {prompt})
        plot_ced_passes([expert_layer_passes(n, encoder_layers, decoder_layers, replay)
                         for n in lengths], p, target)

    return Result(doc, p, plotter)
