"""``napkin agent`` (trajectories) and ``napkin context`` (multi-turn prefix reuse)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
    PlotOption,
    WeightsOpt,
    accelerator,
    deployment,
    emit,
)
from napkin.errors import NapkinError, refuse_unused, require

if TYPE_CHECKING:
    from napkin.agents.context import Edit

context_app = typer.Typer(help="Multi-turn context: prefix reuse per round, edits, agent "
                               "input growth.", no_args_is_help=True)


def agent(
    files: Annotated[list[Path], typer.Argument(metavar="TRAJECTORY...",
                                                help="Trajectory YAML/JSON file(s); several "
                                                     "= a logged set (cost per success).")],
    speedup: Annotated[list[str], typer.Option(
        "--speedup", help="STEP=FACTOR (id, glob or kind:tool); repeatable.")] = [],  # noqa: B006
    model: Annotated[str | None, typer.Option(
        "--model", help="Override the trajectory's model (catalog id or config.json).")] = None,
    gpu: GpuOpt = None,
    # the shared options, defaulting to None so that one given without --gpu can be refused
    weights: Annotated[str | None, WeightsOpt.__metadata__[0]] = None,
    kv: Annotated[str | None, KvOpt.__metadata__[0]] = None,
    mfu: Annotated[float | None, MfuOpt.__metadata__[0]] = None,
    mbu: Annotated[float | None, MbuOpt.__metadata__[0]] = None,
    plot: Annotated[Path | None, PlotOption(help="Write the timeline and "
                                                 "M(t) figure (png/svg).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Critical path vs serial sum, model/tool shares, state held (GiB·s), Amdahl speedups,
    cost; with several files, cost per successful task over the set."""
    from napkin.agents.analysis import analyze
    from napkin.agents.success import logged_outcome
    from napkin.agents.timeline import parse_speedups
    from napkin.agents.trajectory import load_trajectory
    from napkin.catalog import load_model
    from napkin.report.agent_views import agent_doc, logged_doc

    require(len(files) >= 1, "trajectory: give at least one file")
    if not gpu:
        refuse_unused({"mfu": mfu, "mbu": mbu, "weights": weights, "kv-dtype": kv}, "--gpu")
    weights, kv = weights or "bf16", kv or "bf16"
    mfu, mbu = 1.0 if mfu is None else mfu, 1.0 if mbu is None else mbu
    factors = parse_speedups(speedup)
    require(plot is None or plot.suffix in (".png", ".svg", ".pdf"),
            f"plot: {plot} must end in .png, .svg or .pdf")
    analyses = []
    for path in files:
        traj = load_trajectory(path)
        ref = model or traj.model
        spec = load_model(ref) if ref else None
        dep = None
        if gpu:
            require(spec is not None, "model: computing durations needs a model (--model or "
                                      "the trajectory's model field)")
            assert spec is not None
            dep = deployment(spec, accelerator(gpu, None, None, None), weights, kv, False,
                             mfu, mbu, 0.0)
        analyses.append(analyze(traj, spec, dep, factors))
    assumptions = {"mfu": mfu, "mbu": mbu, "weights": weights, "kv_dtype": kv} if gpu else {}
    inputs = {"files": [str(f) for f in files], "speedup": speedup, "gpu": gpu}
    if len(files) > 1:
        outcome = logged_outcome([a.trajectory for a in analyses],
                                 [a.cost.total_usd for a in analyses])
        emit(logged_doc([str(f) for f in files], analyses, outcome, inputs), fmt)
        return
    if plot is not None:
        from napkin.report.agent_plots import plot_trajectory

        plot_trajectory(analyses[0], plot)
    rt, playback = analyses[0].trajectory.realtime, None
    if rt is not None and rt.arrivals_s:
        from napkin.media.playback import timeline_from_arrivals

        require(rt.block_s is not None, "realtime: arrivals_s needs block_s (playback length "
                                        "of one block)")
        assert rt.block_s is not None
        playback = timeline_from_arrivals(rt.arrivals_s, rt.block_s, rt.buffer_s)
    emit(agent_doc(analyses[0], inputs, assumptions, playback), fmt)


def _pairs(text: str) -> list[tuple[int, int]]:
    """``"700:0,1443:1392"`` → [(700, 0), (1443, 1392)] (input:cached per round)."""
    out = []
    for item in text.split(","):
        i, _, k = item.strip().partition(":")
        try:
            out.append((int(i), int(k or 0)))
        except ValueError:
            raise NapkinError(f"rounds: {item!r} must be INPUT:CACHED tokens, e.g. "
                              "1443:1392") from None
    return out


