"""Loss-target lifecycle (chapter 3.6.1, Figure 3-29): what each model size costs to reach a
target loss and to serve.

For a target loss L* and size N, the law gives the training tokens D(N) with L(N, D) = L*;
training costs ``6·N·D`` FLOPs, a request of P input and G output tokens ``2N·[P + (G − 1)]``.
Both convert to GPU-seconds at one accelerator's dense peak × MFU (the chapter: H100 SXM at 40%,
395.76 TFLOP per GPU-second), so the break-even number of calls between two sizes,
``Q* = ΔC₀/Δc``, depends only on FLOPs, not on the MFU chosen.
"""

import math
from dataclasses import dataclass

from napkin.accounting.rules import call_flops_2n, train_flops_6nd
from napkin.economics import break_even_tasks
from napkin.errors import NapkinError, require
from napkin.scaling.law import ScalingLaw
from napkin.scaling.optimum import check_param_count, tokens_for_loss
from napkin.specs.hardware import Accelerator
from napkin.timing.efficiency import check_efficiency
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


TaskMix = tuple[tuple[int, int, float], ...]
"""Request kinds ``(P, G, share)``: input tokens, output tokens, share of the calls."""


def parse_mix(text: str) -> TaskMix:
    """``"512:128:0.7,2048:256:0.3"`` → kinds of ``P:G:share`` (shares normalized to 1)."""
    kinds = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        fields = part.split(":")
        try:
            p, g, share = int(fields[0]), int(fields[1]), float(fields[2])
        except (ValueError, IndexError):
            raise NapkinError(f"mix: {part!r} must be P:G:share, e.g. 512:128:0.7") from None
        require(len(fields) == 3 and p >= 1 and g >= 1 and math.isfinite(share) and share > 0,
                f"mix: {part!r} needs P >= 1, G >= 1 and a finite share > 0")
        kinds.append((p, g, share))
    require(bool(kinds), "mix: give at least one P:G:share")
    total = sum(k[2] for k in kinds)
    return tuple((p, g, share / total) for p, g, share in kinds)


def mix_call_flops(params: float, mix: TaskMix) -> float:
    """Mean FLOPs of a call over the mix: ``Σ share · 2N·[P + (G − 1)]``."""
    return sum(share * call_flops_2n(params, p, g) for p, g, share in mix)


def size_costs(law: ScalingLaw, target_loss: float, sizes: list[float], prompt_tokens: int,
               gen_tokens: int, acc: Accelerator, mfu: float = 0.4,
               compute: str = "bf16", mix: TaskMix | None = None) -> tuple[SizeCost, ...]:
    """Tokens, training GPU-hours and per-call GPU-seconds of each size at ``target_loss``;
    a call is one P-in, G-out request, or the mean over ``mix``."""
    check_efficiency(mfu, "mfu")
    require(len(sizes) >= 1, "sizes: give at least one model size")
    for n in sizes:
        check_param_count(n, "sizes")
    rate = acc.peak_flops_per_s(compute) * mfu
    kinds = mix or ((prompt_tokens, gen_tokens, 1.0),)
    return tuple(SizeCost(n, tokens_for_loss(law, n, target_loss), rate,
                          mix_call_flops(n, kinds)) for n in sizes)


def break_even_calls(small: SizeCost, large: SizeCost) -> float | None:
    """Calls after which the smaller model, costlier to train but cheaper to run, has paid
    back: ``Q* = ΔC₀/Δc`` (GPU-seconds). None when the smaller model is also cheaper (or as
    cheap) to train: it is ahead from the first call, there is nothing to pay back."""
    extra = (small.train_gpu_hours - large.train_gpu_hours) * HOUR_S
    if extra <= 0:
        return None
    return break_even_tasks(extra, large.call_gpu_s - small.call_gpu_s)
