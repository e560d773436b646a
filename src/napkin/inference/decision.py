"""A prefill-only decision request against an LLM that generates (chapter 3.2.4).

A decision request reads out answers to Q questions at their last positions in one forward of
P tokens (the LM head runs Q times) and holds no KV afterwards. The generating alternative runs
the prefill and then G − 1 decode steps. Cost per million input tokens at a GPU-hour price is
``time · price/3600 · 1e6 / P``. With escalation share e to the LLM, a request costs
``c_dec + e·c_LLM``; escalation costs more than the decision model itself once e > c_dec/c_LLM.

Latency is not GPU time: a serving engine batches decode, so a generating request's share of
the GPU is its own prefill plus ``Σ_{j=1}^{G−1} t(decode step of B at context P + j) / B``
(:func:`batched_generation_gpu_s`). At B = 64 the chapter's 64 generated tokens add 28 % GPU
time to the 70 ms forward, and 64–512 tokens make it 1.3–3.4×.
"""

import math
from dataclasses import dataclass

from napkin.accounting.batch import Batch, Segment
from napkin.accounting.ops import CallCost
from napkin.errors import require
from napkin.inference.ced import CedPath, ced_prefill
from napkin.inference.chain import RequestChain, request_chain
from napkin.inference.decode import weights_bytes
from napkin.timing.roofline import Deployment, RooflineTime
from napkin.units import HOUR_S


@dataclass(frozen=True)
class DecisionComparison:
    prompt_tokens: int
    questions: int
    decision: CallCost
    decision_time: RooflineTime
    generation: RequestChain
    usd_per_gpu_hour: float
    decode_batch: int
    generation_gpu_s: float
    """The generating request's GPU time with its decode batched at ``decode_batch``."""

    @property
    def decision_usd_per_million_input_tokens(self) -> float:
        """GPU cost of the decision forward per 1e6 input tokens."""
        return usd_per_million(self.decision_time.time_s, self.prompt_tokens, self.usd_per_gpu_hour)

    @property
    def compute_usd_per_million_input_tokens(self) -> float:
        """The decision forward's compute cost per 1e6 input tokens: its FLOPs at peak·MFU alone
        (``compute_s``), as a provider that keeps the GPU compute-bound pays (§3.2.4's
        "вычислительная стоимость")."""
        return usd_per_million(self.decision_time.compute_s, self.prompt_tokens,
                               self.usd_per_gpu_hour)

    @property
    def gpu_time_ratio(self) -> float:
        """Generation's batched GPU time over the decision forward's."""
        return self.generation_gpu_s / self.decision_time.time_s

    @property
    def latency_ratio(self) -> float:
        """Generation end-to-end over the decision forward."""
        return self.generation.e2e_s / self.decision_time.time_s


def usd_per_million(seconds: float, tokens: float, usd_per_gpu_hour: float) -> float:
    """Dollars per 1e6 tokens when ``tokens`` take ``seconds`` of one GPU."""
    return seconds * usd_per_gpu_hour / HOUR_S * 1e6 / tokens


MAX_GEN_TOKENS = 100_000
"""Generated tokens a comparison may ask for (one step each is timed)."""


def batched_generation_gpu_s(dep: Deployment, prompt_tokens: int, gen_tokens: int,
                             batch: int) -> float:
    """GPU seconds of one generating request when its decode shares steps with ``batch − 1``
    others at the same context: ``t(prefill P) + Σ_{j=1}^{G−1} t(decode of batch at P + j) /
    batch`` (the first token comes from the prefill)."""
    require(1 <= batch <= 100_000, f"decode-batch: must be in [1, 100000], got {batch}")
    require(1 <= gen_tokens <= MAX_GEN_TOKENS,
            f"gen: must be in [1, {MAX_GEN_TOKENS:,}], got {gen_tokens}")
    total = dep.time(dep.cost(Batch.uniform(0, prompt_tokens, 1))).time_s
    for j in range(1, gen_tokens):
        total += dep.time(dep.cost(Batch.decode(prompt_tokens + j, batch))).time_s / batch
    return total


def prompt_tokens_for_price(request_usd: float, usd_per_million_input: float) -> int:
    """Input tokens a per-input-token price implies for one request's bill:
    ``round(request_usd / usd_per_million · 1e6)`` (§3.2.4: $0.000081 at $0.042/M → 1,929)."""
    require(math.isfinite(request_usd) and request_usd > 0,
            f"request-usd: must be a finite number > 0, got {request_usd}")
    require(math.isfinite(usd_per_million_input) and usd_per_million_input > 0,
            f"usd-per-million-input: must be a finite number > 0, got {usd_per_million_input}")
    tokens = request_usd / usd_per_million_input * 1e6
    require(0.5 <= tokens <= 100_000_000,
            f"request-usd: implies {tokens:,.4g} input tokens at that price; allowed "
            "1..100,000,000")
    return round(tokens)