@context_app.command()
def rounds(
    model_ref: ModelArg,
    spec: Annotated[str, typer.Option("--rounds", help="INPUT:CACHED tokens per round, "
                                                       "comma-separated, e.g. 700:0,1443:1392")],
    weights: WeightsOpt = "bf16",
    kv: KvOpt = "bf16",
    fmt: FormatOpt = Format.table,
) -> None:
    """Per round I, K, P = I − K, and prefill FLOPs with and without the prefix cache."""
    from napkin.accounting import Precision
    from napkin.agents.context import Round, round_costs
    from napkin.catalog import load_model
    from napkin.report.agent_views import rounds_doc

    costs = round_costs(load_model(model_ref), [Round(i, k) for i, k in _pairs(spec)],
                        Precision.of(weights, kv))
    emit(rounds_doc(costs, {"model": model_ref, "rounds": spec},
                    {"weights": weights, "kv_dtype": kv}), fmt)


def _edit(text: str) -> tuple[str, "Edit"]:
    from napkin.agents.context import Edit

    kind, *nums = text.split(":")
    try:
        values = [int(v) for v in nums]
    except ValueError:
        values = []
    forms = {"append": 1, "replace": 3, "summarize": 3}
    require(kind in forms and len(values) == forms[kind],
            f"edit: {text!r} must be append:N, replace:POSITION:REMOVED:ADDED or "
            "summarize:POSITION:REMOVED:SUMMARY")
    if kind == "append":
        return text, Edit("append", values[0])
    return text, Edit(kind, values[2], values[0], values[1])


@context_app.command()
def edit(
    context: Annotated[int, typer.Option("--context", help="Tokens in the context now.")],
    edits: Annotated[list[str], typer.Option(
        "--edit", help="append:N | replace:POS:REMOVED:ADDED | summarize:POS:REMOVED:SUMMARY "
                       "(1-based POS); repeatable, each applied to the original context.")],
    fmt: FormatOpt = Format.table,
) -> None:
    """The reusable prefix and the rows to prefill after each edit (§3.2.1)."""
    from napkin.agents.context import apply_edit
    from napkin.report.agent_views import edits_doc

    effects = [(label, apply_edit(context, e)) for label, e in map(_edit, edits)]
    emit(edits_doc(context, effects, {"context": context, "edits": edits}), fmt)


@context_app.command()
def growth(
    system: Annotated[int, typer.Option("--system", help="S: tokens of the first step.")],
    step: Annotated[int, typer.Option("--step", help="d: tokens each step adds.")],
    steps: Annotated[int, typer.Option("--steps", help="n: steps.")],
    model_ref: Annotated[str | None, typer.Option("--model", help="Cost prefill FLOPs on "
                                                                  "this model.")] = None,
    usd_in: Annotated[float, FiniteOption("--usd-per-m-input", help="$ per 1M uncached "
                                                                    "input tokens.")] = 0.0,
    usd_cached: Annotated[float, FiniteOption("--usd-per-m-cached", help="$ per 1M cached "
                                                                         "input tokens.")] = 0.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Agent input tokens nS + d·n(n−1)/2, what a prefix cache leaves to prefill, and cost."""
    from napkin.accounting import Precision
    from napkin.agents.context import agent_input_tokens, agent_rounds, round_costs
    from napkin.catalog import load_model
    from napkin.report.econ_views import table_doc
    from napkin.units import TFLOP

    require(usd_in >= 0 and usd_cached >= 0, "price: $ per million tokens must be >= 0")
    total = agent_input_tokens(system, step, steps)
    rs = agent_rounds(system, step, steps)
    new = sum(r.new_tokens for r in rs)
    data = {"input_tokens": total, "prefill_tokens_with_cache": new,
            "cached_tokens": total - new,
            "usd_without_cache": total * usd_in / 1e6,
            "usd_with_cache": (new * usd_in + (total - new) * usd_cached) / 1e6}
    rows = [["input tokens n·S + d·n(n−1)/2", f"{total:,}"],
            ["prefilled with a prefix cache S + d·(n−1)", f"{new:,}"],
            ["served from the cache", f"{total - new:,}"]]
    if usd_in or usd_cached:
        rows += [["$ without cache", f"{data['usd_without_cache']:.6f}"],
                 ["$ with cache", f"{data['usd_with_cache']:.6f}"]]
    if model_ref:
        costs = round_costs(load_model(model_ref), rs, Precision.of())
        data["flops_uncached"] = sum(c.flops_uncached for c in costs)
        data["flops_cached"] = sum(c.flops_cached for c in costs)
        rows += [["prefill TFLOPs without cache", f"{data['flops_uncached'] / TFLOP:,.3f}"],
                 ["prefill TFLOPs with cache", f"{data['flops_cached'] / TFLOP:,.3f}"]]
    emit(table_doc("Agent input growth", f"S = {system}, d = {step}, n = {steps}", ["", ""],
                   rows, data, {"system": system, "step": step, "steps": steps,
                                "model": model_ref},
                   {"usd_per_m_input": usd_in, "usd_per_m_cached": usd_cached},
                   ["step i resends everything before it: S + d·(i − 1) tokens"]), fmt)
