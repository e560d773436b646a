"""Runs of decode steps whose costs grow linearly with context.

Decode step j of a batch of B sequences at context ``c0 + j`` costs FLOPs and bytes that are
affine in j (attention pairs and KV read grow by one token per sequence per step), except where a
sliding-window layer reaches its window (context W−1), after which its part stops growing (as
does a compressed-sparse layer's part at the span ``ratio·top_k`` it attends:
``ModelSpec.cost_windows``).
:func:`decode_runs` splits a run of steps at those points and evaluates the accounting layer at
the first two steps of each piece, so long chains cost O(1) forward evaluations.
"""

from dataclasses import dataclass
from itertools import pairwise

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision, forward
from napkin.accounting.ops import CallCost
from napkin.specs.model import ModelSpec


@dataclass(frozen=True)
class AffineRun:
    """``steps`` decode steps; step j (from 0) costs ``flops0 + j·dflops`` and
    ``bytes0 + j·dbytes``. ``first`` is the full op list of step 0."""

    first_context: int
    steps: int
    first: CallCost
    dflops: float
    dbytes: float

    @property
    def flops0(self) -> float:
        return self.first.flops

    @property
    def bytes0(self) -> float:
        return self.first.bytes

    @property
    def flops(self) -> float:
        """Sum over the run: ``n·f0 + df·n(n−1)/2``."""
        return _series(self.flops0, self.dflops, self.steps)

    @property
    def bytes(self) -> float:
        return _series(self.bytes0, self.dbytes, self.steps)

    @property
    def weight_bytes(self) -> float:
        return self.steps * self.first.weight_bytes


def _series(x0: float, dx: float, n: int) -> float:
    return n * x0 + dx * n * (n - 1) / 2


def decode_runs(
    model: ModelSpec, precision: Precision, batch: int, first_context: int, steps: int
) -> tuple[AffineRun, ...]:
    """Decode steps at contexts ``first_context … first_context + steps − 1``, as affine runs."""
    if steps <= 0:
        return ()
    end = first_context + steps
    windows = {w - 1 for w in model.cost_windows}
    cuts = sorted({first_context, end} | {w for w in windows if first_context < w < end})
    runs = []
    for start, stop in pairwise(cuts):
        first = forward(model, Batch.decode(start, batch), precision)
        n = stop - start
        if n > 1:
            second = forward(model, Batch.decode(start + 1, batch), precision)
            dflops, dbytes = second.flops - first.flops, second.bytes - first.bytes
        else:
            dflops = dbytes = 0.0
        runs.append(AffineRun(start, n, first, dflops, dbytes))
    return tuple(runs)