def decision_vs_generation(dep: Deployment, prompt_tokens: int, questions: int, gen_tokens: int,
                           usd_per_gpu_hour: float = 2.0, decode_batch: int = 64,
                           ced: CedPath | None = None) -> DecisionComparison:
    """One P-token decision forward with Q read-outs vs prefill + generation of G tokens
    (latency of one request alone, and GPU time with decode batched at ``decode_batch``).
    With ``ced`` the decision forward takes the CED path (:func:`ced_prefill`); the generating
    request stays the plain path of every layer."""
    require(1 <= questions <= prompt_tokens,
            f"questions: must be between 1 and the {prompt_tokens} prompt tokens, got {questions}")
    require(math.isfinite(usd_per_gpu_hour) and usd_per_gpu_hour >= 0,
            f"usd-per-gpu-hour: must be a finite number >= 0, got {usd_per_gpu_hour}")
    decision = (dep.cost(Batch((Segment(0, prompt_tokens, questions),))) if ced is None else
                ced_prefill(dep, prompt_tokens, questions, ced.encoder_layers, ced.replay_tokens))
    return DecisionComparison(
        prompt_tokens=prompt_tokens,
        questions=questions,
        decision=decision,
        decision_time=dep.time(decision),
        generation=request_chain(dep, new=prompt_tokens, gen=gen_tokens),
        usd_per_gpu_hour=usd_per_gpu_hour,
        decode_batch=decode_batch,
        generation_gpu_s=batched_generation_gpu_s(dep, prompt_tokens, gen_tokens, decode_batch),
    )


def escalation_cost(decision_usd: float, llm_usd: float, share: float) -> float:
    """Mean cost of a request when a share ``e`` is escalated to the LLM: ``c_dec + e·c_LLM``."""
    require(0 <= share <= 1, f"escalation share: must be in [0, 1], got {share}")
    return decision_usd + share * llm_usd


def break_even_escalation(decision_usd: float, llm_usd: float) -> float:
    """Escalation share at which escalations cost as much as the decision model: c_dec / c_LLM."""
    require(llm_usd > 0, f"llm cost: must be > 0, got {llm_usd}")
    return decision_usd / llm_usd


MAX_USD = 1e6
"""Largest price or bill accepted ($): keeps every ratio finite."""


def price_over_compute(usd_per_million_input: float, compute_usd_per_million: float) -> float:
    """A provider's input price over the compute cost of the same tokens (§3.2.4: $0.042 per 1M
    against $0.02–0.025 of compute is 1.7–2×): at cost, the price pays for this multiple of the
    forward's FLOPs per input token."""
    require(0 < usd_per_million_input <= MAX_USD,
            f"usd-per-million-input: must be in (0, {MAX_USD:,.0f}] $, got "
            f"{usd_per_million_input}")
    require(compute_usd_per_million > 0,
            "usd-per-gpu-hour: must be > 0 to compare a price with the compute cost")
    return usd_per_million_input / compute_usd_per_million


@dataclass(frozen=True)
class TariffSplit:
    """Two bills for the same request (§3.2.4: GPT-5.6 Terra $0.013880 vs Jev $0.000081, 171×)
    against what skipping generation saves in GPU time on one model."""

    decision_usd: float
    llm_usd: float
    gpu_time_ratio: float
    """Generating request's GPU time over the decision forward's (the same model)."""

    @property
    def bill_ratio(self) -> float:
        """LLM bill over the decision bill."""
        return self.llm_usd / self.decision_usd

    @property
    def rest_ratio(self) -> float:
        """What generation does not explain: ``bill_ratio / gpu_time_ratio`` (the frontier
        model's price and the tokens it generates while reasoning)."""
        return self.bill_ratio / self.gpu_time_ratio


def tariff_split(decision_usd: float, llm_usd: float, gpu_time_ratio: float) -> TariffSplit:
    """Split the ratio of two bills into the GPU time generation adds and the rest."""
    require(0 < llm_usd <= MAX_USD, f"llm-usd: must be in (0, {MAX_USD:,.0f}] $, got {llm_usd}")
    require(0 < decision_usd <= MAX_USD,
            f"request-usd: must be in (0, {MAX_USD:,.0f}] $, got {decision_usd}")
    return TariffSplit(decision_usd, llm_usd, gpu_time_ratio)


@dataclass(frozen=True)
class MemoryFit:
    """Weights + the KV of the longest request against one GPU's memory."""

    weights_bytes: float
    kv_bytes: float
    memory_bytes: float
    """Memory of one device (marketed, 1e9-byte GB)."""

    @property
    def needed_bytes(self) -> float:
        return self.weights_bytes + self.kv_bytes

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.memory_bytes

    @property
    def devices_needed(self) -> int:
        """Fewest devices whose memory holds weights + KV: ``⌈needed / memory⌉``."""
        return math.ceil(self.needed_bytes / self.memory_bytes)


def memory_fit(dep: Deployment, context_tokens: int) -> MemoryFit:
    """Whether the weights and one request's KV at ``context_tokens`` fit on one GPU."""
    kv = dep.model.kv_bytes(context_tokens, dep.precision.kv.bytes_per_element)
    return MemoryFit(weights_bytes(dep), kv, dep.acc.memory_bytes)
