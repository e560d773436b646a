"""Turn library results into :class:`Document` objects (tables for humans, base units in JSON)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from napkin.accounting.forward import Precision, weight_bytes
from napkin.accounting.rules import flops_per_token_2n
from napkin.report.document import Document, Section
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.timing.roofline import Deployment, RooflineTime
from napkin.units import GB, KiB, MiB, fmt_bytes, fmt_count, fmt_flops, fmt_seconds

if TYPE_CHECKING:
    from napkin.accounting.energy import Energy
    from napkin.accounting.ops import CallCost
    from napkin.accounting.series import AffineRun
    from napkin.calibration.predict import CalibratedCall, CalibratedStep
    from napkin.calibration.profile import Profile
    from napkin.inference.capacity import Capacity
    from napkin.inference.chain import RequestChain
    from napkin.inference.decode import DecodeTable
    from napkin.inference.moe import MoETable


def _int(n: float) -> str:
    return f"{n:,.0f}"


def _gb_gib(n_bytes: float) -> str:
    return f"{fmt_bytes(n_bytes, 'GB')} ({fmt_bytes(n_bytes, 'GiB')})"


def unquantized_input(p: Precision) -> dict[str, str]:
    """``unquantized``: the parts kept in BF16, when there are any (printed with the inputs)."""
    return {"unquantized": ",".join(sorted(p.unquantized))} if p.unquantized else {}


def checkpoint_notes(model: ModelSpec, precision: Precision) -> list[str]:
    """A hint when the catalog model's public checkpoint keeps parts in BF16 at this format and
    none were named: what they are and the weight bytes with them."""
    from napkin.catalog.checkpoints import checkpoint_unquantized

    if precision.unquantized:
        return []
    keeps = checkpoint_unquantized(model.name, precision.weights.name)
    if not keeps:
        return []
    kept = weight_bytes(model, replace(precision, unquantized=keeps))
    return [f"{model.name}'s public {precision.weights.name} checkpoint keeps "
            f"{', '.join(sorted(keeps))} in BF16: {fmt_bytes(kept)} of weights against "
            f"{fmt_bytes(weight_bytes(model, precision))} here (--unquantized checkpoint, "
            "scenario key unquantized: checkpoint)"]


def assumptions(dep: Deployment) -> dict[str, Any]:
    """The knobs every timed result depends on, echoed with it."""
    p, e = dep.precision, dep.eff
    return {
        "weights": p.weights.name,
        "bits_per_weight": p.weights.bits_per_weight,
        "compute": p.weights.compute,
        "kv_dtype": p.kv.name,
        "read_embedding": p.read_embedding,
        **unquantized_input(p),
        "mfu": e.mfu,
        "mbu": e.mbu,
        "overhead_s": e.overhead_s,
        "gpu": dep.acc.id,
        "gpu_peak_flops_per_s": dep.acc.peak_flops_per_s(p.weights.compute),
        "gpu_mem_bytes_per_s": dep.acc.mem_bytes_per_s,
        "gpu_memory_bytes": dep.acc.memory_bytes,
    }


def models_doc(rows: list[tuple[str, str, ModelSpec]]) -> Document:
    cols = ["id", "Hugging Face repo", "params", "active", "layers", "attention",
            "KV/token (bf16)"]
    table = [[i, repo, fmt_count(m.params), fmt_count(m.active_params), str(m.num_layers),
              "+".join(dict.fromkeys(b.attention.kind for b in m.blocks)),
              fmt_bytes(m.kv_bytes_per_token(2), "KiB", 1)]
             for i, repo, m in rows]
    data = {"models": [{"id": i, "hf_repo": repo, "params": m.params,
                        "active_params": m.active_params, "num_layers": m.num_layers,
                        "kv_bytes_per_token_bf16": m.kv_bytes_per_token(2)}
                       for i, repo, m in rows]}
    return Document("Model catalog", {}, {}, [Section("models", cols, table)], data)


def gpus_doc(accs: list[Accelerator]) -> Document:
    cols = ["id", "name", "memory", "bandwidth", "bf16", "fp8", "int8", "fp4", "interconnect",
            "confidence"]

    def rate(a: Accelerator, k: str) -> str:
        v = a.dense_flops_per_s.get(k)
        return "—" if v is None else f"{v / 1e12:,.1f}"

    table = [[a.id, a.name, fmt_bytes(a.memory_bytes, "GB", 0),
              f"{a.mem_bytes_per_s / GB:,.1f} GB/s", rate(a, "bf16"), rate(a, "fp8"),
              rate(a, "int8"), rate(a, "fp4"), a.interconnect, a.confidence] for a in accs]
    notes = ["Dense tensor rates in TFLOP/s (int8: TOPS), never the sparsity figures; "
             "GB = 1e9 bytes. Sources: napkin gpus --format json.",
             "Memory is the marketed capacity; device_memory_bytes in the JSON is what the "
             "device reports to CUDA (nvidia-smi memory.total), where a source gives it."]
    return Document("Accelerator catalog", {}, {}, [Section("accelerators", cols, table, notes)],
                    {"accelerators": accs})


def model_doc(model: ModelSpec, step: CallCost, precision: Precision) -> Document:
    """``napkin model``: parameter counts, per-layer breakdown, memory and traffic.

    ``step`` is one decode step at batch 1 (its weight bytes are what a step reads)."""
    a = next((b.attention for b in model.blocks if b.linear_attention is None),
             model.blocks[0].attention)  # the attention layers' (a hybrid's first are linear)
    weights, kv_dtype = precision.weights.name, precision.kv.name
    kv_bytes_per_element = precision.kv.bytes_per_element
    params_rows = [
        ["total", _int(model.params), fmt_count(model.params)],
        ["embedding", _int(model.embedding_params), fmt_count(model.embedding_params)],
        ["LM head" + (" (tied to embedding)" if model.tie_word_embeddings else ""),
         _int(model.lm_head_params), fmt_count(model.lm_head_params)],
        ["non-embedding", _int(model.non_embedding_params), fmt_count(model.non_embedding_params)],
        ["active per token", _int(model.active_params), fmt_count(model.active_params)],
        ["active, without input embedding", _int(model.active_params - model.embedding_params),
         fmt_count(model.active_params - model.embedding_params)],
    ]
    mtp = {}
    if model.mtp:
        mtp = {"mtp_params": model.mtp.params, "mtp_params_as_stored": model.mtp.params_as_stored}
        params_rows += [["MTP modules (reported apart)", _int(model.mtp.params),
                         fmt_count(model.mtp.params)],
                        ["MTP as stored (embedding + head copies)",
                         _int(model.mtp.params_as_stored), fmt_count(model.mtp.params_as_stored)]]
    layer_rows, layer_data = [], []
    part_names = ["attention", "mlp", "shared_experts", "routed_experts", "router", "norms"]
    if any("hyper_connections" in g.block.params_by_part() for g in model.layer_groups):
        part_names.append("hyper_connections")
    for g in model.layer_groups:
        b = g.block
        parts = {k: b.params_by_part().get(k, 0) for k in part_names}
        kind = "moe" if b.experts else "dense"
        routing = b.experts.routing if b.experts else None
        label = kind + (f" {routing}-routed" if routing not in (None, "top-k") else "")
        label += f", window {b.window}" if b.window else ""
        label += f", {b.linear_attention.kind}" if b.linear_attention else ""
        c = b.compressed
        if c is not None:
            label += f", CSA r{c.ratio} top-{c.top_k}" if c.top_k else f", HCA r{c.ratio}"
        first, last = g.layer_indices[0], g.layer_indices[-1]
        layer_rows.append([f"{label}: {g.num_layers} layers ({first}…{last})"]
                          + [_int(v) for v in parts.values()] + [_int(b.params)])
        layer_data.append({"layers": list(g.layer_indices), "kind": kind,
                           "window_tokens": b.window,
                           **({"routing": routing} if routing else {}),
                           **({"kv_compress_ratio": c.ratio, "kv_compressed_top_k": c.top_k,
                               "kv_elements_per_compressed_entry": c.elements_per_entry}
                              if c is not None else {}),
                           **{f"{k}_params": v for k, v in parts.items()},
                           "params_per_layer": b.params})
    kv_token = model.kv_bytes_per_token(kv_bytes_per_element)
    kv_window = model.kv_bytes(model.max_position_embeddings, kv_bytes_per_element) - (
        kv_token * model.max_position_embeddings)
    weights_bytes = weight_bytes(model, precision)
    mem_rows = [
        [f"weights ({weights})", _gb_gib(weights_bytes)],
        [f"KV per token ({kv_dtype})" if model.min_window is None else
         f"KV per token past the window: compressed entries only ({kv_dtype})"
         if model.has_compressed_kv else
         f"KV per token past the window: full-attention layers only ({kv_dtype})",
         f"{kv_token:,.0f} B = {kv_token / KiB:,.3f} KiB"],
        [f"KV at max context ({model.max_position_embeddings:,} tokens)",
         _gb_gib(model.kv_bytes(model.max_position_embeddings, kv_bytes_per_element))],
        ["decode step weight bytes (batch 1" + (
            ")" if precision.read_embedding else ", without embedding)"),
         _gb_gib(step.weight_bytes)],
    ]
    if model.min_window is not None:
        in_window = model.kv_bytes_per_token_in_window(kv_bytes_per_element)
        mem_rows.insert(1, [f"KV per token up to {model.min_window:,} tokens (every layer, "
                            f"{kv_dtype})", f"{in_window:,.0f} B = {in_window / KiB:,.3f} KiB"])
    if kv_window:
        mem_rows.insert(3, ["KV of sliding-window layers (fixed, full window)", _gb_gib(kv_window)])
    state_seq = model.state_bytes_per_sequence(kv_bytes_per_element)
    if state_seq:
        recurrent, conv = model.state_elements()
        attn_layers = sum(g.num_layers for g in model.layer_groups
                          if g.block.linear_attention is None)
        if model.min_window is None:
            mem_rows[1][0] = f"KV per token: the {attn_layers} attention layers ({kv_dtype})"
        mem_rows.insert(-1, [f"linear-attention state per sequence, any context ({recurrent:,} "
                             f"FP32 + {conv:,} {kv_dtype} numbers)",
                             f"{state_seq:,.0f} B = {state_seq / MiB:,.2f} MiB"])
    data = {
        "model": model.name, "model_type": model.model_type, "hidden_size": model.hidden_size,
        "num_layers": model.num_layers, "vocab_size": model.vocab_size,
        "max_position_embeddings": model.max_position_embeddings,
        "tie_word_embeddings": model.tie_word_embeddings,
        **({"hc_mult": model.hc_mult} if model.hc_mult else {}),
        "attention": {"kind": a.kind, "num_heads": a.num_heads, "num_kv_heads": a.num_kv_heads,
                      "qk_head_dim": a.qk_head_dim, "v_head_dim": a.v_head_dim,
                      "kv_elements_per_token_per_layer": a.kv_elements_per_token},
        "kv_bytes_per_token_in_window": model.kv_bytes_per_token_in_window(kv_bytes_per_element),
        "min_window_tokens": model.min_window,
        "params": model.params, "embedding_params": model.embedding_params,
        "lm_head_params": model.lm_head_params,
        "non_embedding_params": model.non_embedding_params,
        "active_params": model.active_params,
        "active_params_without_embedding": model.active_params - model.embedding_params,
        **mtp,
        "layer_groups": layer_data,
        "weights_bytes": weights_bytes,
        "kv_bytes_per_token": kv_token,
        "kv_window_bytes": kv_window,
        "state_bytes_per_sequence": state_seq,
        "decode_weight_bytes_per_step": step.weight_bytes,
    }
    sections = [
        Section("parameters", ["", "count", "≈"], params_rows),
        Section("per layer", ["layer group", *(n.replace("_", " ") for n in part_names),
                              "total"], layer_rows),
        Section("memory and traffic", ["", "bytes"], mem_rows,
                ["GB = 1e9 B, GiB = 2^30 B. A decode step reads every weight but the embedding "
                 "table (the chapter's convention); --read-embedding counts it too.",
                 *checkpoint_notes(model, precision)]),
    ]
    inputs = {"model": model.name, "weights": weights, "kv_dtype": kv_dtype,
              "read_embedding": precision.read_embedding, **unquantized_input(precision)}
    return Document(f"{model.name}", inputs, {}, sections, data)


def _time_cells(t: RooflineTime) -> list[str]:
    return [fmt_seconds(t.compute_s), fmt_seconds(t.memory_s), fmt_seconds(t.time_s), t.bound]


def ops_section(title: str, cost: CallCost) -> Section:
    rows = [[op.name, op.kind.value, f"{op.layers or ''}", fmt_flops(op.flops),
             fmt_bytes(op.weight_bytes, "GB", 3), fmt_bytes(op.kv_read_bytes, "GB", 3),
             fmt_bytes(op.kv_write_bytes, "GB", 4)] for op in cost.ops]
    rows.append(["total", "", "", fmt_flops(cost.flops), fmt_bytes(cost.weight_bytes, "GB", 3),
                 fmt_bytes(cost.kv_read_bytes, "GB", 3), fmt_bytes(cost.kv_write_bytes, "GB", 4)])
    return Section(title, ["op", "kind", "layers", "FLOPs", "weights read", "KV read",
                           "KV written"], rows)


def call_doc(model: ModelSpec, prefill: CallCost, decode: tuple[AffineRun, ...],
             dep: Deployment | None, chain: RequestChain | None,
             inputs: dict[str, Any], calibrated: CalibratedCall | None = None,
             used: Energy | None = None) -> Document:
    """``napkin call``: the prefill's op list, the decode phase's totals and, with a GPU, the
    request chain's times and energy."""
    steps = sum(run.steps for run in decode)
    decode_flops = sum(run.flops for run in decode)
    decode_bytes = sum(run.bytes for run in decode)
    sections = [ops_section("prefill operators", prefill)]
    sequences = inputs.get("batch", 1)
    prefills = "1 call" if sequences == 1 else f"{sequences} sequences in 1 batched call"
    phase_rows = [[f"prefill ({prefills})", fmt_flops(prefill.flops), fmt_bytes(prefill.bytes)],
                  [f"decode ({steps} steps" + ("" if sequences == 1 else
                                               f" of {sequences} sequences") + ")",
                   fmt_flops(decode_flops), fmt_bytes(decode_bytes)]]
    data: dict[str, Any] = {
        "prefill": {"ops": prefill.ops, "sequences": sequences, "calls": 1,
                    "flops": prefill.flops,
                    "weight_bytes": prefill.weight_bytes, "kv_read_bytes": prefill.kv_read_bytes,
                    "kv_write_bytes": prefill.kv_write_bytes, "bytes": prefill.bytes},
        "decode": {"steps": steps, "flops": decode_flops, "bytes": decode_bytes},
    }
    columns, notes = ["phase", "FLOPs", "bytes moved"], ["give --gpu for times"]
    if chain is not None:
        columns += ["compute", "memory", "time", "bound"]
        phase_rows[0] += _time_cells(chain.prefill_time)
        phase_rows[1] += ["", "", fmt_seconds(chain.decode_s), ""]
        notes = [f"TTFT {fmt_seconds(chain.ttft_s)}, mean TPOT {fmt_seconds(chain.tpot_s)}, "
                 f"end-to-end {fmt_seconds(chain.e2e_s)} (request alone; batch {chain.batch} "
                 f"in lockstep); final context {chain.final_context:,} tokens"]
        data["chain"] = {
            "prefill_time": chain.prefill_time, "decode_steps": chain.decode_steps,
            "decode_s": chain.decode_s, "ttft_s": chain.ttft_s, "tpot_s": chain.tpot_s,
            "e2e_s": chain.e2e_s, "final_context_tokens": chain.final_context,
        }
    sections.append(Section("request chain", columns, phase_rows, notes))
    if calibrated is not None:
        c = calibrated
        sections.append(Section(
            f"calibrated (profile {c.profile})", ["metric", "predicted", "80 % band"],
            [["TTFT", fmt_seconds(c.ttft_s), f"{fmt_seconds(c.ttft_low_s)}–"
              f"{fmt_seconds(c.ttft_high_s)}"],
             ["mean TPOT", fmt_seconds(c.tpot_s), f"{fmt_seconds(c.tpot_low_s)}–"
              f"{fmt_seconds(c.tpot_high_s)}"],
             ["end-to-end", fmt_seconds(c.e2e_s), ""]],
            ["the profile's fitted step-time model on this request alone (no queueing), "
             "plus its per-request latency; bands from its hold-out residuals",
             *[f"warning: {w}" for w in c.warnings]]))
        data["calibrated"] = c
    assume = assumptions(dep) if dep else {}
    if used is not None and chain is not None and dep is not None:
        sections.append(energy_section(used, dep.acc, chain.ttft_s, chain.decode_s))
        data["energy"] = energy_record(used)
        m = used.model
        assume |= {"prefill_power_frac": m.prefill_power_frac,
                   "decode_power_frac": m.decode_power_frac, "pue": m.pue,
                   "usd_per_kwh": m.usd_per_kwh}
    return Document(f"{model.name}: one call", inputs, assume, sections, data)


