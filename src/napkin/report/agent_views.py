"""Documents for ``napkin agent`` and ``napkin context``."""

from typing import Any

from napkin.agents.analysis import TaskAnalysis
from napkin.agents.context import EditEffect, RoundCost
from napkin.agents.state import combined_curve
from napkin.agents.success import LoggedOutcome
from napkin.agents.trajectory import EncodeStep, ModelStep
from napkin.media.playback import Timeline
from napkin.report.document import Document, Section
from napkin.units import TFLOP, GiB, fmt_bytes


def _s(x: float) -> str:
    return f"{x:,.3f}"


def agent_doc(a: TaskAnalysis, inputs: dict[str, Any], assumptions: dict[str, Any],
              playback: Timeline | None = None) -> Document:
    """``playback``: the logged block arrivals played through the trajectory's buffer."""
    t = a.trajectory
    on_path = set(a.dag.critical_path)
    steps = []
    for sp in a.dag.spans:
        st = t.step(sp.id)
        tokens = (f"{st.input_tokens}/{st.cached_tokens}/{st.new_tokens}/{st.output_tokens}"
                  if isinstance(st, ModelStep) and st.input_tokens + st.output_tokens else "")
        steps.append([sp.id, sp.kind, _s(sp.start_s), _s(sp.end_s), _s(sp.duration_s),
                      "yes" if sp.id in on_path else "", ", ".join(st.holds), tokens])
    shares = a.shares
    totals = [["serial: every step one after another", f"{_s(a.serial.makespan_s)} s"],
              ["critical path (as drawn)", f"{_s(a.dag.makespan_s)} s"],
              ["saved by running independent steps together",
               f"{_s(a.parallel_saving_s)} s"]]
    totals += [[f"{kind} time (share of step time)", f"{_s(v)} s ({shares[kind]:.1%})"]
               for kind, v in a.dag.by_kind_s().items()]
    totals += [
        ["state peak, as drawn / serial",
         f"{a.dag_state.peak_bytes / GiB:,.4g} / {a.serial_state.peak_bytes / GiB:,.4g} GiB"],
        ["state held ∫M(t)dt, as drawn / serial",
         f"{a.dag_state.gib_seconds:,.4g} / {a.serial_state.gib_seconds:,.4g} GiB·s"],
    ]
    tk = a.tokens
    if tk.prefix_hit_frac is not None:
        totals.append(["model rounds; prefix-cache hits ΣK/ΣI",
                       f"{tk.rounds:,} rounds; {tk.prefix_hit_frac:.1%} ({tk.cached_tokens:,} "
                       f"of {tk.input_tokens:,} input tokens)"])
    reasoning, other = a.output_tokens
    if reasoning or other:
        totals.append(["output tokens: reasoning + other", f"{reasoning:,} + {other:,} tokens"])
    for sid, gap in a.reuse_intervals_s.items():
        totals.append([f"reuse interval before {sid} (prefix kept cached)", f"{_s(gap)} s"])
    if a.cost.total_usd:
        totals.append(["cost: GPU + tokens + tools + task",
                       f"${a.cost.gpu_usd:.6f} + ${a.cost.token_usd:.6f} + "
                       f"${a.cost.tool_usd:.6f} + ${a.cost.task_usd:.6f} = "
                       f"${a.cost.total_usd:.6f}"])
        totals.append(["cost basis", "GPU: model-step seconds × $/GPU-hour, one GPU held "
                       "alone at batch 1 during model steps only (none while tools run; a "
                       "batched fleet shares it); tokens at list prices; tools by the second"])
    encodes = [s for s in t.steps if isinstance(s, EncodeStep)]
    if encodes:
        totals.append(["encode: raw bytes / visual tokens / EC bytes",
                       f"{sum(e.raw_bytes for e in encodes):,.0f} B / "
                       f"{sum(e.visual_tokens for e in encodes):,} tokens / "
                       f"{sum(e.ec_bytes for e in encodes):,.0f} B"])
    rt = t.realtime
    first_response: float | None
    if playback is not None:
        first_response = playback.first_play_s
        totals += [["first audio plays", f"{_s(playback.first_play_s)} s"],
                   ["gaps / total stall", f"{playback.gaps} / {_s(playback.total_stall_s)} s"]]
    else:
        first_response = min((sp.end_s for sp in a.dag.spans if sp.kind == "model"),
                             default=None)
    if rt is not None and rt.first_response_s is not None and first_response is not None:
        met = "met" if first_response <= rt.first_response_s else "MISSED"
        totals.append(["first response vs requirement",
                       f"{_s(first_response)} vs {_s(rt.first_response_s)} s: {met}"])
    finish = a.dag.makespan_s if playback is None else max(a.dag.makespan_s, playback.end_s)
    if rt is not None and rt.finish_s is not None:
        met = "met" if finish <= rt.finish_s else "MISSED"
        totals.append(["finish (last step or last audio) vs requirement",
                       f"{_s(finish)} vs {_s(rt.finish_s)} s: {met}"])
    if t.check is not None:
        checks = "; ".join(f"{k}: {v}" for k, v in t.check.checks.items())
        totals.append(["check", ("passed" if t.check.passed else f"failed ({t.check.reason})")
                       + (f" — {checks}" if checks else "")])
    sections = [
        Section("Steps", ["step", "kind", "start s", "end s", "duration s", "critical",
                          "holds", "I/K/P/O tokens"], steps,
                ["start = latest end of the steps it waits for; the critical path is the chain "
                 "that ends last"]),
        Section("Task", ["", ""], totals,
                ["state: what steps hold while they run; a shared prefix counts once"]),
    ]
    data: dict[str, Any] = {
        "task": t.task, "model": t.model, "model_version": t.model_version,
        "durations_s": a.durations, "critical_path": list(a.dag.critical_path),
        "critical_path_s": a.dag.makespan_s, "serial_s": a.serial.makespan_s,
        "parallel_saving_s": a.parallel_saving_s, "time_by_kind_s": a.dag.by_kind_s(),
        "shares": shares, "spans": list(a.dag.spans),
        "state": {"dag": {"peak_bytes": a.dag_state.peak_bytes, "curve": a.dag_state,
                          "byte_seconds": a.dag_state.byte_seconds,
                          "gib_seconds": a.dag_state.gib_seconds},
                  "serial": {"peak_bytes": a.serial_state.peak_bytes,
                             "byte_seconds": a.serial_state.byte_seconds,
                             "gib_seconds": a.serial_state.gib_seconds}},
        "reuse_intervals_s": a.reuse_intervals_s, "cost": a.cost,
        "rounds": tk.rounds, "input_tokens": tk.input_tokens,
        "cached_tokens": tk.cached_tokens, "output_tokens": tk.output_tokens,
        "prefix_hit_frac": tk.prefix_hit_frac,
        "check": t.check.model_dump() if t.check else None,
        "first_response_s": first_response, "finish_s": finish,
        "playback": None if playback is None else {
            "first_play_s": playback.first_play_s, "gaps": playback.gaps,
            "total_stall_s": playback.total_stall_s, "blocks": list(playback.blocks)},
    }
    if a.speedup is not None:
        sp = a.speedup
        rows = [[sid, f"{f:g}×"] for sid, f in sp.factors.items()]
        rows += [["task before / after", f"{sp.before.makespan_s:,.4f} / "
                                         f"{sp.after.makespan_s:,.4f} s"],
                 ["sped-up steps, summed", f"{sp.sped_up_s:,.4f} s"],
                 ["their share f of the critical path", f"{sp.share:.1%}"],
                 ["whole-task speedup", f"{sp.speedup:.3f}×"],
                 ["saved", f"{sp.saved_s:,.4f} s ({sp.saved_share:.1%})"]]
        if sp.amdahl is not None:
            rows.append(["Amdahl 1/((1−f)+f/s)", f"{sp.amdahl:.3f}×"])
        sections.append(Section("Speedup", ["", ""], rows,
                                ["rescheduled with the new durations; Amdahl keeps the "
                                 "critical path fixed: equal on a serial chain, an upper "
                                 "bound when a parallel branch takes over"]))
        data["speedup"] = {"factors": sp.factors, "before_s": sp.before.makespan_s,
                           "after_s": sp.after.makespan_s, "share": sp.share,
                           "sped_up_s": sp.sped_up_s,
                           "speedup": sp.speedup, "saved_s": sp.saved_s,
                           "saved_share": sp.saved_share, "amdahl": sp.amdahl}
    return Document(f"Agent task: {t.task or 'trajectory'}", inputs, assumptions, sections, data)


