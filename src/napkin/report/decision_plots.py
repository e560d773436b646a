"""Figures of §3.2.4 (matplotlib, imported only inside functions): the decision request and the
generating LLM on one time axis (the chapter's Figure 3-15) and CED expert-layer passes against
the prompt length (Figure 3-14)."""

from collections.abc import Sequence
from pathlib import Path

from napkin.inference.ced import LayerPasses
from napkin.inference.decision import DecisionComparison
from napkin.report.plots import _plt
from napkin.units import MS


def plot_decision_timeline(c: DecisionComparison, forward: str, path: Path) -> Path:
    """Top: one decision forward reading out Q answers at once. Bottom: the prefill, then the
    G − 1 decode steps one after another, each drawn at the mean TPOT. Milliseconds."""
    plt = _plt()
    g = c.generation
    fig, ax = plt.subplots(figsize=(10, 2.8))
    t_dec = c.decision_time.time_s / MS
    ax.broken_barh([(0, t_dec)], (1.1, 0.8), color="tab:green")
    ax.annotate(f"{forward}: {t_dec:,.1f} ms, {c.questions} answers", xy=(t_dec, 1.5),
                xytext=(4, 0), textcoords="offset points", va="center", fontsize="small")
    t_pre, step = g.ttft_s / MS, g.tpot_s / MS
    ax.broken_barh([(0, t_pre)], (0.1, 0.8), color="tab:blue", label="prefill")
    steps = [(t_pre + j * step, step) for j in range(g.decode_steps)]
    if steps:
        ax.broken_barh(steps, (0.1, 0.8), facecolors=("tab:orange", "navajowhite"),
                       label="decode steps")
    ax.annotate(f"{g.e2e_s / MS:,.1f} ms", xy=(g.e2e_s / MS, 0.5), xytext=(4, 0),
                textcoords="offset points", va="center", fontsize="small")
    ax.set_yticks([0.5, 1.5], [f"LLM: prefill + {g.gen_tokens} tokens",
                               f"decision, Q = {c.questions}"])
    ax.set_xlim(0, max(t_dec, g.e2e_s / MS) * 1.3)
    ax.set_xlabel("time (ms)")
    ax.set_title(f"one request of {c.prompt_tokens:,} tokens: latency {c.latency_ratio:.1f}×, "
                 f"GPU time with decode batched at {c.decode_batch}: {c.gpu_time_ratio:.2f}×")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_ced_passes(curve: Sequence[LayerPasses], marked: LayerPasses, path: Path) -> Path:
    """Expert-layer passes against the prompt length P: all layers ``(E + D)·P`` and CED
    ``E·P + D·min(P, replay)``, the user's P marked with both values."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    ps = [p.prompt_tokens for p in curve]
    ax.plot(ps, [p.full for p in curve], label="all layers (E + D)·P", color="tab:gray")
    ax.plot(ps, [p.ced for p in curve], label="CED E·P + D·min(P, replay)", color="tab:blue")
    for value, color in ((marked.full, "tab:gray"), (marked.ced, "tab:blue")):
        ax.plot([marked.prompt_tokens], [value], "o", color=color)
        ax.annotate(f"{value:,}", xy=(marked.prompt_tokens, value), xytext=(5, -12),
                    textcoords="offset points", fontsize="small")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("prompt tokens P")
    ax.set_ylabel("expert-layer passes (token × layer)")
    ax.set_title(f"P = {marked.prompt_tokens:,}: CED is {marked.ced_frac:.1%} of the full path")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