def energy_record(e: Energy) -> dict[str, Any]:
    """Energy figures in base units (J, W, kWh; $ where priced)."""
    return {"joules": e.joules, "kwh": e.kwh, "mean_power_w": e.mean_power_w,
            "output_tokens": e.output_tokens,
            "joules_per_output_token": e.joules / e.output_tokens if e.output_tokens else None,
            "kwh_per_m_output_tokens": e.kwh_per_m_output_tokens,
            "usd_per_m_output_tokens": e.usd_per_m_output_tokens,
            "usd_per_kwh": e.model.usd_per_kwh, "pue": e.model.pue}


def _joules(j: float) -> str:
    return f"{j:,.0f} J" if j >= 100 else f"{j:.3g} J"


def energy_section(e: Energy, acc: Accelerator, prefill_s: float, decode_s: float) -> Section:
    """The chain's energy: board power per phase, joules, kWh and $ per million tokens."""
    m, tdp = e.model, acc.tdp_watts or 0.0
    rows = [["prefill", f"{tdp * m.prefill_power_frac:,.0f} W", fmt_seconds(prefill_s),
             _joules(tdp * m.prefill_power_frac * prefill_s * m.pue)],
            ["decode", f"{tdp * m.decode_power_frac:,.0f} W", fmt_seconds(decode_s),
             _joules(tdp * m.decode_power_frac * decode_s * m.pue)],
            ["call", f"{e.mean_power_w:,.0f} W mean", fmt_seconds(prefill_s + decode_s),
             _joules(e.joules)]]
    per_m = e.kwh_per_m_output_tokens
    notes = [f"{acc.id} board power {tdp:,.0f} W (catalog tdp_w); prefill draws "
             f"{m.prefill_power_frac:g}× it (compute-bound, at the power limit), decode "
             f"{m.decode_power_frac:g}× (memory-bound; H200 decode 137–300 W of 700 W, "
             f"arXiv:2605.11999), × PUE {m.pue:g}",
             f"{e.joules / e.output_tokens:,.4g} J per output token ({e.output_tokens:,.0f} "
             f"tokens); {per_m:,.4g} kWh per million output tokens" if per_m else
             "no output tokens"]
    if e.usd_per_m_output_tokens is not None:
        notes.append(f"energy ${e.usd_per_m_output_tokens:,.4g} per million output tokens at "
                     f"${m.usd_per_kwh:g}/kWh")
    return Section("energy (one GPU, the chain alone)", ["phase", "power", "time", "energy"],
                   rows, notes)


