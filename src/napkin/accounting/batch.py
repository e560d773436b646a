"""The shape of one model call: which tokens are new, which are cached, where the head reads out.

A call processes, for each sequence, ``new_tokens`` tokens on top of ``cached_tokens`` restored
from the KV cache, and evaluates the LM head at ``readout_tokens`` positions. Prefill of P tokens
is ``Segment(S, P, 1)``; one decode step at context C is ``Segment(C, 1, 1)``.
"""

from dataclasses import dataclass
from typing import Protocol

from napkin.errors import require


class BatchShape(Protocol):
    """What accounting needs to know about a batch (a simulator may keep these as running sums)."""

    @property
    def new_tokens(self) -> int: ...

    @property
    def readout_tokens(self) -> int: ...

    def attention_pairs(self, window: int | None) -> int: ...

    def cached_tokens_read(self, window: int | None) -> int: ...

    def decode_pairs(self, window: int | None) -> int:
        """Pairs of single-token (decode) sequences: MLA attends them in latent space."""
        ...

    def prefill_cached_tokens(self) -> int:
        """Cached tokens of multi-token (prefill) sequences: MLA decompresses them."""
        ...

    def stepped_sequences(self) -> int:
        """Sequences with new tokens: a linear-attention layer writes each one's state once."""
        ...

    def resumed_sequences(self) -> int:
        """Stepped sequences with cached tokens (decodes, later prefill chunks): a
        linear-attention layer reads each one's state once (a fresh prompt starts from zero)."""
        ...


def causal_pairs(cached: int, new: int, window: int | None = None) -> int:
    """Query–key pairs of ``new`` tokens after ``cached`` ones, diagonal included.

    Full attention: ``P·S + P(P+1)/2`` (a fresh sequence of n tokens has n(n+1)/2 pairs).
    Sliding window of W keys (itself included): token i (from 0) sees ``min(S + i + 1, W)`` keys.
    """
    if window is None:
        return new * cached + new * (new + 1) // 2
    growing = min(max(window - cached - 1, 0), new)  # tokens that still see fewer than W keys
    return growing * (cached + 1) + growing * (growing - 1) // 2 + (new - growing) * window


def cached_read(cached: int, window: int | None = None) -> int:
    """Cached tokens whose K/V a call reads: all of them, or the last W−1 in a window layer."""
    return cached if window is None else min(cached, window - 1)


@dataclass(frozen=True)
class Segment:
    """``count`` identical sequences of ``cached_tokens`` + ``new_tokens`` tokens, the LM head
    evaluated at ``readout_tokens`` positions each."""

    cached_tokens: int
    new_tokens: int
    readout_tokens: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        require(self.cached_tokens >= 0, f"cached: must be >= 0 tokens, got {self.cached_tokens}")
        require(self.new_tokens >= 0, f"new: must be >= 0 tokens, got {self.new_tokens}")
        require(
            0 <= self.readout_tokens <= self.new_tokens,
            f"readout: must be between 0 and the {self.new_tokens} new tokens, "
            f"got {self.readout_tokens}",
        )
        require(self.count >= 1, f"batch: must be >= 1 sequence, got {self.count}")


@dataclass(frozen=True)
class Batch:
    """The sequences of one call."""

    segments: tuple[Segment, ...]

    @classmethod
    def uniform(cls, cached: int, new: int, batch: int = 1, readout: int = 1) -> "Batch":
        """``batch`` sequences of ``cached`` + ``new`` tokens, each read out at ``readout``."""
        return cls((Segment(cached, new, readout, batch),))

    @classmethod
    def decode(cls, context: int, batch: int = 1) -> "Batch":
        """One decode step of ``batch`` sequences with ``context`` cached tokens each."""
        return cls.uniform(context, 1, batch, 1)

    @property
    def sequences(self) -> int:
        return sum(s.count for s in self.segments)

    @property
    def new_tokens(self) -> int:
        return sum(s.count * s.new_tokens for s in self.segments)

    @property
    def readout_tokens(self) -> int:
        return sum(s.count * s.readout_tokens for s in self.segments)

    def attention_pairs(self, window: int | None) -> int:
        return sum(s.count * causal_pairs(s.cached_tokens, s.new_tokens, window)
                   for s in self.segments)

    def cached_tokens_read(self, window: int | None) -> int:
        return sum(s.count * cached_read(s.cached_tokens, window) for s in self.segments)

    def decode_pairs(self, window: int | None) -> int:
        return sum(s.count * causal_pairs(s.cached_tokens, 1, window)
                   for s in self.segments if s.new_tokens == 1)

    def prefill_cached_tokens(self) -> int:
        return sum(s.count * s.cached_tokens for s in self.segments if s.new_tokens > 1)

    def stepped_sequences(self) -> int:
        return sum(s.count for s in self.segments if s.new_tokens)

    def resumed_sequences(self) -> int:
        return sum(s.count for s in self.segments if s.new_tokens and s.cached_tokens)


@dataclass(frozen=True)
class Bidirectional:
    """``count`` sequences of ``tokens`` tokens that all attend to each other (an encoder, a
    diffusion transformer): ``pairs = n²`` per sequence, no cache, no read-out.

    ``extra_keys`` are tokens every query also attends to whose own projections run elsewhere
    (the text stream of a two-stream MMDiT): pairs become ``(n + e)²`` while only the ``n``
    tokens pass this stack's linears; the other stream's linears are costed separately.
    """

    tokens: int
    count: int = 1
    extra_keys: int = 0

    def __post_init__(self) -> None:
        require(self.tokens >= 1, f"tokens: must be >= 1, got {self.tokens}")
        require(self.count >= 1, f"count: must be >= 1 sequence, got {self.count}")
        require(self.extra_keys >= 0, f"extra keys: must be >= 0, got {self.extra_keys}")

    @property
    def new_tokens(self) -> int:
        return self.count * self.tokens

    @property
    def readout_tokens(self) -> int:
        return 0

    def attention_pairs(self, window: int | None) -> int:
        require(window is None, "bidirectional attention: sliding windows are not modelled")
        return self.count * (self.tokens + self.extra_keys) ** 2

    def cached_tokens_read(self, window: int | None) -> int:
        return 0

    def decode_pairs(self, window: int | None) -> int:
        return 0

    def prefill_cached_tokens(self) -> int:
        return 0

    def stepped_sequences(self) -> int:
        return self.count

    def resumed_sequences(self) -> int:
        return 0
