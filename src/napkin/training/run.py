"""A whole training run from one update: updates, wall time, GPU-hours, calendar days, dollars.

``updates = ⌈tokens / tokens_per_update⌉`` (``tokens = epochs × dataset tokens`` when given by
epochs); the updates take ``T = updates × update time``. Around them a run evaluates,
checkpoints and restarts after failures (:class:`Goodput`, inputs with printed defaults): with
an evaluation share ``e`` of the wall time, a blocking checkpoint of ``c`` s every ``I`` s of
training, ``λ`` failures per second over the run's GPUs, each losing the work since the last
checkpoint (``I/2`` on average) and a restart of ``R`` s, the wall time ``W`` solves
``W·(1 − e − λ·(R + I/2)) = T·(1 + c/I)``. GPU-hours = W hours × devices; days = W / 86,400 s;
cost = GPU-hours × $/GPU-hour (none without a price); goodput = T / W.
"""

import math
from dataclasses import dataclass

from napkin.errors import require
from napkin.training.schedule import SECONDS_PER_DAY
from napkin.units import HOUR_S

MAX_RUN_TOKENS = 1e18
"""Tokens a run may ask for (a thousand times the largest published pretraining runs)."""
LLAMA3_FAILURES_PER_GPU_HOUR = 419 / (54 * 24 * 16384)
"""Unexpected interruptions per GPU-hour of Llama 3 405B's pre-training: 419 in a 54-day
snapshot on up to 16,384 H100 (Llama Team 2024, §3.3.4 and Table 5), 1.97e-5."""


@dataclass(frozen=True)
class Goodput:
    """What a run spends besides its updates (module docstring)."""

    eval_share: float = 0.0
    """Share of the wall time spent evaluating."""
    checkpoint_s: float = 0.0
    """Seconds a checkpoint blocks training (0: asynchronous checkpointing)."""
    checkpoint_interval_s: float = 1800.0
    """Training seconds between checkpoints (an assumption: 30 minutes)."""
    failures_per_gpu_hour: float = LLAMA3_FAILURES_PER_GPU_HOUR
    restart_s: float = 0.0
    """Seconds to restart after a failure, beyond the work lost since the checkpoint."""

    def __post_init__(self) -> None:
        for name, value in (("eval-share", self.eval_share), ("checkpoint-s", self.checkpoint_s),
                            ("failures-per-gpu-hour", self.failures_per_gpu_hour),
                            ("restart-s", self.restart_s)):
            require(math.isfinite(value) and value >= 0,
                    f"{name}: must be a finite number >= 0, got {value}")
        require(self.eval_share < 1, f"eval-share: must be below 1, got {self.eval_share}")
        require(math.isfinite(self.checkpoint_interval_s) and self.checkpoint_interval_s > 0,
                f"checkpoint-interval-s: must be a finite number > 0, got "
                f"{self.checkpoint_interval_s}")

    def wall_s(self, train_s: float, devices: int) -> float:
        """The wall time of ``train_s`` seconds of updates on ``devices`` GPUs."""
        rate = self.failures_per_gpu_hour * devices / HOUR_S
        left = 1 - self.eval_share - rate * (self.restart_s + self.checkpoint_interval_s / 2)
        require(left > 0, "failures-per-gpu-hour: failures, restarts and evaluation leave no "
                "time to train (lower the failure rate, restart time, checkpoint interval or "
                "evaluation share)")
        return train_s * (1 + self.checkpoint_s / self.checkpoint_interval_s) / left


@dataclass(frozen=True)
class TrainingRun:
    """A run of ``updates`` identical updates on ``devices`` accelerators."""

    tokens: float
    tokens_per_update: int
    update_s: float
    devices: int
    usd_per_gpu_hour: float | None
    """None: no price known (the run's time without its cost)."""
    price_source: str
    goodput_inputs: Goodput = Goodput(failures_per_gpu_hour=0.0)

    @property
    def updates(self) -> int:
        """``⌈tokens / tokens_per_update⌉``: the last update may be partial but takes as long."""
        return math.ceil(self.tokens / self.tokens_per_update)

    @property
    def train_s(self) -> float:
        """Seconds of updates alone."""
        return self.updates * self.update_s

    @property
    def wall_s(self) -> float:
        return self.goodput_inputs.wall_s(self.train_s, self.devices)

    @property
    def goodput(self) -> float:
        """Share of the wall time spent on updates."""
        return self.train_s / self.wall_s

    @property
    def gpu_hours(self) -> float:
        return self.wall_s * self.devices / HOUR_S

    @property
    def days(self) -> float:
        return self.wall_s / SECONDS_PER_DAY

    @property
    def usd(self) -> float | None:
        return None if self.usd_per_gpu_hour is None else self.gpu_hours * self.usd_per_gpu_hour


def training_run(tokens: float | None, epochs: float | None, dataset_tokens: float | None,
                 tokens_per_update: int, update_s: float, devices: int,
                 usd_per_gpu_hour: float | None, price_source: str,
                 goodput: Goodput | None = None) -> TrainingRun:
    """The run of ``tokens`` (or ``epochs`` × ``dataset_tokens``) at one plan's update; with
    ``goodput`` None, updates alone (no evaluation, checkpoints or failures)."""
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
    require(usd_per_gpu_hour is None or (math.isfinite(usd_per_gpu_hour)
                                         and usd_per_gpu_hour >= 0),
            f"usd-per-gpu-hour: must be a finite number >= 0, got {usd_per_gpu_hour}")
    return TrainingRun(float(tokens), tokens_per_update, update_s, devices, usd_per_gpu_hour,
                       price_source, goodput or Goodput(failures_per_gpu_hour=0.0))