def decode_doc(dep: Deployment, table: DecodeTable, inputs: dict[str, Any],
               calibrated: tuple[Profile, list[CalibratedStep], int] | None = None
               ) -> Document:
    held = "held (weights + KV + state)" if table.rows[0].state_bytes else \
        "held (weights + KV)"
    cols = ["batch", held, "fits", "moved per step", "FLOPs per step", "FLOPs/byte", "compute",
            "memory time", "step", "bound", "tokens/s", "tokens/s/user"]
    rows = []
    for r in table.rows:
        cells = [str(r.batch), fmt_bytes(r.memory_bytes), "yes" if r.fits else "no",
                 fmt_bytes(r.bytes_moved), fmt_flops(r.flops), f"{r.flops_per_byte:,.1f}",
                 *_time_cells(r.step)[:2], fmt_seconds(r.step_s), r.step.bound,
                 f"{r.tokens_per_s:,.1f}", f"{r.tokens_per_s_per_user:,.1f}"]
        rows.append(cells)
    first = table.rows[0]
    from napkin.inference.decode import ridge_flops_per_byte  # serve commands skip inference

    ridge = ridge_flops_per_byte(dep)
    effective_ridge = ridge * dep.eff.mfu / dep.eff.mbu
    per_token = first.flops / first.batch
    two_n = flops_per_token_2n(dep.model.active_params)
    kv_seq = dep.model.kv_bytes(table.context, dep.precision.kv.bytes_per_element)
    convention = ("every weight incl. the embedding table (question-bank convention)"
                  if dep.precision.read_embedding else
                  "every weight but the embedding table (chapter convention; "
                  "--read-embedding for the question bank's)")
    state_seq = first.state_bytes / first.batch
    state = (f" + linear-attention state {fmt_bytes(state_seq)} per sequence (any context)"
             if state_seq else "")
    notes = [f"held: weights {fmt_bytes(first.weights_bytes)} + KV {fmt_bytes(kv_seq)} per "
             f"sequence at {table.context:,} tokens{state}; device memory "
             f"{fmt_bytes(first.capacity_bytes)}",
             f"a step reads {fmt_bytes(first.weight_bytes_read)} of weights: {convention}, "
             "plus each sequence's KV" + (", and reads and writes its state" if state else ""),
             "moved per step: weights read + every sequence's KV read + the new token's KV "
             "written (bytes the step streams, not memory held)",
             f"FLOPs per token: {fmt_flops(per_token)} counted op by op at batch "
             f"{first.batch} (context {table.context:,}) vs the question bank's 2N = "
             f"2 × {dep.model.active_params / 1e9:,.2f}B = {fmt_flops(two_n)}",
             f"ridge point of {dep.acc.id}: {dep.acc.peak_flops_per_s(dep.compute) / 1e12:,.1f}"
             f" TFLOP/s ÷ {dep.acc.mem_bytes_per_s / GB:,.0f} GB/s = {ridge:,.1f} FLOPs/byte"
             + (f" ({effective_ridge:,.1f} at MFU {dep.eff.mfu:g} / MBU {dep.eff.mbu:g})"
                if effective_ridge != ridge else "")
             + "; a step below it (FLOPs/byte column) is memory-bound",
             "compute/memory crossover: " + (
                 f"the step turns compute-bound at batch {table.compute_bound_batch:,}"
                 if table.compute_bound_batch is not None else
                 "memory-bound at every batch up to 2^20"),
             *checkpoint_notes(dep.model, dep.precision)]
    sections = [Section(f"decode at context {table.context:,}", cols, rows, notes)]
    data: dict[str, Any] = {"context_tokens": table.context, "rows": table.rows,
                            "compute_bound_batch": table.compute_bound_batch,
                            "flops_per_token_2n": two_n, "flops_per_token": per_token,
                            "ridge_flops_per_byte": ridge,
                            "effective_ridge_flops_per_byte": effective_ridge}
    if calibrated is not None:
        profile, steps, tp = calibrated
        outside = profile.domain.outside(dep.acc.id, inputs["model"], tp,
                                         dep.precision.weights.name, spec=dep.model)
        sections.append(Section(
            f"calibrated step (profile {profile.name}, tp {tp})",
            ["batch", "step", "80 % band", "tokens/s"],
            [[str(c.batch), fmt_seconds(c.step_s),
              f"{fmt_seconds(c.step_low_s)}–{fmt_seconds(c.step_high_s)}",
              f"{c.tokens_per_s:,.1f}"] for c in steps],
            ["the profile's fitted step-time model (band: its hold-out TPOT interval)",
             *[f"warning: outside profile {profile.name!r}: {w}" for w in outside]]))
        data["calibrated"] = {"profile": profile.name, "tensor_parallel": tp, "steps": steps}
    return Document(f"{dep.model.name} decode on {dep.acc.name}", inputs, assumptions(dep),
                    sections, data)