def _hit(frac: float | None) -> str:
    return "" if frac is None else f"{frac:.1%}"


def logged_doc(names: list[str], analyses: list[TaskAnalysis], outcome: LoggedOutcome,
               inputs: dict[str, Any]) -> Document:
    rows = []
    for name, a in zip(names, analyses, strict=True):
        chk, tk = a.trajectory.check, a.tokens
        rows.append([name, "passed" if chk and chk.passed else "failed", f"{tk.rounds:,}",
                     f"{tk.input_tokens:,}", f"{tk.cached_tokens:,}", _hit(tk.prefix_hit_frac),
                     f"{tk.output_tokens:,}", f"{_s(a.dag.makespan_s)} s",
                     f"${a.cost.total_usd:.6f}"])
    tokens = sum((a.tokens for a in analyses[1:]), analyses[0].tokens)
    rows.append(["all tasks", "", f"{tokens.rounds:,}", f"{tokens.input_tokens:,}",
                 f"{tokens.cached_tokens:,}", _hit(tokens.prefix_hit_frac),
                 f"{tokens.output_tokens:,}", "", ""])
    together = combined_curve([(a.trajectory.arrival_s, a.dag_state) for a in analyses])
    c = outcome.cost
    summary = [["tasks / passed", f"{c.attempts} / {c.successes} tasks"],
               ["state of all tasks: peak / ∫M(t)dt (offset by arrival_s)",
                f"{together.peak_bytes / GiB:,.4g} GiB / {together.gib_seconds:,.4g} GiB·s"],
               ["total cost", f"${c.total_cost:.6f}"],
               ["cost per success", f"${c.per_success:.6f}" if c.per_success is not None
                else "undefined: no task passed"]]
    summary += [[f"failed: {reason}", f"{n} task{'' if n == 1 else 's'}"]
                for reason, n in outcome.failures]
    return Document("Logged agent tasks", inputs, {}, [
        Section("Tasks", ["trajectory", "check", "rounds", "input tokens", "cached tokens",
                          "prefix hits", "output tokens", "critical path", "cost"], rows,
                ["rounds: model calls; prefix hits: cached / input tokens (ΣK/ΣI); the last "
                 "row sums the tasks"]),
        Section("Cost per success", ["", ""], summary,
                ["every task's cost over the tasks whose check passed"]),
    ], {"tasks": [{"file": n, "passed": bool(a.trajectory.check and a.trajectory.check.passed),
                   "rounds": a.tokens.rounds, "input_tokens": a.tokens.input_tokens,
                   "cached_tokens": a.tokens.cached_tokens,
                   "output_tokens": a.tokens.output_tokens,
                   "prefix_hit_frac": a.tokens.prefix_hit_frac,
                   "critical_path_s": a.dag.makespan_s, "cost": a.cost}
                  for n, a in zip(names, analyses, strict=True)],
        "rounds": tokens.rounds, "input_tokens": tokens.input_tokens,
        "cached_tokens": tokens.cached_tokens, "output_tokens": tokens.output_tokens,
        "prefix_hit_frac": tokens.prefix_hit_frac,
        "total_cost": c.total_cost, "successes": c.successes, "attempts": c.attempts,
        "state": {"peak_bytes": together.peak_bytes, "gib_seconds": together.gib_seconds,
                  "curve": together},
        "cost_per_success": c.per_success,
        "failures": {reason: n for reason, n in outcome.failures}})


