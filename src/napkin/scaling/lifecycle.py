"""Loss-target lifecycle (chapter 3.6.1, Figure 3-29): what each model size costs to reach a
target loss and to serve.

For a target loss L* and size N, the law gives the training tokens D(N) with L(N, D) = L*;
training costs ``6·N·D`` FLOPs, a request of P input and G output tokens ``2N·[P + (G − 1)]``.
Both convert to GPU-seconds at one accelerator's dense peak × MFU (the chapter: H100 SXM at 40%,
395.76 TFLOP per GPU-second), so the break-even number of calls between two sizes,
``Q* = ΔC₀/Δc``, depends only on FLOPs, not on the MFU chosen.
"""

from dataclasses import dataclass

from napkin.accounting.rules import call_flops_2n, train_flops_6nd
from napkin.economics import break_even_tasks
from napkin.errors import require
from napkin.scaling.law import ScalingLaw
from napkin.scaling.optimum import tokens_for_loss
from napkin.specs.hardware import Accelerator
from napkin.units import HOUR_S


@dataclass(frozen=True)
class SizeCost:
    """One model size on the way to the target loss."""

    params: float
    tokens: float
    flops_per_gpu_s: float
    call_flops: float

    @property
    def train_flops(self) -> float:
        return train_flops_6nd(self.params, self.tokens)

    @property
    def train_gpu_hours(self) -> float:
        return self.train_flops / self.flops_per_gpu_s / HOUR_S

    @property
    def call_gpu_s(self) -> float:
        return self.call_flops / self.flops_per_gpu_s

    def total_gpu_hours(self, calls: float) -> float:
        """``C_life = C₀ + Q·c`` in GPU-hours after ``calls`` requests."""
        return self.train_gpu_hours + calls * self.call_gpu_s / HOUR_S


def size_costs(law: ScalingLaw, target_loss: float, sizes: list[float], prompt_tokens: int,
               gen_tokens: int, acc: Accelerator, mfu: float = 0.4,
               compute: str = "bf16") -> tuple[SizeCost, ...]:
    """Tokens, training GPU-hours and per-call GPU-seconds of each size at ``target_loss``."""
    require(0 < mfu <= 1, f"mfu: must be in (0, 1], got {mfu}")
    require(len(sizes) >= 1, "sizes: give at least one model size")
    rate = acc.peak_flops_per_s(compute) * mfu
    return tuple(SizeCost(n, tokens_for_loss(law, n, target_loss), rate,
                          call_flops_2n(n, prompt_tokens, gen_tokens)) for n in sizes)


def break_even_calls(small: SizeCost, large: SizeCost) -> float | None:
    """Calls after which the smaller model, costlier to train but cheaper to run, has paid
    back: ``Q* = ΔC₀/Δc`` (GPU-seconds). None when the smaller model is also cheaper (or as
    cheap) to train: it is ahead from the first call, there is nothing to pay back."""
    extra = (small.train_gpu_hours - large.train_gpu_hours) * HOUR_S
    if extra <= 0:
        return None
    return break_even_tasks(extra, large.call_gpu_s - small.call_gpu_s)
