"""Predicted-vs-measured figure of ``napkin validate``."""

from pathlib import Path

from napkin.validation.calibrate import METRICS, ValidationReport, pairs


def plot_validation(results: list[tuple[str, str, ValidationReport]], path: Path) -> None:
    """One log-log panel per metric: every replayed row, the diagonal and ±25 % lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(METRICS), figsize=(11, 5))
    for ax, metric in zip(axes, METRICS, strict=True):
        lo, hi = float("inf"), 0.0
        for label, _, rep in results:
            got, want = pairs(rep.predictions, metric)
            if len(want):
                ax.scatter(want * 1e3, got * 1e3, s=12, alpha=0.7, label=label)
                lo, hi = min(lo, want.min(), got.min()), max(hi, want.max(), got.max())
        if hi > 0:
            xs = [lo * 1e3 * 0.8, hi * 1e3 * 1.25]
            ax.plot(xs, xs, "k-", lw=1)
            ax.plot(xs, [x * 1.25 for x in xs], "k:", lw=1)
            ax.plot(xs, [x / 1.25 for x in xs], "k:", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured mean {metric.upper()}, ms")
        ax.set_ylabel(f"predicted mean {metric.upper()}, ms")
        ax.set_title(f"{metric.upper()} (dotted: ±25 %)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
