"""Figures for scaling-law fits (matplotlib, imported only inside the function): predicted vs
observed loss with the diagonal, and the signed errors per run (the chapter's Figures 3-27 and
3-28); lifecycle cost against calls (Figure 3-29); compute-optimal N and D against the budget
(§3.6.1)."""

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from napkin.scaling.law import FitResult, HoldoutResult
from napkin.scaling.lifecycle import SizeCost
from napkin.units import HOUR_S


def plot_fit(result: HoldoutResult | FitResult, path: str | Path) -> Path:
    """Left: predicted vs observed loss (nats/token), fitted runs F1… as circles, held-out runs
    H1… as triangles, the diagonal where prediction equals observation. Right: ``L̂ − L`` per run
    with its sign. Writes a PNG (or whatever ``path``'s suffix names) and returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fitted = result.fit if isinstance(result, HoldoutResult) else result
    groups = [("fitted", "F", "o", "tab:blue", fitted.observed, fitted.predicted)]
    if isinstance(result, HoldoutResult):
        groups.append(("held out", "H", "^", "tab:red", result.observed, result.predicted))

    fig, (ax, ax_err) = plt.subplots(1, 2, figsize=(11, 4.5))
    everything = np.concatenate([np.concatenate([obs, pred]) for *_, obs, pred in groups])
    pad = 0.05 * (everything.max() - everything.min() or 1.0)
    lo, hi = everything.min() - pad, everything.max() + pad
    ax.plot([lo, hi], [lo, hi], color="grey", linestyle="--", linewidth=1,
            label="prediction = observation")
    labels, errors, colors = [], [], []
    for name, prefix, marker, color, obs, pred in groups:
        ax.scatter(obs, pred, marker=marker, color=color, s=50, label=name, zorder=3)
        for i, (x, y) in enumerate(zip(obs, pred, strict=True), start=1):
            ax.annotate(f"{prefix}{i}", (x, y), textcoords="offset points", xytext=(5, -10),
                        fontsize=8)
        labels += [f"{prefix}{i}" for i in range(1, len(obs) + 1)]
        errors += list(pred - obs)
        colors += [color] * len(obs)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("observed loss, nats/token")
    ax.set_ylabel("predicted loss, nats/token")
    law = fitted.law
    ax.set_title(f"E={law.E:.3g}, A={law.A:.3g}, B={law.B:.3g}, "
                 f"α={law.alpha:.3f}, β={law.beta:.3f}", fontsize=10)
    ax.legend(loc="upper left", fontsize=9)

    ax_err.bar(labels, errors, color=colors)
    ax_err.axhline(0.0, color="grey", linewidth=1)
    ax_err.set_ylabel("predicted − observed, nats/token")
    if isinstance(result, HoldoutResult):
        ax_err.set_title(f"held-out RMSE {result.rmse:.4f} nats/token", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_lifecycle(costs: Sequence[SizeCost], path: str | Path, *,
                   extrapolated: Sequence[bool] = (),
                   break_even_calls: Sequence[float | None] = ()) -> Path:
    """Cumulative GPU-hours against calls, one line per model size (the chapter's Fig. 3-29):
    intercept = training, slope = cost per call. A size whose (N, D) lies outside the law's data
    range (``extrapolated[i]``) is drawn dashed; each break-even in ``break_even_calls`` (calls,
    None where there is none) is a vertical line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    crossings = [q for q in break_even_calls if q is not None]
    top = max([1e9, *(1.5 * q for q in crossings)])
    for a, b in itertools.pairwise(costs):
        saving = abs(a.call_gpu_s - b.call_gpu_s)
        if saving:
            top = max(top, 2 * abs(a.train_gpu_hours - b.train_gpu_hours) * HOUR_S / saving)
    calls = np.linspace(0, top, 200)
    dashed = list(extrapolated) + [False] * (len(costs) - len(extrapolated))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for c, outside in zip(costs, dashed, strict=True):
        ax.plot(calls, [c.total_gpu_hours(q) for q in calls],
                linestyle="--" if outside else "-",
                label=f"{c.params / 1e9:.3g}B params" + (" (extrapolated)" if outside else ""))
    for q in crossings:
        ax.axvline(q, color="grey", linestyle=":", linewidth=1)
        ax.annotate(f"break-even ≈ {q / 1e6:,.1f}M calls", (q, 0.95),
                    xycoords=ax.get_xaxis_transform(), xytext=(4, 0),
                    textcoords="offset points", fontsize=8, color="dimgrey")
    ax.set_xlabel("calls")
    ax.set_ylabel("GPU-hours (training + serving)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_allocation(budget_flops: float,
                    curves: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
                    path: str | Path) -> Path:
    """Compute-optimal parameters N and tokens D against the training budget C (FLOPs), log-log,
    one line per allocation (``curves``: label → (C, N, D)), the user's budget a vertical
    line: the slopes are the allocation exponents of §3.6.1 (Kaplan's N ∝ C^0.73 against
    Chinchilla's ≈ C^0.5)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_n, ax_d) = plt.subplots(1, 2, figsize=(11, 4.5))
    for label, (c, n, d) in curves.items():
        ax_n.plot(c, n, label=label)
        ax_d.plot(c, d, label=label)
    for ax, what in ((ax_n, "parameters N"), (ax_d, "training tokens D")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axvline(budget_flops, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("training compute C, FLOPs")
        ax.set_ylabel(f"compute-optimal {what}")
        ax.grid(alpha=0.3, which="both")
    ax_n.legend(fontsize=9)
    ax_n.set_title(f"budget {budget_flops:.3g} FLOPs (dotted)", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
