"""A prefill-only decision request against an LLM that generates (chapter 3.2.4).

A decision request reads out answers to Q questions at their last positions in one forward of
P tokens (the LM head runs Q times) and holds no KV afterwards. The generating alternative runs
the prefill and then G − 1 decode steps. Cost per million input tokens at a GPU-hour price is
``time · price/3600 · 1e6 / P``. With escalation share e to the LLM, a request costs
``c_dec + e·c_LLM``; escalation costs more than the decision model itself once e > c_dec/c_LLM.
"""

from dataclasses import dataclass

from napkin.accounting.batch import Batch, Segment
from napkin.accounting.ops import CallCost
from napkin.errors import require
from napkin.inference.chain import RequestChain, request_chain
from napkin.timing import Deployment, RooflineTime
from napkin.units import HOUR_S


@dataclass(frozen=True)
class DecisionComparison:
    prompt_tokens: int
    questions: int
    decision: CallCost
    decision_time: RooflineTime
    generation: RequestChain
    usd_per_gpu_hour: float

    @property
    def decision_usd_per_million_input_tokens(self) -> float:
        """GPU cost of the decision forward per 1e6 input tokens."""
        return usd_per_million(self.decision_time.time_s, self.prompt_tokens, self.usd_per_gpu_hour)

    @property
    def latency_ratio(self) -> float:
        """Generation end-to-end over the decision forward."""
        return self.generation.e2e_s / self.decision_time.time_s


def usd_per_million(seconds: float, tokens: int, usd_per_gpu_hour: float) -> float:
    """Dollars per 1e6 tokens when ``tokens`` take ``seconds`` of one GPU."""
    return seconds * usd_per_gpu_hour / HOUR_S * 1e6 / tokens


def decision_vs_generation(dep: Deployment, prompt_tokens: int, questions: int, gen_tokens: int,
                           usd_per_gpu_hour: float = 2.0) -> DecisionComparison:
    """One P-token decision forward with Q read-outs vs prefill + generation of G tokens."""
    require(1 <= questions <= prompt_tokens,
            f"questions: must be between 1 and the {prompt_tokens} prompt tokens, got {questions}")
    require(usd_per_gpu_hour >= 0, f"usd-per-gpu-hour: must be >= 0, got {usd_per_gpu_hour}")
    decision = dep.cost(Batch((Segment(0, prompt_tokens, questions),)))
    return DecisionComparison(
        prompt_tokens=prompt_tokens,
        questions=questions,
        decision=decision,
        decision_time=dep.time(decision),
        generation=request_chain(dep, new=prompt_tokens, gen=gen_tokens),
        usd_per_gpu_hour=usd_per_gpu_hour,
    )


def escalation_cost(decision_usd: float, llm_usd: float, share: float) -> float:
    """Mean cost of a request when a share ``e`` is escalated to the LLM: ``c_dec + e·c_LLM``."""
    require(0 <= share <= 1, f"escalation share: must be in [0, 1], got {share}")
    return decision_usd + share * llm_usd


def break_even_escalation(decision_usd: float, llm_usd: float) -> float:
    """Escalation share at which escalations cost as much as the decision model: c_dec / c_LLM."""
    require(llm_usd > 0, f"llm cost: must be > 0, got {llm_usd}")
    return decision_usd / llm_usd
