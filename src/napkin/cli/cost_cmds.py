"""``napkin cost``: cost per success, price changes, escalation, break-even."""

from typing import Annotated

import typer

from napkin.cli.common import FiniteOption, Format, FormatOpt, emit
from napkin.errors import require

app = typer.Typer(help="Cost per successful task, price changes, escalation, break-even.",
                  no_args_is_help=True)


def _floats(text: str, field: str) -> list[float]:
    from napkin.errors import NapkinError

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
    fmt: FormatOpt = Format.table,
) -> None:
    """Cost per success c/p of each method (c = generation + verification + tools +
    environment), and the success rate each needs to match the first."""
    from napkin.agents.success import attempt_cost
    from napkin.economics import cost_per_success, min_success_rate
    from napkin.report.econ_views import table_doc

    generation, rates = _floats(cost, "cost"), _floats(rate, "success")
    require(len(generation) == len(rates) and generation, "success: give one rate per cost")
    extra = []
    for text, field in ((verification, "verification"), (tools, "tools"),
                        (environment, "environment")):
        values = _floats(text, field) if text else [0.0] * len(generation)
        require(len(values) == len(generation), f"{field}: give one value per method")
        extra.append(values)
    costs = [attempt_cost(g, v, t, e) for g, v, t, e in zip(generation, *extra, strict=True)]
    per = [cost_per_success(c, p) for c, p in zip(costs, rates, strict=True)]
    rows = [[f"method {i + 1}", f"{c:g}", f"{p:.1%}", f"{x:,.4g}",
             f"{min_success_rate(c, per[0]):.1%}"]
            for i, (c, p, x) in enumerate(zip(costs, rates, per, strict=True))]
    emit(table_doc("Cost per successful task", "methods",
                   ["", "cost/attempt", "success", "cost/success", "success to match #1"], rows,
                   {"cost_per_success": per, "cost_per_attempt": costs},
                   {"generation": generation, "verification": extra[0], "tools": extra[1],
                    "environment": extra[2], "success_rates": rates},
                   notes=["every attempt's cost over the successes: c/p"]), fmt)


@app.command()
def price(
    price_ratio: Annotated[float, FiniteOption("--price-ratio", help="New/old token price.")],
    tokens_ratio: Annotated[float, FiniteOption("--tokens-ratio", help="New/old tokens.")],
    success_old: Annotated[float, FiniteOption("--success-old")],
    success_new: Annotated[float, FiniteOption("--success-new")],
    fmt: FormatOpt = Format.table,
) -> None:
    """New over old cost per success after a price change (§3.2.2)."""
    from napkin.economics import price_change_ratio
    from napkin.report.econ_views import table_doc

    ratio = price_change_ratio(price_ratio, tokens_ratio, success_old, success_new)
    emit(table_doc("Price change", "cost per success", ["", ""],
                   [["new / old", f"{ratio:,.4g}"]], {"cost_per_success_ratio": ratio},
                   {"price_ratio": price_ratio, "tokens_ratio": tokens_ratio,
                    "success_old": success_old, "success_new": success_new}), fmt)


@app.command()
def escalation(
    decision_cost: Annotated[float, FiniteOption("--decision-cost", help="$ per request.")],
    llm_cost: Annotated[float, FiniteOption("--llm-cost", help="$ per escalated request.")],
    share: Annotated[str, typer.Option("--share", help="Escalated shares, e.g. 0.01,0.05.")] =
    "0.01,0.05",
    fmt: FormatOpt = Format.table,
) -> None:
    """Mean cost c_dec + e·c_LLM, the success gain escalation must buy, the break-even share."""
    from napkin.economics import escalated_cost, min_success_gain
    from napkin.inference.decision import break_even_escalation
    from napkin.report.econ_views import table_doc

    shares = _floats(share, "share")
    rows = [[f"{e:.2%}", f"{escalated_cost(decision_cost, llm_cost, e):.6g}",
             f"{min_success_gain(decision_cost, llm_cost, e):,.3f}"] for e in shares]
    even = break_even_escalation(decision_cost, llm_cost)
    emit(table_doc("Escalation to an LLM", "per request",
                   ["share e", "mean cost", "minimum p₂/p₁"], rows,
                   {"shares": shares, "break_even_share": even},
                   {"decision_cost": decision_cost, "llm_cost": llm_cost},
                   notes=[f"escalation costs as much as the decision model at e = {even:.3%}"]),
         fmt)


@app.command()
def breakeven(
    extra_upfront: Annotated[float, FiniteOption("--extra-upfront",
                                                 help="ΔC₀: extra up-front cost.")],
    saving: Annotated[float, FiniteOption("--saving", help="Δc: saving per task.")],
    tasks: Annotated[str | None, typer.Option("--tasks", help="Task counts to compare.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Q* = ΔC₀/Δc, and the lifecycle difference at given task counts (§3.6.3)."""
    from napkin.economics import break_even_tasks
    from napkin.report.econ_views import table_doc

    q = break_even_tasks(extra_upfront, saving)
    counts = _floats(tasks, "tasks") if tasks else []
    rows = [["break-even tasks Q*", f"{q:,.4g}"]]
    rows += [[f"{n:,.4g} tasks: cheaper-to-run model's total − other's",
              f"{extra_upfront - n * saving:,.4g}"] for n in counts]
    emit(table_doc("Lifecycle break-even", "break-even", ["", ""], rows,
                   {"break_even_tasks": q,
                    "differences": [extra_upfront - n * saving for n in counts]},
                   {"extra_upfront": extra_upfront, "saving_per_task": saving}), fmt)
