"""Scheduler policies of real engines, as the knobs that tell them apart.

The engine (:mod:`napkin.serving.engine`) keeps the clock, the KV pool and the step loop; a
:class:`Policy` says how it admits and batches:

- ``vllm`` (v1): KV blocks allocated on demand as tokens are computed; prefill chunks mixed into
  decode steps under one token budget; when a decode's new block does not fit, the most
  recently admitted request is preempted (recompute), and so is a partial prefill whose next
  chunk does not fit when it is itself the most recent (``Scheduler.schedule`` pops
  ``running[-1]``: ``preempt_self``); from 0.19 a waiting request is admitted only when blocks
  for its whole sequence are free (``scheduler_reserve_full_isl``, on by default:
  :attr:`~napkin.serving.engine_spec.EngineSpec.reserve_full_prompt`).
- ``trtllm`` (TensorRT-LLM's ``GUARANTEED_NO_EVICT`` capacity scheduler, the default): a request
  is admitted only when the blocks of its whole maximum length (prompt + max output) are free,
  and they are reserved at admission, so nothing is ever evicted; in-flight batching mixes
  context and generation like vLLM. (``MAX_UTILIZATION`` behaves like ``vllm`` here.)
- ``sglang``: a step is either a prefill batch or a decode batch, never both (prefill first
  whenever a waiting request can be admitted); admission is conservative: the free KV must
  cover the new prompt plus ``ratio × min(max output, 4096)`` and ``ratio ×`` the remaining
  outputs of every running request, with ``ratio`` decaying from 0.7 to 0.1 over 600 decode
  steps and reset when a request has to be retracted (SGLang's ``new_token_ratio``,
  ``SGLANG_INIT_NEW_TOKEN_RATIO``, ``schedule_policy.PrefillAdder``).
"""

from dataclasses import dataclass
from typing import Literal

from napkin.errors import NapkinError

Reservation = Literal["on_demand", "max_length", "ratio"]


@dataclass(frozen=True)
class Policy:
    """How one engine family schedules (see the module docstring)."""

    name: str
    reservation: Reservation
    mixed_batches: bool
    init_new_token_ratio: float = 0.7
    min_new_token_ratio: float = 0.1
    ratio_decay_steps: int = 600
    clip_max_new_tokens: int = 4096
    preempt_self: bool = False
    """A partial prefill short of blocks, with no later-admitted request left to preempt, is
    preempted itself (and nothing is admitted that step) rather than waiting with its blocks."""
    full_prompt_gate: bool = False
    """Admission may require blocks for the request's whole sequence
    (:attr:`~napkin.serving.engine_spec.EngineSpec.reserve_full_prompt`)."""

    def new_token_ratio(self, steps_since_reset: int) -> float:
        """SGLang's decaying share of a request's remaining output held in reserve."""
        span = self.init_new_token_ratio - self.min_new_token_ratio
        return max(self.min_new_token_ratio,
                   self.init_new_token_ratio - span * steps_since_reset / self.ratio_decay_steps)


POLICIES: dict[str, Policy] = {
    "vllm": Policy("vllm", "on_demand", mixed_batches=True, preempt_self=True,
                   full_prompt_gate=True),
    "trtllm": Policy("trtllm", "max_length", mixed_batches=True),
    "sglang": Policy("sglang", "ratio", mixed_batches=False),
}


def policy(name: str) -> Policy:
    try:
        return POLICIES[name]
    except KeyError:
        raise NapkinError(f"backend: unknown {name!r}; allowed: {', '.join(POLICIES)}") from None
