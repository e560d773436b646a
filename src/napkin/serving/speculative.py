"""Speculative decoding (MTP, EAGLE, a draft model) in the simulator, as expected values.

A speculative engine's decode step drafts ``k`` tokens per sequence (``k`` draft passes, each
costing ``draft_cost`` of a plain decode step of the batch), then verifies them in one forward
of ``k + 1`` tokens per sequence (:meth:`LinearCost.verify_parts`), and keeps on average
``L = 1 + Σ_i Π_{j≤i} a_i`` tokens (:func:`napkin.inference.speculative.tokens_per_step`).

The simulator keeps its one-token-per-step bookkeeping (contexts, KV blocks and outputs grow by
one token a step) and runs *virtual* steps instead: a decode-only step takes the real step's
time over L — ``(t_verify + k·c·t_decode) / L`` — so a sequence's tokens arrive at the real
rate on average and its KV grows at the real rate. A step that also carries prefill chunks of
``C`` tokens beside ``n`` decodes takes the real mixed step's time × ``(C + n)/(C + n·L)``:
every token it yields (prompt or output) costs what it costs in the real step. That keeps
prefill and decode throughput right in both regimes; what it smooths is granularity (a
sequence's L tokens arrive evenly, not in bursts; a mixed step's chunk advances in each of the
shorter virtual steps). The draft model's own KV cache (an MTP module's one layer) is not
counted.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from napkin.accounting.linear import LinearCost
from napkin.accounting.ranks import Parts
from napkin.errors import require
from napkin.serving.step import StepShape
from napkin.serving.wrapped_timer import WrappedTimer
from napkin.timing.series import StepSeries

if TYPE_CHECKING:
    from napkin.serving.engine_spec import StepTimer


@dataclass(frozen=True)
class Speculation:
    """``draft_tokens`` drafted a step, ``acceptance[i]`` the chance draft token i + 1 is kept
    given the earlier ones were, and a draft token's cost in plain decode steps."""

    draft_tokens: int
    acceptance: tuple[float, ...]
    draft_cost: float

    def __post_init__(self) -> None:
        require(self.draft_tokens >= 1, f"draft_tokens: must be >= 1, got {self.draft_tokens}")
        require(len(self.acceptance) == self.draft_tokens,
                f"acceptance: give one rate or {self.draft_tokens} (one per draft token), "
                f"got {len(self.acceptance)}")
        require(0 <= self.draft_cost < float("inf"),
                f"draft_cost: must be finite and >= 0, got {self.draft_cost}")

    @property
    def tokens_per_step(self) -> float:
        """L: mean tokens a verification keeps
        (:func:`napkin.inference.speculative.tokens_per_step`)."""
        from napkin.inference.speculative import tokens_per_step  # (not on a plain serve path)

        return tokens_per_step(self.acceptance)


def _add(a: Parts, b: Parts, w: float) -> Parts:
    """``a + w·b`` part by part."""
    return (a[0] + w * b[0], a[1] + w * b[1], a[2] + w * b[2], a[3] + w * b[3],
            a[4] + w * b[4])


class SpeculativeCost:
    """The parts of a speculative engine's steps, for :class:`SpeculativeTimer` (which divides
    every step's time by L): a decode-only step's are the real step's (verification plus
    drafts); a mixed step's are the real step's × ``(C + n)·L/(C + n·L)`` (module
    docstring)."""

    def __init__(self, cost: LinearCost, spec: Speculation) -> None:
        self.cost, self.spec = cost, spec
        self.q = spec.draft_tokens + 1
        self.tokens_per_step = spec.tokens_per_step
        self.drafts = spec.draft_tokens * spec.draft_cost

    def decode_parts(self, n_dec: int, sum_ctx: int) -> Parts:
        """The real step of ``n_dec`` speculative decodes at total context ``sum_ctx``: their
        verification plus ``k`` drafts of ``draft_cost`` plain decode steps each."""
        cost = self.cost
        return _add(cost.verify_parts(n_dec, sum_ctx, self.q), cost.decode_parts(n_dec, sum_ctx),
                    self.drafts)

    def step_parts(self, n_dec: int, sum_ctx: int, chunks: list[tuple[int, int, int]]
                   ) -> Parts:
        """A step with prefill chunks, scaled so that its time over L is the real mixed step's
        × ``(C + n)/(C + n·L)``."""
        cost = self.cost
        real = _add(cost.step_parts(n_dec, sum_ctx, chunks, self.q),
                    cost.decode_parts(n_dec, sum_ctx), self.drafts)
        c = 0
        for _, new, _ in chunks:
            c += new
        if c + n_dec == 0:
            return real
        f = (c + n_dec) * self.tokens_per_step / (c + n_dec * self.tokens_per_step)
        return (real[0] * f, real[1] * f, real[2] * f, real[3] * f, real[4] * f)

    def parts(self, shape: StepShape) -> Parts:
        """:meth:`decode_parts` or :meth:`step_parts` of a step's shape; for a model with
        sliding windows or sparse (top-k, compressed) attention — the shape lists each
        decode's context — each verification is a chunk of ``k + 1`` tokens read out whole on
        its sequence's context: its windowed attention pairs exact, ``Σ_j min(c + j, W)``, and
        under DeepSeek-V3.2's DSA each query attends ``min(c + j + 1, top_k)`` latent entries
        while the indexer scores all ``c + j + 1``, as a prefill chunk's are; the drafts plain
        decode steps of the batch, the mixed step scaled as :meth:`step_parts` scales it."""
        if shape.dec_ctx is None and not self.cost.windows:
            if shape.chunks:
                return self.step_parts(shape.n_dec, shape.sum_ctx, shape.chunks)
            return self.decode_parts(shape.n_dec, shape.sum_ctx)
        cost, q, ctx = self.cost, self.q, shape.dec_ctx or []
        verify = cost.parts(StepShape(0, 0, [(c, q, q) for c in ctx] + list(shape.chunks), []))
        real = _add(verify, cost.parts(StepShape(shape.n_dec, shape.sum_ctx, [], ctx)),
                    self.drafts) if shape.n_dec else verify
        c = sum(new for _, new, _ in shape.chunks)
        if not c or c + shape.n_dec == 0:
            return real
        f = (c + shape.n_dec) * self.tokens_per_step / (c + shape.n_dec * self.tokens_per_step)
        return (real[0] * f, real[1] * f, real[2] * f, real[3] * f, real[4] * f)


class SpeculativeTimer(WrappedTimer):
    """A step timer whose steps take the ``inner`` timer's time over L (with
    :class:`SpeculativeCost`'s parts: the virtual steps of the module docstring). A decode-only
    step's ``n`` tokens are ``n·(k + 1)`` to ``inner`` (its per-token work and all-reduces)."""

    def __init__(self, inner: "StepTimer", spec: Speculation) -> None:
        super().__init__(inner)
        self.q = spec.draft_tokens + 1
        self.tokens_per_step = spec.tokens_per_step
        """L: mean tokens a verification keeps."""

    def step_s(self, parts: Parts, tokens: int, prefill: bool = False) -> float:
        real = self.inner.step_s(parts, tokens if prefill else tokens * self.q, prefill)
        return real / self.tokens_per_step

    def series(self, parts0: Parts, parts1: Parts | None, tokens: int,
               prefill: bool = False) -> StepSeries:
        s = self.inner.series(parts0, parts1, tokens if prefill else tokens * self.q, prefill)
        r = 1.0 / self.tokens_per_step
        return type(s)(s.c0 * r, s.dc * r, s.m0 * r, s.dm * r, s.overhead_s * r)
