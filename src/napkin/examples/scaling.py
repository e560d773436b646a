"""Worked examples of chapter 3.6.1 (scaling laws, loss-target lifecycle) and the question
bank's task 4 and q19."""

import csv
from functools import cache
from pathlib import Path

import numpy as np

from napkin.catalog import load_accelerator, scaling_data
from napkin.examples.row import Example, Row, rounded
from napkin.scaling.law import (
    CHINCHILLA_APPROACH3,
    HOFFMANN_GRID,
    HoldoutResult,
    ScalingLaw,
    holdout,
    read_observations,
)
from napkin.scaling.lawfile import NamedLaw, data_range_of, range_warnings
from napkin.scaling.lifecycle import break_even_calls, size_costs
from napkin.scaling.optimum import chinchilla_rule, scale_factors
from napkin.training.memory import recipe, state_memory
from napkin.training.schedule import SECONDS_PER_DAY, budget_flops
from napkin.units import GB

HELD_OUT = ("2b855b55b", "8b7178b178b")
FITTED = ("280m5b95b9", "619m2b72b7", "619m22b22b", "1b112b12b", "1b58b88b8", "1b566b66b")
"""Example 3-5's six fitted runs, found by search (benchmarks/example_3_5_search.py).

The chapter fits six C4 runs of datablations with N < 2e9, predicts 2.583 and 2.363 for the two
held out (observed 2.574 and 2.337) with RMSE 0.0193 nats/token, and reuses that law in §3.6.1
(0.1B needs 298.6B tokens to reach 2.9, 73.5 GPU-h more than 0.5B). It names neither the runs
nor any departure from Hoffmann's method. The search tried, over the 22 single-epoch unseeded
runs with N < 2e9: one run per model size (largest D, or D/N nearest 20; 3,003 sets each),
every six of the 16 runs with loss < 4 (8,008) and, for E fixed at 1.69, every six of 22
(74,613); Huber on log residuals with δ = 1e-4 … 1 and E free, fixed at 1.69 or 1.82, and
least squares in loss space. Hoffmann's own method (E free, δ = 1e-3) comes no closer than
0.0017 nats on the predictions: six points leave five coefficients nearly undetermined (the old
choice, every single-epoch run with 15 ≤ D/N ≤ 50, drove E to 0 and α to 0.045 and predicted
2.555 / 2.316, below both observations).

Six set × method pairs match the two predictions to ±0.001 and the RMSE to ±0.0005 (closest:
E = 1.69 on 83m1b51b5 196m1b51b5 220m7b57b5 421m32b32b 619m22b22b 1b566b66b, 2.5833 / 2.3628,
RMSE 0.0195), but their laws need 158B to 131,000B tokens for 0.1B at 2.9 instead of 298.6B:
with so few points many sets hit two numbers by chance. Only this set, with E held at
Hoffmann's 1.69 (``FIT_FIXED_E``) and Huber δ = 1e-3, agrees with all the chapter's numbers at
once: predictions 2.5833 / 2.3636 (published 2.583 / 2.363), RMSE 0.0201 (0.0193), 0.1B tokens
285.7B (298.6B), 120.3 GPU-h (125.7), 70.6 GPU-h more than 0.5B (73.5). No configuration
reproduces every number exactly: for these runs E = 1.68 gives RMSE 0.0194 but 278B tokens,
E = 1.705 gives 298.6B but predicts 2.365. The rows of ``3-5-fit`` and ``§3.6.1-life`` carry
these deviations as their tolerances."""
FIT_FIXED_E = CHINCHILLA_APPROACH3.E  # 1.69 nats/token, Hoffmann et al. 2022 eq. 10
FIT_DELTA = 1e-3  # Huber threshold on log residuals (Hoffmann's)
C4_SOURCE = "datablations_c4_runs.csv"


@cache
def example_3_5_holdout() -> HoldoutResult:
    """Fit the six C4 runs ``FITTED`` (E fixed at 1.69, Hoffmann's Huber fit over all 4,500
    starts), predict the two with N ≥ 2e9 (Example 3-5)."""
    path: Path = scaling_data("datablations_c4_runs.csv")
    with path.open(newline="") as f:
        index: dict[str, int] = {}
        for i, row in enumerate(csv.DictReader(f)):
            index.setdefault(row["run_name"], i)
    runs = read_observations(path, "params", "tokens", "c4_val_loss")
    return holdout(runs, [index[n] for n in FITTED], [index[n] for n in HELD_OUT],
                   delta=FIT_DELTA, grid=HOFFMANN_GRID, fixed_E=FIT_FIXED_E)


