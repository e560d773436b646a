"""Cost per successful task, price changes, escalation, lifecycle break-even:
``napkin cost success | price | escalation | breakeven`` (chapters 3.2.2, 3.2.4, 3.6.3).

Costs are in whatever currency unit you give them in ($, GPU-seconds, …); every result is
in the same unit.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from napkin.agents.success import attempt_cost
from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.economics import (
    break_even_tasks,
    cost_per_success,
    escalated_cost,
    min_success_gain,
    min_success_rate,
    price_change_ratio,
)
from napkin.errors import require
from napkin.inference.decision import break_even_escalation
from napkin.report.econ_views import full_number, table_doc


@checked
def cost_success(*, cost: Sequence[float], success: Sequence[float],
                 verification: Sequence[float] | None = None,
                 tools: Sequence[float] | None = None,
                 environment: Sequence[float] | None = None) -> Result:
    """What one successful task costs with each method, and the success rate each method
    needs to match the first (§3.2.2).

    Method i's attempt costs ``c = generation + verification + tools + environment``
    (``cost`` is the generation cost; the other lists default to zeros, one value per
    method); its cost per success is ``c/p`` with ``success`` rate p in (0, 1]; the rate it
    needs to match method 1 is ``c/C₁`` with ``C₁`` method 1's cost per success.
    ``value``: dict with ``cost_per_attempt``, ``cost_per_success`` and
    ``min_success_rate`` (the rate to match method 1), one per method. The result has a
    figure (Figure 3-9: the cost of 100 attempts, the tasks passed, their quotient).
    """
    generation, rates = list(cost), list(success)
    require(len(generation) == len(rates) and bool(generation),
            "success: give one rate per cost")
    extra = []
    for values, field in ((verification, "verification"), (tools, "tools"),
                          (environment, "environment")):
        values = [0.0] * len(generation) if values is None else list(values)
        require(len(values) == len(generation), f"{field}: give one value per method")
        extra.append(values)
    costs = [attempt_cost(g, v, t, e) for g, v, t, e in zip(generation, *extra, strict=True)]
    per = [cost_per_success(c, p) for c, p in zip(costs, rates, strict=True)]
    match = [min_success_rate(c, per[0]) for c in costs]
    rows = [[f"method {i + 1}", full_number(c), f"{p:.1%}",
             f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:,.4g}", f"{m:.1%}"]
            for i, (c, p, x, m) in enumerate(zip(costs, rates, per, match, strict=True))]
    doc = table_doc("Cost per successful task", "methods",
                    ["", "cost/attempt", "success", "cost/success", "success to match #1"], rows,
                    {"cost_per_success": per, "cost_per_attempt": costs,
                     "min_success_rate": match},
                    {"generation": generation, "verification": extra[0], "tools": extra[1],
                     "environment": extra[2], "success_rates": rates},
                    notes=["every attempt's cost over the successes: c/p"])
    components = {"generation": generation, "verification": extra[0], "tools": extra[1],
                  "environment": extra[2]}

    def plotter(path: Path) -> None:
        from napkin.report.cost_plots import plot_cost_success

        plot_cost_success(components, rates, per, path)

    return Result(doc, {"cost_per_attempt": costs, "cost_per_success": per,
                        "min_success_rate": match}, plotter)


@checked
def cost_price(*, price_ratio: float, tokens_ratio: float, success_old: float,
               success_new: float) -> Result:
    """How the cost per success moves when the token price, the tokens per attempt and the
    success rate change (§3.2.2).

    ``new/old = price_ratio · tokens_ratio · success_old / success_new`` (ratios new/old,
    success rates in (0, 1]); price ÷10, tokens ×20, 50 % → 80 % gives 1.25.
    ``value``: the ratio (float).
    """
    ratio = price_change_ratio(price_ratio, tokens_ratio, success_old, success_new)
    doc = table_doc("Price change", "cost per success", ["", ""],
                    [["new / old", f"{ratio:,.4g}"]], {"cost_per_success_ratio": ratio},
                    {"price_ratio": price_ratio, "tokens_ratio": tokens_ratio,
                     "success_old": success_old, "success_new": success_new})
    return Result(doc, ratio)


@checked
def cost_escalation(*, decision_cost: float, llm_cost: float,
                    share: Sequence[float] = (0.01, 0.05)) -> Result:
    """What escalating a share of decision-model requests to an LLM costs, and the success
    gain it must buy (§3.2.4, Exercise 3-3).

    At escalated share e in [0, 1] a request costs ``c_dec + e·c_LLM`` dollars on average
    (``decision_cost`` c_dec and ``llm_cost`` c_LLM, $ per request); escalation lowers the
    cost per success only if ``p₂/p₁ > (c_dec + e·c_LLM)/c_dec``; escalations alone cost as
    much as the decision model at ``e = c_dec/c_LLM``.
    ``value``: dict with ``shares``, ``mean_usd_per_request`` and ``min_success_gain`` (one
    per share) and ``break_even_share``.
    """
    shares = list(share)
    pairs = [(escalated_cost(decision_cost, llm_cost, e),
              min_success_gain(decision_cost, llm_cost, e)) for e in shares]
    mean, gain = [m for m, _ in pairs], [g for _, g in pairs]
    rows = [[f"{e:.2%}", _usd(m), f"{g:,.3f}×"] for e, (m, g) in zip(shares, pairs,
                                                                      strict=True)]
    even = break_even_escalation(decision_cost, llm_cost)
    data = {"shares": shares, "mean_usd_per_request": mean, "min_success_gain": gain,
            "break_even_share": even}
    doc = table_doc("Escalation to an LLM", "per request",
                    ["escalated share e", "mean cost, $ per request",
                     "minimum success gain p₂/p₁"], rows, data,
                    {"decision_usd_per_request": decision_cost,
                     "llm_usd_per_request": llm_cost},
                    notes=[f"escalations alone cost as much as the decision model at e = "
                           f"c_dec/c_LLM = {even:.3%} of requests"])
    return Result(doc, dict(data))


CostUnit = Literal["usd", "gpu-s", "gpu-h"]
"""What ``cost breakeven``'s costs are in: dollars, GPU-seconds or GPU-hours."""
_UNITS: dict[str, tuple[str, str]] = {"usd": ("$", "usd"), "gpu-s": ("GPU-s", "gpu_s"),
                                      "gpu-h": ("GPU-h", "gpu_h")}
