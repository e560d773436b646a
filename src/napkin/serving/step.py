"""What one engine step (or run of decode steps) is made of.

:class:`StepShape` describes a step's batch by aggregates the simulator keeps as running sums
(decode count and total context, plus explicit prefill chunks) and implements
:class:`napkin.accounting.batch.BatchShape`, so the accounting layer costs it directly;
:class:`Plan` is the unit of work in flight between two scheduling decisions.
"""

import numpy as np

from napkin.accounting.batch import causal_pairs
from napkin.serving.request import Request
from napkin.timing.series import StepSeries


class StepShape:
    """A step's batch as aggregates: ``n_dec`` decode tokens at total context ``sum_ctx``
    (contexts listed in ``dec_ctx`` for sliding-window models), plus prefill chunks
    ``(cached, new, readout)``. Implements :class:`napkin.accounting.batch.BatchShape`."""

    __slots__ = ("chunks", "dec_ctx", "n_dec", "sum_ctx")

    def __init__(self, n_dec: int, sum_ctx: int, chunks: list[tuple[int, int, int]],
                 dec_ctx: list[int] | None = None) -> None:
        self.n_dec, self.sum_ctx, self.chunks, self.dec_ctx = n_dec, sum_ctx, chunks, dec_ctx

    @property
    def new_tokens(self) -> int:
        return self.n_dec + sum(c[1] for c in self.chunks)

    @property
    def readout_tokens(self) -> int:
        return self.n_dec + sum(c[2] for c in self.chunks)

    def _decode_pairs(self, window: int | None) -> int:
        if window is None:
            return self.sum_ctx + self.n_dec
        return sum(min(c + 1, window) for c in self.dec_ctx or ())

    def attention_pairs(self, window: int | None) -> int:
        return self._decode_pairs(window) + sum(causal_pairs(c, n, window)
                                                for c, n, _ in self.chunks)

    def cached_tokens_read(self, window: int | None) -> int:
        if window is None:
            return self.sum_ctx + sum(c[0] for c in self.chunks)
        cap = window - 1
        return (sum(min(c, cap) for c in self.dec_ctx or ())
                + sum(min(c[0], cap) for c in self.chunks))

    def decode_pairs(self, window: int | None) -> int:
        return self._decode_pairs(window) + sum(causal_pairs(c, 1, window)
                                                for c, n, _ in self.chunks if n == 1)

    def prefill_cached_tokens(self) -> int:
        return sum(c[0] for c in self.chunks if c[1] > 1)

    def stepped_sequences(self) -> int:
        return self.n_dec + sum(1 for c in self.chunks if c[1])

    def resumed_sequences(self) -> int:
        """Every decode continues a prefilled sequence; a chunk resumes when it has cached
        tokens."""
        return self.n_dec + sum(1 for c in self.chunks if c[1] and c[0])


class Plan:
    """The unit of work in flight: ``steps`` steps from ``start_s`` (one, or a decode run),
    ending at ``end_s`` (kept with ``steps``: :meth:`truncate` changes both)."""

    __slots__ = ("basis", "chunks", "decode_run", "end_s", "kv_tokens0", "n_dec", "series",
                 "start_s", "steps")

    def __init__(self, start_s: float, steps: int, series: StepSeries,
                 chunks: list[tuple[Request, int]], n_dec: int, kv_tokens0: int,
                 decode_run: bool, basis: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.start_s, self.series, self.chunks = start_s, series, chunks
        self.n_dec, self.kv_tokens0, self.decode_run = n_dec, kv_tokens0, decode_run
        self.basis = basis
        """Recording: the first step's basis terms and their increment per step."""
        self.steps = steps  # (truncate's two lines: a plan is built once a unit)
        self.end_s = start_s + series.time(steps)

    def truncate(self, steps: int) -> None:
        """Run ``steps`` steps (a decode run cut short by an arrival)."""
        self.steps = steps
        self.end_s = self.start_s + self.series.time(steps)
