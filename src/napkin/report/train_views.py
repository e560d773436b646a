"""Documents for ``napkin train`` and ``napkin rl``."""

from typing import TYPE_CHECKING, Any

from napkin.reinforcement.cycle import RLCycle
from napkin.reinforcement.memory import RoleMemory
from napkin.report.document import Document, Section
from napkin.training.efficiency import TrainingProfile
from napkin.training.plan import TrainPlan
from napkin.training.run import TrainingRun
from napkin.units import GB, TFLOP, GiB, fmt_bytes, fmt_seconds

if TYPE_CHECKING:  # (its module loads the serving simulator and numpy: napkin train needs neither)
    from napkin.reinforcement.timing import RLTiming


def _tf(flops: float) -> str:
    return f"{flops / TFLOP:,.3f}"


def _mem(label: str, n_bytes: float, extra: str = "") -> list[str]:
    """A memory row: GB (1e9 B) and GiB (2^30 B)."""
    return [label, f"{n_bytes / GB:,.2f}{extra}", f"{n_bytes / GiB:,.2f}"]


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def _effective(plan: TrainPlan, assumptions: dict[str, Any]) -> str:
    peak, eff, mfu = plan.peak_flops_per_s, plan.effective_flops_per_s, assumptions.get("mfu")
    if mfu is not None and assumptions.get("precision", "bf16") == "bf16":
        return f"{eff / TFLOP:,.1f} TFLOP/s = {peak / TFLOP:,.1f} × {mfu:g}"
    return f"{eff / TFLOP:,.1f} TFLOP/s ({eff / peak:.1%} of the {peak / TFLOP:,.1f} BF16 peak)"


