"""Figures for scaling-law fits (matplotlib, imported only inside the function): predicted vs
observed loss with the diagonal, and the signed errors per run (the chapter's Figures 3-27 and
3-28)."""

import itertools
from pathlib import Path

import numpy as np

from napkin.scaling.law import FitResult, HoldoutResult
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


def plot_lifecycle(costs, path):
    """Cumulative GPU-hours against calls, one line per model size (the chapter's Fig. 3-29):
    intercept = training, slope = cost per call."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    top = 1e9
    for a, b in itertools.pairwise(costs):
        saving = abs(a.call_gpu_s - b.call_gpu_s)
        if saving:
            top = max(top, 2 * abs(a.train_gpu_hours - b.train_gpu_hours) * HOUR_S / saving)
    calls = np.linspace(0, top, 200)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for c in costs:
        ax.plot(calls, [c.total_gpu_hours(q) for q in calls], label=f"{c.params:.3g} params")
    ax.set_xlabel("calls")
    ax.set_ylabel("GPU-hours (training + serving)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
