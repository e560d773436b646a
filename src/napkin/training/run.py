"""A whole training run from one update: updates, wall time, GPU-hours, calendar days, dollars.

``updates = ⌈tokens / tokens_per_update⌉`` (``tokens = epochs × dataset tokens`` when given by
epochs); wall time = updates × update time; GPU-hours = wall hours × devices; days = wall time /
86,400 s (running without stops); cost = GPU-hours × $/GPU-hour.
"""

import math
from dataclasses import dataclass

from napkin.errors import require
from napkin.training.schedule import SECONDS_PER_DAY
from napkin.units import HOUR_S

MAX_RUN_TOKENS = 1e18
"""Tokens a run may ask for (a thousand times the largest published pretraining runs)."""


@dataclass(frozen=True)
class TrainingRun:
    """A run of ``updates`` identical updates on ``devices`` accelerators."""

    tokens: float
    tokens_per_update: int
    update_s: float
    devices: int
    usd_per_gpu_hour: float
    price_source: str

    @property
    def updates(self) -> int:
        """``⌈tokens / tokens_per_update⌉``: the last update may be partial but takes as long."""
        return math.ceil(self.tokens / self.tokens_per_update)

    @property
    def wall_s(self) -> float:
        return self.updates * self.update_s

    @property
    def gpu_hours(self) -> float:
        return self.wall_s * self.devices / HOUR_S

    @property
    def days(self) -> float:
        return self.wall_s / SECONDS_PER_DAY

    @property
    def usd(self) -> float:
        return self.gpu_hours * self.usd_per_gpu_hour


def training_run(tokens: float | None, epochs: float | None, dataset_tokens: float | None,
                 tokens_per_update: int, update_s: float, devices: int,
                 usd_per_gpu_hour: float, price_source: str) -> TrainingRun:
    """The run of ``tokens`` (or ``epochs`` × ``dataset_tokens``) at one plan's update."""
    require((tokens is None) != (epochs is None),
            "tokens: give --tokens or --epochs (with --dataset-tokens), not both")
    if epochs is not None:
        require(dataset_tokens is not None, "dataset-tokens: --epochs needs --dataset-tokens")
        require(math.isfinite(epochs) and epochs > 0,
                f"epochs: must be a finite number > 0, got {epochs}")
        assert dataset_tokens is not None
        require(math.isfinite(dataset_tokens) and dataset_tokens >= 1,
                f"dataset-tokens: must be a finite number >= 1, got {dataset_tokens}")
        tokens = epochs * dataset_tokens
    else:
        require(dataset_tokens is None, "dataset-tokens: only with --epochs")
    assert tokens is not None
    require(math.isfinite(tokens) and 1 <= tokens <= MAX_RUN_TOKENS,
            f"tokens: must be in [1, {MAX_RUN_TOKENS:g}], got {tokens}")
    require(math.isfinite(usd_per_gpu_hour) and usd_per_gpu_hour >= 0,
            f"usd-per-gpu-hour: must be a finite number >= 0, got {usd_per_gpu_hour}")
    return TrainingRun(float(tokens), tokens_per_update, update_s, devices, usd_per_gpu_hour,
                       price_source)