def train_doc(plan: TrainPlan, inputs: dict[str, Any], assumptions: dict[str, Any],
              run: TrainingRun | None = None, profile: TrainingProfile | None = None,
              warnings: list[str] | None = None, datasheet_bytes: float | None = None
              ) -> Document:
    """``datasheet_bytes``: the vendor's marketed memory, shown beside what the device
    reports when they differ (an H200's 141 GB against the 150.75 GB it reports)."""
    f, shape = plan.flops, plan.flops.shape
    kinds = [[k, _tf(fw), _tf(bw), _tf(fw + bw)] for k, (fw, bw) in f.by_kind().items()]
    kinds.append(["total", _tf(f.forward.flops), _tf(f.backward.flops),
                  _tf(f.forward.flops + f.backward.flops)])
    g = f.gap
    totals = [
        ["forward", _tf(f.forward.flops)], ["backward", _tf(f.backward.flops)],
        ["recompute", _tf(f.recompute_flops)], ["micro-batch total", _tf(f.micro_batch_flops)],
        ["of which QKᵀ and AV", _tf(f.attention_flops)],
        ["6ND (N = active parameters)", _tf(f.six_nd_flops / shape.accumulation)],
        ["gap: attention pairs added", _tf(g.attention_flops)],
        ["gap: embedding lookup (no matmul)", _tf(g.embedding_flops)],
        ["gap: norms, biases (no matmul)", _tf(g.non_matmul_flops)],
        ["gap: head positions skipped", _tf(g.head_skipped_flops)],
        ["gap: recompute", _tf(g.recompute_flops)],
        ["gap: frozen modules (dW, dX skipped)", _tf(g.frozen_flops)],
        [f"update ({shape.accumulation} micro-batches)", _tf(f.update_flops)],
    ]
    fit = plan.fit
    memory = [
        _mem("weights", fit.state.weights_bytes),
        _mem("gradients", fit.state.grads_bytes),
        _mem("optimizer states (master, moments)", fit.state.optimizer_bytes),
        _mem("parameter state (weights + gradients + optimizer)", fit.state.bytes),
        _mem("offloaded to CPU", fit.state.offloaded_bytes),
        _mem(f"activations ({shape.micro_batch} seq. per micro-batch, "
             f"{assumptions.get('activations', 'ffn')} convention)", fit.activations_bytes,
             f" (+{fmt_bytes(fit.offloaded_activation_bytes)} on the host)"
             if fit.offloaded_activation_bytes else ""),
        _mem("loss logits (BF16, FP32 copy and gradient)", fit.logits_bytes),
        _mem("re-run layer in backward", fit.working_bytes),
        _mem("FSDP gathered weights and unsharded gradients", fit.buffer_bytes),
        _mem(f"caching allocator ({fit.allocator_overhead:.1%} of the allocated)",
             fit.allocator_bytes),
        _mem("reserve", fit.reserve_bytes),
        _mem("total per device", fit.total_bytes),
        _mem("device memory (as the device reports it)", fit.capacity_bytes),
        *([_mem("datasheet memory", datasheet_bytes)]
          if datasheet_bytes and datasheet_bytes != fit.capacity_bytes else []),
        ["parameter state alone fits", _yes(fit.state_fits), ""],
        ["state + activations and the rest fit (total)", _yes(fit.fits), ""],
        ["largest micro-batch that fits", str(plan.max_micro_batch), ""],
    ]
    tokens_band = None
    band_s = band_tokens = ""
    if profile is not None:
        # measured = predicted / (1 + e) for a held-out error e in the profile's band
        tokens_band = (plan.tokens_per_s / (1 + profile.band[1]),
                       plan.tokens_per_s / (1 + profile.band[0]))
        band_tokens = f" ({tokens_band[0]:,.0f}–{tokens_band[1]:,.0f})"
        band_s = (f" ({fmt_seconds(plan.update_s * (1 + profile.band[0]))}–"
                  f"{fmt_seconds(plan.update_s * (1 + profile.band[1]))})")
    compute_note = (
        f"compute: training profile {profile.name} (matmul, attention and elementwise "
        f"efficiencies per GPU architecture fitted on torchtitan's tables; held out by table "
        f"{profile.holdout_median:.1%} median |error|; ranges in brackets are its 10th–90th "
        "percentile)" if profile is not None else
        "compute: every matmul at --mfu of its format's peak while computing")
    c = plan.comm
    mp = plan.model_parallel
    time_rows = [
        ["tokens per update (DP·a·B_μ·P)", f"{plan.tokens_per_update:,} "
         f"({plan.data_parallel} × {shape.tokens_per_update:,} per rank)"],
        ["labelled tokens per update", f"{plan.data_parallel * shape.labels_per_update:,}"],
        ["trainable / frozen parameters", f"{plan.trainable_params:,} / {plan.frozen_params:,}"],
        [f"data-parallel communication ({c.scheme}) per device",
         f"{c.bytes_per_device / GB:,.2f} GB in the node"
         + (f" + {c.inter_node_bytes / GB:,.2f} GB over its NIC" if c.inter_node_bytes else "")
         + f" in {fmt_seconds(c.time_s)}"
         + (" (hidden behind the compute)" if c.hidden else
            f" ({fmt_seconds(c.time_s - c.compute_s)} exposed)")],
        ["compute per update (each rank, its own micro-batches)", fmt_seconds(c.compute_s)],
        ["GPUs (DP × TP × PP × CP)", f"{plan.gpus:,} ({plan.data_parallel} × "
         f"{plan.tensor_parallel} × {plan.pipeline_stages} × {plan.context_parallel})"],
        *([["TP all-reduces per device (4 per layer per micro-batch)",
            f"{fmt_bytes(mp.tp_bytes)} in {fmt_seconds(mp.tp_s)}"
            + ("" if plan.tp_exposed_s == mp.tp_s else
               f" ({fmt_seconds(plan.tp_exposed_s)} exposed, the rest under the matmuls)")]]
          if mp and mp.tp_bytes else []),
        *([["EP dispatch and combine all-to-alls per device", f"{fmt_bytes(mp.ep_bytes)} in "
            f"{fmt_seconds(mp.ep_s)}" + (f" ({fmt_seconds(plan.ep_exposed_s)} exposed)"
                                         if plan.ep_exposed_s < mp.ep_s else " (exposed)")]]
          if mp and mp.ep_bytes else []),
        *([["PP activation sends per device", f"{fmt_bytes(mp.pp_bytes)} in "
            f"{fmt_seconds(mp.pp_s)}"]] if mp and mp.pp_bytes else []),
        ["pipeline bubble", f"{plan.bubble_frac:.1%}"
         + (f" (interleaved, {plan.virtual_stages} chunks per stage)"
            if plan.virtual_stages > 1 else "")],
        ["optimizer step (non-matmul, per device)",
         f"{fmt_bytes(plan.optimizer_bytes)} in {fmt_seconds(plan.optimizer_s)}"
         if plan.offload is None else
         f"offloaded: {fmt_bytes(plan.offload.link_bytes)} over the host link in "
         f"{fmt_seconds(plan.offload.link_s)} + CPU Adam {fmt_bytes(plan.offload.cpu_bytes)} "
         f"in {fmt_seconds(plan.offload.cpu_s)}"],
        *([["QLoRA dequantization (NF4 → BF16 per matmul pass)", fmt_seconds(plan.dequant_s)]]
          if plan.dequant_s else []),
        *([["offloaded activations and weights over the host link",
            fmt_seconds(plan.host_transfer_s)
            + (" (under the compute)" if plan.host_transfer_s <= plan.compute_s
               else " (exposed beyond the compute)")]] if plan.host_transfer_s else []),
        *([["CP K/V gathers per device", f"{fmt_bytes(mp.cp_bytes)} in "
            f"{fmt_seconds(mp.cp_s)}"]] if mp and mp.cp_bytes else []),
        ["effective FLOP/s per GPU while computing (peak × MFU)", _effective(plan, assumptions)],
        ["update time", fmt_seconds(plan.update_s) + band_s],
        ["tokens/s", f"{plan.tokens_per_s:,.0f}" + band_tokens],
        ["end-to-end MFU / HFU (model / hardware FLOPs ÷ update time · GPUs · peak)",
         f"{plan.achieved_mfu:.1%} / {plan.achieved_hfu:.1%}"],
        ["MFU as published (6N + 12·L·H·Q·T per token: full attention; BF16 peak)",
         f"{plan.published_mfu:.1%}"],
    ]
    data = {
        "forward_flops": f.forward.flops, "backward_flops": f.backward.flops,
        "recompute_flops": f.recompute_flops, "total_flops": f.micro_batch_flops,
        "update_flops": f.update_flops, "attention_flops": f.attention_flops,
        "six_nd_flops": f.six_nd_flops, "gap": g,
        "flops_by_kind": {k: {"forward_flops": v[0], "backward_flops": v[1]}
                          for k, v in f.by_kind().items()},
        "data_parallel": plan.data_parallel, "tensor_parallel": plan.tensor_parallel,
        "pipeline_stages": plan.pipeline_stages, "gpus": plan.gpus,
        "model_parallel": plan.model_parallel,
        "tokens_per_update": plan.tokens_per_update,
        "tokens_per_update_per_rank": shape.tokens_per_update,
        "labels_per_update": plan.data_parallel * shape.labels_per_update,
        "update_flops_all_ranks": plan.update_flops,
        "trainable_params": plan.trainable_params, "frozen_params": plan.frozen_params,
        "memory": fit, "activation_bytes_per_sequence": plan.activation_bytes_per_sequence,
        "max_micro_batch": plan.max_micro_batch, "communication": c,
        "optimizer_bytes": plan.optimizer_bytes, "optimizer_s": plan.optimizer_s,
        "bubble_frac": plan.bubble_frac, "dequant_s": plan.dequant_s, "offload": plan.offload,
        "update_s": plan.update_s, "tokens_per_s": plan.tokens_per_s,
        "virtual_stages": plan.virtual_stages, "model_flops_all_ranks": plan.model_flops,
        "achieved_mfu": plan.achieved_mfu, "achieved_hfu": plan.achieved_hfu,
        "effective_flops_per_s": plan.effective_flops_per_s,
        "state_bytes": fit.state.bytes, "state_fits": fit.state_fits, "fits": fit.fits,
        "device_memory_bytes": fit.capacity_bytes, "datasheet_memory_bytes": datasheet_bytes,
        "published_mfu": plan.published_mfu,
        "work": plan.work, "compute_s": plan.compute_s,
        "tokens_per_s_band": list(tokens_band) if tokens_band else None,
        "training_profile": profile.name if profile else None,
        "warnings": list(warnings or []),
    }
    sections = [
        Section("matmul FLOPs by kind, one micro-batch (TFLOP)",
                ["kind", "forward", "backward", "both"], kinds),
        Section("totals and the gap to 6ND (TFLOP)", ["", "TFLOP"], totals),
        Section("memory per device", ["", "GB", "GiB"], memory,
                ["GB = 1e9 B, GiB = 2^30 B; the parameter state is what the optimizer keeps "
                 "between updates, activations live from a layer's forward to its backward "
                 "(Korthikanti et al. 2022 per layer)",
                 *([f"the parameter state ({fit.state.bytes / GB:,.2f} GB) exceeds the "
                    f"datasheet's {datasheet_bytes / GB:,.0f} GB but not the "
                    f"{fit.capacity_bytes / GB:,.2f} GB the device reports"]
                   if datasheet_bytes and fit.state_fits and fit.state.bytes > datasheet_bytes
                   else [])]),
        Section("tokens, communication, time", ["", ""], time_rows,
                [compute_note, "the pipeline bubble, exposed TP/PP/CP traffic and the "
                 "optimizer step come on top of the compute, so the end-to-end MFU is lower "
                 "(a published end-to-end MFU passed as --mfu counts them twice)",
                 *(f"warning: {w}" for w in warnings or [])]),
    ]
    if run is not None:
        sections.append(Section("the whole run", ["", ""], [
            ["tokens", f"{run.tokens:,.0f}"], ["updates", f"{run.updates:,}"],
            ["updates alone", f"{run.train_s / 3600:,.2f} h"],
            ["wall time (evaluation, checkpoints, failures)",
             f"{run.wall_s / 3600:,.2f} h ({run.days:,.2f} days; goodput {run.goodput:.1%})"],
            ["GPU-hours", f"{run.gpu_hours:,.1f} ({run.devices:,} GPUs)"],
            ["cost", f"${run.usd:,.0f} at ${run.usd_per_gpu_hour:g}/GPU-hour"
             if run.usd is not None and run.usd_per_gpu_hour is not None else
             "— (no price: give --usd-per-gpu-hour)"]],
            [f"price: {run.price_source}; updates ⌈tokens / tokens per update⌉; each failure "
             "loses half a checkpoint interval and a restart; otherwise run without stops"]))
        data["run"] = {"tokens": run.tokens, "updates": run.updates, "wall_s": run.wall_s,
                       "train_s": run.train_s, "goodput": run.goodput,
                       "gpu_hours": run.gpu_hours, "days": run.days,
                       **({"usd": run.usd, "usd_per_gpu_hour": run.usd_per_gpu_hour}
                          if run.usd is not None else {})}
    return Document(f"{plan.model.name}: one training update", inputs, assumptions, sections,
                    data)


