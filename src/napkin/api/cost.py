"""Cost per successful task, price changes, escalation, lifecycle break-even:
``napkin cost success | price | escalation | breakeven`` (chapters 3.2.2, 3.2.4, 3.6.3).

Costs are in whatever currency unit you give them in ($, GPU-seconds, …); every result is
in the same unit.
"""

from collections.abc import Sequence

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
from napkin.report.econ_views import table_doc


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
    ``min_success_rate`` (the rate to match method 1), one per method.
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
    rows = [[f"method {i + 1}", f"{c:g}", f"{p:.1%}", f"{x:,.4g}", f"{m:.1%}"]
            for i, (c, p, x, m) in enumerate(zip(costs, rates, per, match, strict=True))]
    doc = table_doc("Cost per successful task", "methods",
                    ["", "cost/attempt", "success", "cost/success", "success to match #1"], rows,
                    {"cost_per_success": per, "cost_per_attempt": costs},
                    {"generation": generation, "verification": extra[0], "tools": extra[1],
                     "environment": extra[2], "success_rates": rates},
                    notes=["every attempt's cost over the successes: c/p"])
    return Result(doc, {"cost_per_attempt": costs, "cost_per_success": per,
                        "min_success_rate": match})


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
    gain it must buy (§3.2.4).

    At escalated share e in [0, 1] a request costs ``c_dec + e·c_LLM`` on average
    (``decision_cost`` c_dec and ``llm_cost`` c_LLM per request); escalation lowers the cost
    per success only if ``p₂/p₁ > (c_dec + e·c_LLM)/c_dec``; escalations alone cost as much
    as the decision model at ``e = c_dec/c_LLM``.
    ``value``: dict with ``shares``, ``mean_cost`` and ``min_success_gain`` (one per share)
    and ``break_even_share``.
    """
    shares = list(share)
    pairs = [(escalated_cost(decision_cost, llm_cost, e),
              min_success_gain(decision_cost, llm_cost, e)) for e in shares]
    mean, gain = [m for m, _ in pairs], [g for _, g in pairs]
    rows = [[f"{e:.2%}", f"{m:.6g}", f"{g:,.3f}"] for e, (m, g) in zip(shares, pairs,
                                                                       strict=True)]
    even = break_even_escalation(decision_cost, llm_cost)
    doc = table_doc("Escalation to an LLM", "per request",
                    ["share e", "mean cost", "minimum p₂/p₁"], rows,
                    {"shares": shares, "break_even_share": even},
                    {"decision_cost": decision_cost, "llm_cost": llm_cost},
                    notes=[f"escalation costs as much as the decision model at e = {even:.3%}"])
    return Result(doc, {"shares": shares, "mean_cost": mean, "min_success_gain": gain,
                        "break_even_share": even})


@checked
def cost_breakeven(*, extra_upfront: float, saving: float,
                   tasks: Sequence[float] = ()) -> Result:
    """After how many tasks a model that costs more up front but less per task has paid
    back (§3.6.3).

    ``Q* = ΔC₀/Δc`` with ``extra_upfront`` ΔC₀ and ``saving`` Δc > 0 per task; at each of
    ``tasks`` counts Q the cheaper-to-run model's lifecycle total minus the other's is
    ``ΔC₀ − Q·Δc`` (negative: it is ahead). ``value``: dict with ``break_even_tasks`` and
    ``differences`` (one per task count).
    """
    q = break_even_tasks(extra_upfront, saving)
    counts = list(tasks)
    differences = [extra_upfront - n * saving for n in counts]
    rows = [["break-even tasks Q*", f"{q:,.4g}"]]
    rows += [[f"{n:,.4g} tasks: cheaper-to-run model's total − other's", f"{d:,.4g}"]
             for n, d in zip(counts, differences, strict=True)]
    doc = table_doc("Lifecycle break-even", "break-even", ["", ""], rows,
                    {"break_even_tasks": q, "differences": differences},
                    {"extra_upfront": extra_upfront, "saving_per_task": saving})
    return Result(doc, {"break_even_tasks": q, "differences": differences})