def rounds_doc(costs: list[RoundCost], inputs: dict[str, Any],
               assumptions: dict[str, Any]) -> Document:
    rows = [[str(i + 1), f"{c.round.input_tokens:,}", f"{c.round.cached_tokens:,}",
             f"{c.round.new_tokens:,}", f"{c.flops_uncached / TFLOP:,.3f}",
             f"{c.flops_cached / TFLOP:,.3f}", fmt_bytes(c.kv_read_bytes, "MiB")]
            for i, c in enumerate(costs)]
    tot_in = sum(c.round.input_tokens for c in costs)
    tot_k = sum(c.round.cached_tokens for c in costs)
    no_cache = sum(c.flops_uncached for c in costs)
    cached = sum(c.flops_cached for c in costs)
    rows.append(["total", f"{tot_in:,}", f"{tot_k:,}", f"{tot_in - tot_k:,}",
                 f"{no_cache / TFLOP:,.3f}", f"{cached / TFLOP:,.3f}", ""])
    return Document("Multi-turn prefix reuse", inputs, assumptions, [Section(
        "Rounds", ["round", "input I", "cached K", "new P = I − K", "prefill TFLOPs, no cache",
                   "with cache", "cached KV read"], rows,
        ["with the cache, projections and MLP see P tokens; attention still reads all I",
         f"hit rate {tot_k / tot_in:.1%}; the cache saves {1 - cached / no_cache:.1%} of "
         "prefill FLOPs"])],
        {"rounds": costs, "input_tokens": tot_in, "cached_tokens": tot_k,
         "new_tokens": tot_in - tot_k, "flops_uncached": no_cache, "flops_cached": cached})


def edits_doc(context_tokens: int, effects: list[tuple[str, EditEffect]],
              inputs: dict[str, Any]) -> Document:
    rows = [[label, f"{e.context_tokens:,}", f"{e.reusable_tokens:,}", f"{e.prefill_tokens:,}"]
            for label, e in effects]
    return Document("Context edits and the reusable prefix", inputs, {}, [Section(
        f"Edits of a {context_tokens:,}-token context",
        ["edit", "context after", "reusable prefix", "rows to prefill"], rows,
        ["only tokens before the first changed position keep valid K/V"])],
        {"context_tokens": context_tokens,
         "edits": [{"edit": label, **vars(e), "prefill_tokens": e.prefill_tokens}
                   for label, e in effects]})