def rl_timing_section(t: "RLTiming") -> Section:
    p = t.pools
    where = (f"colocated on {p.train_gpus} × {p.gpu}" if p.colocated else
             f"{p.rollout_gpus} rollout + {p.train_gpus} training × {p.gpu}")
    rows = [["rollout (simulated, continuous batching)", fmt_seconds(t.rollout_s)],
            ["reference / teacher / reward reads", fmt_seconds(t.read_s)],
            ["policy update", fmt_seconds(t.update_s)],
            ["weight sync", fmt_seconds(t.sync_s)],
            ["cycle", f"{fmt_seconds(t.cycle_s)} ({where})"],
            ["rollout share of the work", f"{t.rollout_share:.0%}"],
            ["GPU-hours per cycle / per kept sample",
             f"{t.gpu_hours:,.4g} / {t.gpu_hours_per_kept:,.4g}"],
            ["$ per cycle / per kept sample", f"${t.usd:,.4f} / ${t.usd_per_kept:,.5f}"]]
    notes = [f"rollout step times: {t.calibration_used}; reads and update at MFU {p.mfu:g}; "
             f"${t.usd_per_gpu_hour:g}/GPU-hour",
             "colocated: phases one after another; separate: the next rollout overlaps the "
             "update (max of the two)", *t.warnings]
    return Section("seconds and dollars", ["", ""], rows, notes)