def capacity_doc(dep: Deployment, cap: Capacity, inputs: dict[str, Any]) -> Document:
    rows = [
        ["device memory", f"{cap.devices} × {fmt_bytes(cap.memory_bytes / cap.devices)}",
         fmt_bytes(cap.memory_bytes)],
        ["reserve", f"{cap.devices} × {fmt_bytes(cap.reserve_bytes / cap.devices)}",
         fmt_bytes(cap.reserve_bytes)],
        [f"weights ({dep.precision.weights.name})", "", fmt_bytes(cap.weights_bytes)],
        ["KV budget", "", _gb_gib(cap.kv_budget_bytes)],
        [f"KV per user at {cap.context:,} tokens", "", _gb_gib(cap.kv_bytes_per_user)],
    ]
    if cap.kv_replicas > 1:
        rows += [["KV copies per user (fewer KV heads than devices: each head replicated)",
                  "", f"{cap.kv_replicas:g}"]]
    if cap.state_bytes_per_user:
        rows += [["linear-attention state per user (any context, one copy)", "",
                  _gb_gib(cap.state_bytes_per_user)]]
    rows += [["users at full context (each reserves its maximum)", "", str(cap.users)]]
    if cap.avg_context is not None and cap.kv_bytes_per_user_avg is not None:
        rows += [[f"KV per user at {cap.avg_context:,} tokens (average)", "",
                  _gb_gib(cap.kv_bytes_per_user_avg)],
                 ["users at average context (paged KV, as PagedAttention)", "",
                  str(cap.users_avg)]]
    return Document(f"{dep.model.name} serving capacity on {cap.devices} × {dep.acc.name}",
                    inputs, assumptions(dep),
                    [Section("capacity", ["", "", "total"], rows,
                             checkpoint_notes(dep.model, dep.precision))],
                    {"capacity": cap})