"""unit → (label in tables, suffix of JSON keys)."""


def _usd(x: float) -> str:
    return f"{'-' if x < 0 else ''}${abs(x):,.6g}"


def _amount(x: float, unit: CostUnit) -> str:
    if unit == "usd":
        return _usd(x)
    return f"{x:,.0f} {_UNITS[unit][0]}" if abs(x) >= 1e6 else f"{x:,.6g} {_UNITS[unit][0]}"


@checked
def cost_breakeven(*, extra_upfront: float, saving: float, tasks: Sequence[float] = (),
                   unit: CostUnit = "usd") -> Result:
    """After how many tasks a model that costs more up front but less per task has paid
    back (§3.6.3).

    ``Q* = ΔC₀/Δc`` tasks with ``extra_upfront`` ΔC₀ and ``saving`` Δc > 0 per task, both in
    ``unit`` (dollars, GPU-seconds or GPU-hours: the chapter's example is 3.6e8 GPU-s at 0.72
    GPU-s per task); at each of ``tasks`` counts Q the cheaper-to-run model's lifecycle total
    minus the other's is ``ΔC₀ − Q·Δc`` (negative: it is ahead). ``value``: dict with
    ``break_even_tasks`` and ``differences_<unit>`` (one per task count; unit ``usd``,
    ``gpu_s`` or ``gpu_h``).
    """
    require(unit in _UNITS, f"unit: must be one of {', '.join(_UNITS)}, got {unit!r}")
    q = break_even_tasks(extra_upfront, saving)
    counts = list(tasks)
    differences = [extra_upfront - n * saving for n in counts]
    key = _UNITS[unit][1]
    rows = [["break-even Q* = ΔC₀/Δc", f"{q:,.0f} tasks" if q >= 1e3 else f"{q:,.4g} tasks"]]
    rows += [[f"after {full_number(n)} tasks: cheaper-to-run model's total − other's",
              _amount(d, unit)] for n, d in zip(counts, differences, strict=True)]
    doc = table_doc("Lifecycle break-even", "break-even", ["quantity", "value"], rows,
                    {"break_even_tasks": q, f"differences_{key}": differences},
                    {f"extra_upfront_{key}": extra_upfront,
                     f"saving_per_task_{key}": saving},
                    notes=[f"ΔC₀ = {_amount(extra_upfront, unit)} extra up front, "
                           f"Δc = {_amount(saving, unit)} saved per task"])
    return Result(doc, {"break_even_tasks": q, f"differences_{key}": differences})