def _role_flops(cycle: RLCycle) -> list[tuple[str, float]]:
    """(role, FLOPs) of one cycle, the policy update last."""
    return [("rollout prefill", cycle.prefill_flops), ("rollout decode", cycle.decode_flops),
            ("reference forward", cycle.reference_flops),
            ("teacher forward", cycle.teacher_flops),
            ("reward-model forward", cycle.reward_flops), ("policy update", cycle.update_flops),
            ("total", cycle.total_flops)]


def rl_compare_section(cycle: RLCycle, other: RLCycle) -> Section:
    """The cycle beside the same cycle at another number of answers (chapter Fig. 3-26: 32 →
    64 answers for 16 kept): per-answer roles grow with n, the update stays."""
    rows = [[role, _tf(a), _tf(b), f"{b / a:.2f}×" if a else "—"]
            for (role, a), (_, b) in zip(_role_flops(cycle), _role_flops(other), strict=True)]
    return Section(f"{cycle.generated} vs {other.generated} answers ({cycle.kept} kept)",
                   ["role", f"TFLOP at {cycle.generated}", f"TFLOP at {other.generated}",
                    "ratio"], rows,
                   [f"F_cycle(n) = n(f_g + f_r) + F_u: {other.generated - cycle.generated:+,} "
                    f"answers add {_tf(other.total_flops - cycle.total_flops)} TFLOP"])


