"""A set of requests: arrival times, input and output lengths, optional prefix block hashes.

Arrays are numpy (one row per request, sorted by arrival). ``prefix_hashes`` carries, for each
request, the hash ids of its prompt's blocks of ``hash_block_tokens`` tokens (Mooncake traces
use 512-token blocks); requests that share a leading run of ids share that prefix.
"""

from dataclasses import dataclass, field

import numpy as np

from napkin.errors import require

MAX_REQUEST_TOKENS = 100_000_000
"""Most input or output tokens of one request (ten times the longest context window of a
2025 model): workload lengths and trace counts above it are refused, distributions clipped to
it, so per-window sums stay far inside int64."""


@dataclass(frozen=True)
class RequestSet:
    """Requests of an open-loop workload, sorted by ``arrival_s``."""

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    label: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    labels: tuple[str, ...] = ("request",)
    prefix_hashes: tuple[tuple[int, ...], ...] | None = None
    hash_block_tokens: int = 16

    def __post_init__(self) -> None:
        n = len(self.arrival_s)
        if len(self.label) == 0 and n:
            object.__setattr__(self, "label", np.zeros(n, dtype=np.int32))
        require(len(self.input_tokens) == n and len(self.output_tokens) == n
                and len(self.label) == n, "requests: arrays must have one row per request")
        require(self.prefix_hashes is None or len(self.prefix_hashes) == n,
                "requests: prefix_hashes must have one entry per request")
        if n:
            require(bool(np.all(np.diff(self.arrival_s) >= 0)),
                    "requests: arrival times must be sorted")
            require(bool(np.all(np.isfinite(self.arrival_s))),
                    "requests: arrival times must be finite")
            for name, tokens in (("input", self.input_tokens), ("output", self.output_tokens)):
                require(bool(np.all((tokens >= 1) & (tokens <= MAX_REQUEST_TOKENS))),
                        f"{name} tokens: must be in [1, {MAX_REQUEST_TOKENS:,}] per request")

    def __len__(self) -> int:
        return len(self.arrival_s)

    @classmethod
    def build(cls, arrival_s, input_tokens, output_tokens, label=None,
              labels: tuple[str, ...] = ("request",),
              prefix_hashes: list[tuple[int, ...]] | None = None,
              hash_block_tokens: int = 16) -> "RequestSet":
        """From sequences in any order: sorted by arrival (stable), as numpy arrays."""
        t = np.asarray(arrival_s, dtype=np.float64)
        order = np.argsort(t, kind="stable")
        lab = np.zeros(len(t), dtype=np.int32) if label is None else np.asarray(label, np.int32)
        hashes = None if prefix_hashes is None else tuple(tuple(prefix_hashes[i]) for i in order)
        return cls(t[order], np.asarray(input_tokens, dtype=np.int64)[order],
                   np.asarray(output_tokens, dtype=np.int64)[order], lab[order], labels,
                   hashes, hash_block_tokens)

    def scaled(self, time_scale: float) -> "RequestSet":
        """Arrival times multiplied by ``time_scale`` (0.5 replays twice as fast)."""
        require(time_scale > 0, f"time_scale: must be > 0, got {time_scale}")
        scaled = self.arrival_s * time_scale
        require(not len(scaled) or bool(np.isfinite(scaled[-1])),
                f"time_scale: {time_scale:g} × the last arrival overflows a float")
        return RequestSet(scaled, self.input_tokens, self.output_tokens,
                          self.label, self.labels, self.prefix_hashes, self.hash_block_tokens)

    def sliced(self, start_s: float = 0.0, end_s: float | None = None,
               rebase: bool = True) -> "RequestSet":
        """Requests arriving in ``[start_s, end_s)``; times shifted to start at 0 if ``rebase``."""
        t = self.arrival_s
        keep = (t >= start_s) & (t < (np.inf if end_s is None else end_s))
        idx = np.nonzero(keep)[0]
        hashes = None if self.prefix_hashes is None else tuple(self.prefix_hashes[i] for i in idx)
        shift = start_s if rebase else 0.0
        return RequestSet(t[idx] - shift, self.input_tokens[idx], self.output_tokens[idx],
                          self.label[idx], self.labels, hashes, self.hash_block_tokens)
