"""A prefill-only decision request vs generation, and CED expert-layer passes:
``napkin decision | ced`` (chapter 3.2.4)."""

from collections.abc import Sequence

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, ModelRef, deployment, load_model
from napkin.errors import require
from napkin.inference.ced import expert_layer_passes
from napkin.inference.decision import (
    batched_generation_gpu_s,
    decision_vs_generation,
    prompt_tokens_for_price,
    usd_per_million,
)
from napkin.report.econ_views import table_doc
from napkin.units import MS, TFLOP


@checked
def decision(model: ModelRef, *, prompt: int = 1929, questions: int = 8, gen: int = 64,
             gpu: GpuRef | None = "h100-sxm", weights: str = "bf16", kv_dtype: str = "bf16",
             mfu: float = 0.4, mbu: float = 0.5, usd_per_gpu_hour: float = 2.0,
             decode_batch: int = 64, gen_range: Sequence[int] = (),
             request_usd: float | None = None,
             usd_per_million_input: float | None = None) -> Result:
    """What a prefill-only decision request costs against an LLM that generates (§3.2.4;
    the defaults are the chapter's).

    The decision path is one forward of ``prompt`` tokens P reading out ``questions`` answers
    Q (the LM head runs Q times, no KV kept); the generating path is the prefill plus
    ``gen`` − 1 decode steps. Times are roofline ``max(FLOPs/(peak·mfu), bytes/(BW·mbu))``
    on ``gpu``, seconds. Latency is one request alone; GPU time batches decode at
    ``decode_batch`` B: ``t(prefill P) + Σ_{j=1}^{G−1} t(decode of B at P + j)/B``. Cost per
    million input tokens at ``usd_per_gpu_hour``: ``seconds · price/3600 · 1e6/P`` ($).
    ``gen_range`` also compares the generating GPU time at those generated lengths, as a
    multiple of the decision's. ``request_usd`` with ``usd_per_million_input`` (both $) sets
    ``P = round(request_usd/usd_per_million_input · 1e6)`` from a bill.

    ``value``: dict with ``comparison`` (the
    :class:`~napkin.inference.decision.DecisionComparison`),
    ``generation_usd_per_million_input_tokens`` (one sequence alone, $) and
    ``gpu_time_ratio_by_gen`` (generated length → GPU-time ratio).
    """
    require(gpu is not None, "gpu: give an accelerator id")
    require((request_usd is None) == (usd_per_million_input is None),
            "request-usd: give it together with --usd-per-million-input")
    notes = []
    if request_usd is not None and usd_per_million_input is not None:
        prompt = prompt_tokens_for_price(request_usd, usd_per_million_input)
        notes.append(f"P = ${request_usd:g} / ${usd_per_million_input:g} per 1M = "
                     f"{prompt:,} input tokens")
    lengths = list(gen_range)
    require(all(isinstance(n, int) and n >= 1 for n in lengths),
            f"gen-range: values must be integers >= 1, got {gen_range!r}")
    spec = load_model(model)
    dep = deployment(spec, gpu, weights=weights, kv_dtype=kv_dtype, mfu=mfu, mbu=mbu)
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
    doc = table_doc(
        "Decision request vs generation", "one request",
        ["path", "work", "latency", "$ per 1M input tokens"], rows,
        {"comparison": c, "generation_usd_per_million_input_tokens": gen_usd,
         "latency_ratio": c.latency_ratio, "gpu_time_ratio": c.gpu_time_ratio,
         "gpu_time_ratio_by_gen": {str(n): r for n, r in by_length.items()}},
        {"model": model if isinstance(model, str) else spec.name, "prompt": prompt,
         "questions": questions, "gen": gen, "gpu": gpu if isinstance(gpu, str) else dep.acc.id,
         "request_usd": request_usd, "usd_per_million_input": usd_per_million_input},
        {"mfu": mfu, "mbu": mbu, "weights": weights, "usd_per_gpu_hour": usd_per_gpu_hour,
         "decode_batch": decode_batch},
        [*notes,
         f"generation is {c.latency_ratio:.1f}× the decision latency but "
         f"{c.gpu_time_ratio:.2f}× its GPU time: batched decode shares each step "
         f"among {decode_batch} requests",
         "escalation: napkin cost escalation --decision-cost … --llm-cost …"])
    return Result(doc, {"comparison": c, "generation_usd_per_million_input_tokens": gen_usd,
                        "gpu_time_ratio_by_gen": by_length})


@checked
def ced(*, prompt: int = 8192, encoder_layers: int = 20, decoder_layers: int = 20,
        replay: int = 128) -> Result:
    """How many token-layer passes a CED (encoder–decoder) prefill saves (§3.2.4).

    A plain decoder sends each of the ``prompt`` tokens P through all E + D layers:
    ``(E + D)·P`` passes; CED sends them through the ``encoder_layers`` E and replays only the
    last ``replay`` tokens through the ``decoder_layers`` D: ``E·P + D·min(P, replay)``.
    ``value``: the :class:`~napkin.inference.ced.LayerPasses` (``full``, ``ced``,
    ``ced_frac``).
    """
    p = expert_layer_passes(prompt, encoder_layers, decoder_layers, replay)
    doc = table_doc("CED expert-layer passes", f"P = {prompt:,}", ["path", "passes"],
                    [["all layers (E + D)·P", f"{p.full:,}"],
                     ["CED E·P + D·min(P, replay)", f"{p.ced:,}"],
                     ["CED / full", f"{p.ced_frac:.1%}"]],
                    {"passes": p}, {"prompt": prompt, "encoder_layers": encoder_layers,
                                    "decoder_layers": decoder_layers, "replay": replay})
    return Result(doc, p)