def moe_doc(dep: Deployment, table: MoETable, inputs: dict[str, Any]) -> Document:
    cols = ["batch", "experts touched", "weights read/step", "bytes/step", "FLOPs/token",
            "step", "bound", "tokens/s"]
    rows = [[str(r.batch), f"{r.experts_touched_frac:.1%}", fmt_bytes(r.weight_bytes),
             fmt_bytes(r.bytes_moved), fmt_flops(r.flops_per_token), fmt_seconds(r.step.time_s),
             r.step.bound, f"{r.tokens_per_s:,.1f}"] for r in table.rows]
    crossing = table.compute_bound_batch
    notes = [f"uniform routing: touched share = 1 − (1 − {table.experts_per_token}/"
             f"{table.num_experts})^B",
             "decode turns compute-bound at batch "
             + (f"{crossing:,}" if crossing else "> 1,048,576 (never, at this context)")]
    sections = [Section(f"MoE at context {table.context:,}", cols, rows, notes)]
    if table.ranks > 1:
        n = table.ranks
        sections.append(Section(
            f"the busiest of {n} GPUs (DEP: experts over {n} GPUs, data-parallel attention)",
            ["batch", "load/mean", "experts touched", "weights read/GPU", "bytes/GPU",
             "all-to-all/layer", "step", "tokens/s"],
            [[str(r.batch), f"{r.rank.imbalance:.3f}", f"{r.rank.experts_touched:.2f} of "
              f"{table.num_experts // n}", fmt_bytes(r.rank.weight_bytes),
              fmt_bytes(r.rank.bytes_moved), fmt_bytes(r.rank.alltoall_bytes_per_layer),
              fmt_seconds(r.rank.step_s), f"{r.rank.tokens_per_s(r.batch):,.1f}"]
             for r in table.rows if r.rank is not None],
            ["the step waits for the busiest GPU: its expected largest routed load (exact "
             "hypergeometric convolution, the max over GPUs) and the most experts one GPU "
             "touches; each GPU reads the attention side whole and its batch/GPUs sequences' "
             "KV; dispatch (FP8 for sub-16-bit models, else BF16) and combine (BF16) over "
             "NVLink at 10 µs each"]))
    return Document(f"{dep.model.name} MoE decode on {dep.acc.name}", inputs, assumptions(dep),
                    sections, {"moe": table})
