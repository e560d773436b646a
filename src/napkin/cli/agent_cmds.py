"""``napkin agent`` (trajectories) and ``napkin context`` (multi-turn prefix reuse), over
:mod:`napkin.api.agents`."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import agents as api
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
    emit,
)
from napkin.errors import NapkinError

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
    cost; with several files, each run's rounds, tokens, prefix-cache hit rate, cost and
    check, and the cost per successful task over the set."""
    result = api.analyze_trajectory(files, speedup=speedup, model=model, gpu=gpu,
                                    weights=weights, kv_dtype=kv, mfu=mfu, mbu=mbu)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


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
    emit(api.context_rounds(model_ref, rounds=_pairs(spec), weights=weights, kv_dtype=kv), fmt)


@context_app.command()
def edit(
    context: Annotated[int, typer.Option("--context", help="Tokens in the context now.")],
    edits: Annotated[list[str], typer.Option(
        "--edit", help="append:N | replace:POS:REMOVED:ADDED | summarize:POS:REMOVED:SUMMARY "
                       "(1-based POS); repeatable, each applied to the original context.")],
    fmt: FormatOpt = Format.table,
) -> None:
    """The reusable prefix and the rows to prefill after each edit (§3.2.1)."""
    emit(api.context_edit(context=context, edits=edits), fmt)


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
    emit(api.context_growth(system=system, step=step, steps=steps, model=model_ref,
                            usd_per_m_input=usd_in, usd_per_m_cached=usd_cached), fmt)
