"""A run's stop once its SLO can no longer be met: a rule held as data, so that the compiled
core (:mod:`napkin.serving.compiled_core`) applies the same rule as the scheduler's call."""

from typing import TYPE_CHECKING

from napkin.serving.request import Request

if TYPE_CHECKING:
    from napkin.serving.metrics import SLO


class SLOMissStop:
    """A ``stop`` for :meth:`~napkin.serving.scenario.Built.simulate`: True once more than
    (1 − ``share``) of the ``counted`` requests (those past the first ``warmup``) have finished
    missing ``slo``, so the run can no longer meet it: (counted − missed)/counted < share, the
    test the finished run's SLO attainment would fail (in that form, not as missed > (1 −
    share)·counted, whose rounding stops 120 requests at share 0.9 on their 12th miss, when
    108/120 still meets it). A request's TPOT is (finish − first token)/(outputs − 1), 0 for a
    single output."""

    __slots__ = ("counted", "missed", "share", "slo", "warmup")

    def __init__(self, slo: "SLO", warmup: int, counted: int, share: float) -> None:
        self.slo, self.warmup, self.counted, self.share = slo, warmup, counted, share
        self.missed = 0
        """Counted requests finished so far that missed the SLO."""

    def __call__(self, r: Request) -> bool:
        if r.rid < self.warmup:
            return False
        ttft = r.first_token_s - r.arrival_s
        tpot = (r.finish_s - r.first_token_s) / (r.max_out - 1) if r.max_out > 1 else 0.0
        if not self.slo.met(ttft, tpot, r.finish_s - r.arrival_s):
            self.missed += 1
        return (self.counted - self.missed) / self.counted < self.share