def rl_doc(model: str, cycle: RLCycle, roles: tuple[RoleMemory, ...],
           inputs: dict[str, Any], timing: "RLTiming | None" = None,
           compare: RLCycle | None = None) -> Document:
    rows = [
        ["rollout prefill", str(cycle.generated), _tf(cycle.prefill_flops)],
        ["rollout decode", str(cycle.generated), _tf(cycle.decode_flops)],
        ["reference forward", str(cycle.generated if cycle.reference_flops else 0),
         _tf(cycle.reference_flops)],
        ["teacher forward", str(cycle.generated if cycle.teacher_flops else 0),
         _tf(cycle.teacher_flops)],
        ["reward-model forward", str(cycle.generated if cycle.reward_flops else 0),
         _tf(cycle.reward_flops)],
        ["policy update", str(cycle.kept), _tf(cycle.update_flops)],
        ["total", f"{cycle.kept} kept", _tf(cycle.total_flops)],
    ]
    notes = [f"per kept sample {_tf(cycle.per_kept_flops)} TFLOP; each generated answer adds "
             f"{_tf(cycle.per_answer_flops)} TFLOP (f_g + f_r): F_cycle(n) = n(f_g + f_r) + F_u",
             f"weight sync {fmt_bytes(cycle.sync_bytes)} (BF16 copies to the replicas)"]
    tokens = [["prompt tokens prefilled (n × P)", f"{cycle.prompt_tokens_total:,}"],
              ["answer tokens generated (n × G)", f"{cycle.generated_tokens:,}"],
              ["update input tokens (keep × (P + G − 1))", f"{cycle.update_input_tokens:,}"],
              ["kept (labelled) tokens (keep × G)", f"{cycle.kept_tokens:,}"]]
    held = [[r.role, f"{r.params:,}", "trainable" if r.trainable else "frozen",
             fmt_bytes(r.memory.bytes)] for r in roles]
    held.append(["total", "", "", fmt_bytes(sum(r.memory.bytes for r in roles))])
    sections = [
        Section("matrix FLOPs by role", ["role", "samples", "TFLOP"], rows, notes),
        Section(f"tokens per cycle ({cycle.generated} answers, {cycle.kept} kept)",
                ["", "tokens"], tokens),
        Section(f"models held ({inputs.get('method')})", ["role", "params", "", "state"], held,
                ["parameter state without sharding; activations and KV apart"]),
    ]
    data: dict[str, Any] = {"cycle": cycle, "models_held": roles,
                            "tokens": {"prompt_tokens": cycle.prompt_tokens_total,
                                       "generated_tokens": cycle.generated_tokens,
                                       "update_input_tokens": cycle.update_input_tokens,
                                       "kept_tokens": cycle.kept_tokens}}
    if compare is not None:
        sections.insert(1, rl_compare_section(cycle, compare))
        data["compare"] = compare
    if timing is not None:
        sections.append(rl_timing_section(timing))
        data["timing"] = {"rollout_s": timing.rollout_s, "read_s": timing.read_s,
                          "update_s": timing.update_s, "sync_s": timing.sync_s,
                          "cycle_s": timing.cycle_s, "gpus": timing.pools.gpus,
                          "gpu_hours": timing.gpu_hours, "usd": timing.usd,
                          "usd_per_kept": timing.usd_per_kept,
                          "calibration": timing.calibration_used,
                          "warnings": list(timing.warnings)}
    return Document(f"{model}: one RL cycle", inputs, {}, sections, data)