def example_3_5_law() -> NamedLaw:
    """Example 3-5's fitted law with the range of its six runs (``--law c4``)."""
    fitted = example_3_5_holdout().fit
    return NamedLaw(fitted.law, "c4", data_range_of(fitted, C4_SOURCE))


C4_EXAMPLE_FILE = "examples/c4-example-3-5.csv"
"""The eight runs of Example 3-5 (``FITTED`` and ``HELD_OUT``: the first row of each in
``datablations_c4_runs.csv``), as a file in the repository a user can edit."""


def c4_reproduce_command(path: str = C4_EXAMPLE_FILE) -> str:
    """The command that refits ``--law c4`` from a CSV holding the eight runs of Example 3-5
    (``FITTED`` and ``HELD_OUT``, rows of ``datablations_c4_runs.csv``)."""
    return (f"napkin scaling fit {path} --loss-col c4_val_loss --holdout-min-n 2e9 "
            f"--fix-E {FIT_FIXED_E:g} --grid full")


_FIT_NOTE = ("napkin's reconstruction: six runs found by search, E fixed at 1.69 (see FITTED); "
             "the chapter's runs are unnamed; from the command line: "
             f"{c4_reproduce_command()}")


def c4_law_note() -> str:
    """What ``--law c4`` is, how it departs from the chapter's law and how to refit it."""
    return ("law c4 is napkin's reconstruction of the chapter's unnamed Example 3-5 fit: "
            f"the six {C4_SOURCE} runs {', '.join(FITTED)} (found by search), E held at "
            f"{FIT_FIXED_E:g}, Huber δ = {FIT_DELTA:g}; it matches the chapter's held-out "
            "predictions 2.583 / 2.363 to 0.001 but needs about 4% fewer tokens at a loss "
            "than the chapter's law (the chapter: 0.1B reaches 2.9 on 298.6B tokens, "
            "125.7 H100 GPU-h, break-even with 0.5B after 204.8M calls); refit it with "
            f"`{c4_reproduce_command()}` ({C4_EXAMPLE_FILE}: those runs plus "
            f"{', '.join(HELD_OUT)}, held out)")


def ex_3_5_fit() -> list[Row]:
    h = example_3_5_holdout()
    return [
        Row("held-out run 2.81e9 params, 55e9 tokens: observed", h.observed[0], 2.574, "nats"),
        Row("held-out run 8.67e9 params, 178e9 tokens: observed", h.observed[1], 2.337, "nats"),
        Row("prediction for 2.81e9", float(h.predicted[0]), 2.583, "nats", 0.001 / 2.583,
            f"±0.001 nats; {_FIT_NOTE}"),
        Row("prediction for 8.67e9", float(h.predicted[1]), 2.363, "nats", 0.001 / 2.363,
            "±0.001 nats (napkin's 2.3636 rounds to 2.364, not 2.363)"),
        rounded("error for 2.81e9", float(h.errors[0]), 0.009, 3, "nats"),
        Row("error for 8.67e9", float(h.errors[1]), 0.026, "nats", 0.05,
            "±5%: napkin's 0.0268 rounds to 0.027"),
        Row("hold-out RMSE", h.rmse, 0.0193, "nats/token", 0.05,
            "±5%: napkin 0.0201; the chapter's own 2.583 / 2.363 give 0.0196 against the "
            "observed 2.574117 / 2.336741"),
        Row("median |error| on the fitted runs", float(np.median(np.abs(h.fit.residuals))),
            None, "nats",
            note="fitted points sit closer than held-out ones: fit error is no hold-out error"),
    ]


def ex_3_8() -> list[Row]:
    equal = ScalingLaw(E=1.7, A=400.0, B=400.0, alpha=0.3, beta=0.3)  # any law with α = β
    x4, x9 = scale_factors(equal, 4), scale_factors(equal, 9)
    return [Row("budget ×4: N grows", x4[0], 2, "×"), Row("budget ×4: D grows", x4[1], 2, "×"),
            Row("budget ×9: N grows", x9[0], 3, "×"), Row("budget ×9: D grows", x9[1], 3, "×")]


