"""Figures for cost and compute budgets (matplotlib, imported only inside functions): cost per
successful task (the chapter's Figure 3-9) and GPU-hours across accelerators and device counts
(Figure 3-31)."""

from collections.abc import Mapping, Sequence
from pathlib import Path

from napkin.report.plots import _plt

ATTEMPTS = 100
"""Attempts per method drawn in the cost-per-success figure (Figure 3-9 shows 100 each)."""


def plot_cost_success(components: Mapping[str, Sequence[float]], rates: Sequence[float],
                      per_success: Sequence[float], path: Path) -> Path:
    """Figure 3-9 for the user's methods: over 100 attempts each, the cost of all attempts
    (stacked by component: generation, verification, tools, environment), the tasks that
    passed, and their quotient, the cost per success."""
    plt = _plt()
    attempts = ATTEMPTS
    names = [f"method {i + 1}" for i in range(len(rates))]
    x = list(range(len(names)))
    fig, (ax_cost, ax_ok, ax_per) = plt.subplots(1, 3, figsize=(11, 3.8))
    bottom = [0.0] * len(names)
    for part, values in components.items():
        totals = [v * attempts for v in values]
        if any(totals):
            ax_cost.bar(x, totals, bottom=bottom, label=part)
            bottom = [b + t for b, t in zip(bottom, totals, strict=True)]
    ax_cost.set_title(f"cost of {attempts} attempts")
    ax_cost.set_ylabel("cost (your unit)")
    ax_cost.legend(fontsize="small")
    passed = [p * attempts for p in rates]
    ax_ok.bar(x, passed, color="tab:green")
    ax_ok.set_ylim(0, attempts * 1.1)
    ax_ok.set_title(f"tasks passed (of {attempts})")
    ax_ok.set_ylabel("tasks")
    ax_per.bar(x, per_success, color="tab:red")
    ax_per.set_title("cost per success = cost ÷ passed")
    ax_per.set_ylabel("cost per successful task")
    for ax, values in ((ax_cost, bottom), (ax_ok, passed), (ax_per, per_success)):
        ax.margins(y=0.12)
        ax.set_xticks(x, names)
        for i, v in enumerate(values):
            ax.annotate(f"{v:,.4g}", xy=(i, v), xytext=(0, 3), textcoords="offset points",
                        ha="center")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_gpu_hours(hours: Mapping[str, float], counts: Sequence[int],
                   days: Mapping[str, Sequence[float]], devices: int, path: Path) -> Path:
    """Left: the same work as GPU-hours of each accelerator (equal utilization, dense BF16
    peaks), log axis, as in Figure 3-31. Right: calendar days against the number of devices
    running at once, one line per accelerator, the user's count marked."""
    plt = _plt()
    fig, (ax_h, ax_d) = plt.subplots(1, 2, figsize=(11, 1.8 + 0.5 * max(3, len(hours))))
    ids = list(hours)
    ax_h.barh(range(len(ids)), [hours[i] for i in ids], color="tab:blue")
    for k, gid in enumerate(ids):
        ax_h.annotate(f"{hours[gid]:,.0f} h", xy=(hours[gid], k), xytext=(4, 0),
                      textcoords="offset points", va="center")
    ax_h.set_yticks(range(len(ids)), ids)
    ax_h.invert_yaxis()
    ax_h.set_xscale("log")
    ax_h.set_xlim(min(hours.values()) / 10, max(hours.values()) * 20)
    ax_h.set_xlabel("GPU-hours (log scale)")
    ax_h.set_title("the same work in each accelerator's hours")
    at = list(counts).index(devices)
    for gid, curve in days.items():
        line, = ax_d.plot(counts, curve, marker=".",
                          label=f"{gid}: {curve[at]:,.4g} days on {devices:,}")
        ax_d.plot([devices], [curve[at]], "o", markersize=9, color=line.get_color())
    ax_d.set_xscale("log", base=2)
    ax_d.set_yscale("log")
    ax_d.set_xlabel("devices running at once")
    ax_d.set_ylabel("calendar days (no stops)")
    ax_d.set_title("days = GPU-hours / devices / 24")
    ax_d.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
