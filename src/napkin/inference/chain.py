"""A request chain: one prefill and G − 1 decode steps (chapter 3.1.1).

A request restores ``S`` cached tokens, processes ``P`` new ones and returns ``G`` tokens: the
prefill produces the first token, and decode step j (from 0) sees ``S + P + j`` tokens of
context. Alone on the device (or with ``batch`` identical requests in lockstep):
TTFT = prefill time, TPOT = mean decode step, end-to-end = prefill + all decode steps.
"""

from dataclasses import dataclass

from napkin.accounting.batch import Batch
from napkin.accounting.ops import CallCost
from napkin.accounting.series import AffineRun, decode_runs
from napkin.errors import require
from napkin.timing.roofline import Deployment, RooflineTime


@dataclass(frozen=True)
class RequestChain:
    """Costs and times of one request (or ``batch`` identical ones in lockstep)."""

    cached_tokens: int
    new_tokens: int
    gen_tokens: int
    batch: int
    prefill: CallCost
    prefill_time: RooflineTime
    decode: tuple[AffineRun, ...]
    decode_s: float

    @property
    def decode_steps(self) -> int:
        return self.gen_tokens - 1

    @property
    def decode_flops(self) -> float:
        return sum(run.flops for run in self.decode)

    @property
    def decode_bytes(self) -> float:
        return sum(run.bytes for run in self.decode)

    @property
    def decode_weight_bytes(self) -> float:
        return sum(run.weight_bytes for run in self.decode)

    @property
    def ttft_s(self) -> float:
        """Time to first token of a request alone: the prefill."""
        return self.prefill_time.time_s

    @property
    def tpot_s(self) -> float:
        """Mean time per output token after the first, ``(t_G − t_1)/(G − 1)``; 0 when G = 1."""
        return self.decode_s / self.decode_steps if self.decode_steps else 0.0

    @property
    def e2e_s(self) -> float:
        """End-to-end time: prefill plus every decode step."""
        return self.ttft_s + self.decode_s

    @property
    def mean_decode_context(self) -> float:
        """Mean context over the decode steps (see :func:`mean_decode_context`)."""
        return mean_decode_context(self.cached_tokens + self.new_tokens, self.gen_tokens)

    @property
    def final_context(self) -> int:
        """Tokens in the KV cache after the last step: ``S + P + G − 1``."""
        return self.cached_tokens + self.new_tokens + self.gen_tokens - 1


def mean_decode_context(prompt_tokens: float, gen_tokens: float) -> float:
    """Mean context of a request's G − 1 decode steps: step j sees ``S + P + j`` tokens, so the
    mean is ``S + P + (G − 2)/2`` (0 when G = 1). Works elementwise on numpy arrays."""
    return (prompt_tokens + (gen_tokens - 2) / 2) * (gen_tokens > 1)


def request_chain(dep: Deployment, new: int, gen: int = 1, cached: int = 0,
                  batch: int = 1) -> RequestChain:
    """The prefill + decode chain of ``batch`` requests of ``cached`` + ``new`` → ``gen`` tokens."""
    require(new >= 1, f"new: must be >= 1 token (a prefill needs input), got {new}")
    require(gen >= 1, f"gen: must be >= 1 output token, got {gen}")
    require(batch >= 1, f"batch: must be >= 1, got {batch}")
    require(cached >= 0, f"cached: must be >= 0 tokens, got {cached}")
    dep.model.check_context(cached + new + gen - 1)
    prefill = dep.cost(Batch.uniform(cached, new, batch, readout=1))
    runs = decode_runs(dep.model, dep.precision, batch, cached + new, gen - 1)
    return RequestChain(
        cached_tokens=cached,
        new_tokens=new,
        gen_tokens=gen,
        batch=batch,
        prefill=prefill,
        prefill_time=dep.time(prefill),
        decode=runs,
        decode_s=sum(dep.run_time(run) for run in runs),
    )
