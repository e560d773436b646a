"""``napkin cost``: cost per success, price changes, escalation, break-even (over
:mod:`napkin.api.cost`)."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import cost as api
from napkin.cli.common import FiniteOption, Format, FormatOpt, PlotOption, emit
from napkin.errors import NapkinError

app = typer.Typer(help="Cost per successful task, price changes, escalation, break-even.",
                  no_args_is_help=True)


def _floats(text: str, field: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(f"{field}: {text!r} must be comma-separated numbers") from None


@app.command()
def success(
    cost: Annotated[str, typer.Option("--cost", help="Generation cost per attempt of each "
                                                     "method, comma-separated.")],
    rate: Annotated[str, typer.Option("--success", help="Success rate of each method.")],
    verification: Annotated[str, typer.Option("--verification", help="Verification cost per "
                                                                     "attempt, per method.")] = "",
    tools: Annotated[str, typer.Option("--tools", help="Tool cost per attempt, per method.")] =
    "",
    environment: Annotated[str, typer.Option("--environment", help="Environment cost per "
                                                                   "attempt, per method.")] = "",
    plot: Annotated[Path | None, PlotOption(
        help="Write Figure 3-9 for these methods: cost of 100 attempts, tasks passed, cost "
             "per success (png/svg).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Cost per success c/p of each method (c = generation + verification + tools +
    environment), and the success rate each needs to match the first."""
    result = api.cost_success(
        cost=_floats(cost, "cost"), success=_floats(rate, "success"),
        verification=_floats(verification, "verification") if verification else None,
        tools=_floats(tools, "tools") if tools else None,
        environment=_floats(environment, "environment") if environment else None)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


@app.command()
def price(
    price_ratio: Annotated[float, FiniteOption("--price-ratio", help="New/old token price.")],
    tokens_ratio: Annotated[float, FiniteOption("--tokens-ratio", help="New/old tokens.")],
    success_old: Annotated[float, FiniteOption("--success-old")],
    success_new: Annotated[float, FiniteOption("--success-new")],
    fmt: FormatOpt = Format.table,
) -> None:
    """New over old cost per success after a price change (§3.2.2)."""
    emit(api.cost_price(price_ratio=price_ratio, tokens_ratio=tokens_ratio,
                        success_old=success_old, success_new=success_new), fmt)


@app.command()
def escalation(
    decision_cost: Annotated[float, FiniteOption("--decision-cost", help="$ per request.")],
    llm_cost: Annotated[float, FiniteOption("--llm-cost", help="$ per escalated request.")],
    share: Annotated[str, typer.Option("--share", help="Escalated shares, e.g. 0.01,0.05.")] =
    "0.01,0.05",
    fmt: FormatOpt = Format.table,
) -> None:
    """Mean cost c_dec + e·c_LLM, the success gain escalation must buy, the break-even share."""
    emit(api.cost_escalation(decision_cost=decision_cost, llm_cost=llm_cost,
                             share=_floats(share, "share")), fmt)


@app.command()
def breakeven(
    extra_upfront: Annotated[float, FiniteOption("--extra-upfront",
                                                 help="ΔC₀: extra up-front cost, in --unit.")],
    saving: Annotated[float, FiniteOption("--saving", help="Δc: saving per task, in --unit.")],
    tasks: Annotated[str | None, typer.Option("--tasks", help="Task counts to compare.")] = None,
    unit: Annotated[str, typer.Option(
        "--unit", help="What the costs are in: usd, gpu-s (GPU-seconds) or gpu-h "
                       "(GPU-hours).")] = "usd",
    fmt: FormatOpt = Format.table,
) -> None:
    """Q* = ΔC₀/Δc, and the lifecycle difference at given task counts (§3.6.3)."""
    emit(api.cost_breakeven(extra_upfront=extra_upfront, saving=saving,
                            tasks=_floats(tasks, "tasks") if tasks else [], unit=unit), fmt)
