"""The loss-normalization trap of gradient accumulation (chapter 3.5.2; question bank q24).

The loss of an update should be ``Σ_all labelled tokens ℓ / N_labels``. Averaging each
micro-batch's own mean and then averaging those means weights every token by
``1/(a·n_k)`` instead of ``1/N``: tokens of micro-batches with few labels count more.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from napkin.errors import require

MAX_LABELS = 10**12
"""Labelled tokens one micro-batch may hold (far above any real one; keeps sums finite)."""


@dataclass(frozen=True)
class LossNormalization:
    """Both ways of averaging the same losses."""

    labels: tuple[int, ...]
    loss_sums: tuple[float, ...]

    @property
    def token_mean(self) -> float:
        """The right one: every labelled token weighs 1/N."""
        return sum(self.loss_sums) / sum(self.labels)

    @property
    def mean_of_means(self) -> float:
        """The trap: the mean over micro-batches of each micro-batch's mean."""
        return sum(s / n for s, n in zip(self.loss_sums, self.labels, strict=True)) / len(
            self.labels)

    def token_weight(self, k: int) -> float:
        """How much one token of micro-batch k weighs under the trap, relative to the right
        weighting: ``N / (a·n_k)``."""
        return sum(self.labels) / (len(self.labels) * self.labels[k])

    @property
    def mean_losses(self) -> tuple[float, ...]:
        """Each micro-batch's own mean loss ``s_k / n_k``."""
        return tuple(s / n for s, n in zip(self.loss_sums, self.labels, strict=True))

    @property
    def per_token_weight(self) -> float:
        """Weight of every labelled token in the per-token mean: ``1/N`` (N = Σ n_k)."""
        return 1.0 / sum(self.labels)

    def trap_weight(self, k: int) -> float:
        """Weight of one token of micro-batch k in the mean of means: ``1/(a·n_k)``."""
        return 1.0 / (len(self.labels) * self.labels[k])


def loss_normalization(labels: Sequence[int], mean_losses: Sequence[float]) -> LossNormalization:
    """Micro-batches with ``labels[k]`` labelled tokens of mean loss ``mean_losses[k]``."""
    require(len(labels) == len(mean_losses) and len(labels) >= 1,
            "mean-losses: give one mean loss per micro-batch of --tokens")
    _check_labels(labels)
    for m in mean_losses:
        require(math.isfinite(m) and m >= 0,
                f"mean-losses: each must be a finite loss >= 0 nats/token, got {m}")
    return LossNormalization(tuple(labels),
                             tuple(n * m for n, m in zip(labels, mean_losses, strict=True)))


def from_loss_sums(labels: Sequence[int], loss_sums: Sequence[float]) -> LossNormalization:
    """Micro-batches with ``labels[k]`` labelled tokens whose losses sum to ``loss_sums[k]``
    (nats)."""
    require(len(labels) == len(loss_sums) and len(labels) >= 1,
            "loss-sums: give one loss sum per micro-batch of --tokens")
    _check_labels(labels)
    for s in loss_sums:
        require(math.isfinite(s) and s >= 0,
                f"loss-sums: each must be a finite sum >= 0 nats, got {s}")
    return LossNormalization(tuple(labels), tuple(float(s) for s in loss_sums))


def _check_labels(labels: Sequence[int]) -> None:
    for n in labels:
        require(isinstance(n, int) and 1 <= n <= MAX_LABELS,
                f"tokens: every micro-batch needs 1 to {MAX_LABELS:,} labelled tokens, got {n}")


def unmasked_prompt_share(prompt_tokens: int, answer_tokens: int) -> float:
    """Share of an SFT sample's loss terms that model the prompt when the loss is not masked:
    ``P / (P + A)`` (q26; ``A`` counts the answer with its closing token). With the mask
    (prompt labels −100) the share is 0 and the loss averages over the A answer tokens only."""
    require(prompt_tokens >= 0, f"prompt: tokens must be >= 0, got {prompt_tokens}")
    require(answer_tokens >= 1, f"answer: tokens must be >= 1, got {answer_tokens}")
    return prompt_tokens / (prompt_tokens + answer_tokens)