def ex_lifecycle() -> list[Row]:
    """§3.6.1: target loss 2.9, P = 512, G = 128, H100 SXM at 40% MFU, under Example 3-5's law.

    Everything follows from the fitted law: D(N) = (B/(2.9 − E − A/N^α))^(1/β) tokens,
    training 6ND FLOPs, a call 2N·[P + (G − 1)] FLOPs, both over 395.76 TFLOP per GPU-second;
    break-even Q* = ΔC₀/Δc. The 0.1B model's tokens lie far beyond the largest D fitted
    (66e9): the law is extrapolated there, as the chapter says.
    """
    h100 = load_accelerator("h100-sxm")
    rate = h100.peak_flops_per_s("bf16") * 0.4
    named = example_3_5_law()
    small, large = size_costs(named.law, 2.9, [0.1e9, 0.5e9], 512, 128, h100)
    saving = large.call_gpu_s - small.call_gpu_s
    extra = small.train_gpu_hours - large.train_gpu_hours
    calls = break_even_calls(small, large)
    why = ("±5%: napkin's reconstruction of the chapter's law (see FITTED) needs 4% fewer "
           "tokens at 2.9 than the chapter's; `napkin lifecycle --target-loss 2.9 --sizes "
           "1e8,5e8 --law c4` prints these and says so")
    beyond = "; ".join(range_warnings(named, [("0.1B", small.params, small.tokens)]))
    return [
        Row("H100 SXM at 40% MFU", rate / 1e12, 395.76, "TFLOP per GPU-s"),
        Row("tokens for 0.1B to reach 2.9", small.tokens / 1e9, 298.6, "B tokens", 0.05,
            f"{why}; {beyond}" if beyond else why),
        Row("0.1B training", small.train_gpu_hours, 125.7, "GPU-h", 0.05, why),
        Row("tokens for 0.5B to reach 2.9", large.tokens / 1e9, None, "B tokens",
            note="the chapter's 125.7 − 73.5 GPU-h imply ≈24.8B"),
        Row("0.1B minus 0.5B training", extra, 73.5, "GPU-h", 0.05, why),
        Row("per-call saving, 0.1B vs 0.5B: 2N[P + G − 1]", saving, 0.00129, "GPU-s"),
        Row("break-even calls", (calls or float("nan")) / 1e6, 204.8, "M calls", 0.05,
            f"Q* = ΔC₀/Δc; {why}"),
    ]


def ex_task_4() -> list[Row]:
    """Task 4: 4 × RTX 4080 for 30 days at 40% MFU: what to pretrain."""
    acc = load_accelerator("rtx-4080")
    c = budget_flops(acc, 4, 30, 0.4)
    n, d = chinchilla_rule(c)
    alt_d = c / (6 * 0.5e9)
    rec = recipe("adamw")
    return [
        Row("budget", c / 1e20, 4.0, "1e20 FLOP", 0.011, "published 4.0 (4 × 97.5e12 × 0.4 × "
            "30 × 86,400 = 4.04e20)"),
        rounded("Chinchilla N = √(C/120)", n / 1e9, 1.8, 1, "B params"),
        rounded("D = 20N", d / 1e9, 37, unit="B tokens"),
        rounded("tokens/s to finish in 30 days", d / (30 * SECONDS_PER_DAY) / 1e3, 14,
                unit="k tok/s"),
        rounded("state at 16 B/param", state_memory(int(n), 0, rec).bytes / GB, 29, unit="GB"),
        rounded("FSDP on 4 cards", state_memory(int(n), 0, rec, 4, 3).bytes / GB, 7, unit="GB"),
        Row("0.5B on the same budget: tokens", alt_d / 1e9, 135, "B tokens", 0.01,
            "published rounds 134.8B to 135B"),
        rounded("loss of the Chinchilla-optimal model", CHINCHILLA_APPROACH3.loss(n, d), 2.43, 2,
                "nats"),
        rounded("loss of the 0.5B model", CHINCHILLA_APPROACH3.loss(0.5e9, alt_d), 2.45, 2,
                "nats"),
        rounded("inference cost ratio (2N per token)", n / 0.5e9, 3.7, 1, "×"),
    ]


def ex_q19() -> list[Row]:
    n, d = chinchilla_rule(6 * 70e9 * 1.4e12)
    return [Row("Chinchilla's budget 6 × 70B × 1.4T: N = √(C/120)", n / 1e9, 70, "B params"),
            Row("tokens per parameter", d / n, 20, "")]


EXAMPLES_SCALING: tuple[Example, ...] = (
    Example("3-5-fit", "fit six C4 runs, hold out two larger ones", "chapter 3, Example 3-5",
            ex_3_5_fit),
    Example("3-8", "equal exponents: how N and D grow with the budget",
            "chapter 3, Exercise 3-8", ex_3_8),
    Example("§3.6.1-life", "loss-target lifecycle: 0.1B vs 0.5B", "chapter 3, §3.6.1",
            ex_lifecycle),
    Example("task-4", "4 × RTX 4080 for 30 days: what to pretrain", "question bank, task 4",
            ex_task_4),
    Example("q19", "Chinchilla's rule", "question bank, q19", ex_q19),
)
