"""A pretraining budget in GPUs and days → model sizes to train, their data, loss and state.

Question-bank task 4: ``count`` accelerators for ``days`` at ``mfu`` deliver

    C = count · peak · mfu · days · 86,400 s        (FLOPs)

and each size N trains on D = C / (6N) tokens. The options are the Chinchilla rule
(N = √(C/120), D = 20N), the given law's compute optimum, and any sizes the user adds; each
gets its loss under the law, the tokens per second the run must sustain, and the per-GPU state
of AdamW mixed precision (16 B/param: BF16 weights and gradients, FP32 master and two moments)
replicated (DDP) or sharded over every GPU (FSDP, ZeRO-3), against the card's memory before
activations.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from napkin.errors import require
from napkin.scaling.lawfile import NamedLaw, range_warnings
from napkin.scaling.optimum import (
    COMPUTE_FLOPS_RANGE,
    check_param_count,
    chinchilla_rule,
    d_opt,
    n_opt,
)
from napkin.specs.hardware import Accelerator
from napkin.training.memory import recipe, state_memory
from napkin.training.schedule import SECONDS_PER_DAY, budget_flops


@dataclass(frozen=True)
class PretrainOption:
    """One model size under the budget."""

    name: str
    params: float
    tokens: float
    loss: float
    tokens_per_s: float
    """Training tokens per second the run must sustain, D / (days · 86,400 s)."""
    inference_cost_vs_rule: float
    """Cost per generated token relative to the Chinchilla-rule size (∝ 2N)."""
    ddp_state_bytes: int
    fsdp_state_bytes: int
    ddp_fits: bool
    fsdp_fits: bool


@dataclass(frozen=True)
class PretrainPlan:
    """The budget and its options; ``warnings`` name predictions outside a fitted law's data."""

    budget_flops: float
    options: tuple[PretrainOption, ...]
    warnings: tuple[str, ...]


def plan_pretrain(acc: Accelerator, count: int, days: float, mfu: float, law: NamedLaw,
                  sizes: Sequence[float] = ()) -> PretrainPlan:
    """See the module docstring; ``sizes`` are extra parameter counts to compare."""
    for n in sizes:
        check_param_count(n, "alt")
    c = budget_flops(acc, count, days, mfu)
    require(c >= COMPUTE_FLOPS_RANGE[0],
            f"days: {count} × peak × {mfu:g} × {days:g} days is {c:.3g} FLOPs, under the "
            f"{COMPUTE_FLOPS_RANGE[0]:g} FLOP a budget needs; give more --days")
    n_rule, d_rule = chinchilla_rule(c)
    points = [("Chinchilla rule, √(C/120)", n_rule, d_rule),
              (f"{law.name} law optimum", n_opt(law.law, c), d_opt(law.law, c))]
    points += [(f"{n:,.4g} params", n, c / (6 * n)) for n in sizes]
    rec = recipe("adamw")
    options = []
    for name, n, d in points:
        ddp = state_memory(int(n), 0, rec).bytes
        fsdp = state_memory(int(n), 0, rec, count, 3).bytes
        options.append(PretrainOption(name, n, d, float(law.law.loss(n, d)),
                                      d / (days * SECONDS_PER_DAY), n / n_rule, ddp, fsdp,
                                      ddp <= acc.memory_bytes, fsdp <= acc.memory_bytes))
    return PretrainPlan(c, tuple(options), tuple(range_warnings(law, points)))
