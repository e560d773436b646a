"""Figures for multimodal and real-time workloads (matplotlib, imported only inside functions):
the jitter-buffer playback timeline (the chapter's Figure 3-19)."""

from pathlib import Path

from napkin.media.playback import Timeline
from napkin.report.plots import _plt


def plot_playback(timeline: Timeline, path: Path, title: str | None = None) -> Path:
    """One row per block, time in ms: a dot at arrival, a tick at the scheduled play time and a
    bar for actual playback (red when playback waited for the block, with the stall shaded).
    The format follows ``path``'s suffix (png, svg)."""
    plt = _plt()
    ms = 1e3
    blocks = timeline.blocks
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.45 * len(blocks)))
    for b in blocks:
        color = "tab:red" if b.late_s > 0 else "tab:blue"
        ax.barh(b.index, (b.play_end_s - b.play_start_s) * ms, left=b.play_start_s * ms,
                height=0.5, color=color, alpha=0.75)
        if b.late_s > 0:
            ax.axvspan((b.play_start_s - b.late_s) * ms, b.play_start_s * ms, color="tab:red",
                       alpha=0.12)
            ax.annotate(f"stall {b.late_s * ms:.0f} ms", xy=(b.play_start_s * ms, b.index),
                        xytext=(6, -14), textcoords="offset points", color="tab:red")
    ax.plot([b.arrival_s * ms for b in blocks], [b.index for b in blocks], "o", color="black",
            label="arrival")
    ax.plot([b.scheduled_s * ms for b in blocks], [b.index for b in blocks], "|", color="black",
            markersize=16, markeredgewidth=2, label="scheduled play")
    ax.axvline(timeline.first_play_s * ms, color="gray", linestyle="--", linewidth=1)
    ax.annotate(f"first play {timeline.first_play_s * ms:.0f} ms",
                xy=(timeline.first_play_s * ms, 1.0), xycoords=("data", "axes fraction"),
                xytext=(4, -12), textcoords="offset points", color="gray")
    ax.set_yticks([b.index for b in blocks], [f"block {b.index + 1}" for b in blocks])
    ax.invert_yaxis()
    ax.set_xlabel("time, ms")
    ax.set_xlim(left=0)
    ax.legend(loc="upper right")
    p = timeline.params
    ax.set_title(title or f"Playback: {p.block_s * ms:g} ms blocks, {p.buffer_s * ms:g} ms buffer; "
                 f"{timeline.gaps} gap(s), {timeline.total_stall_s * ms:.0f} ms stalled")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
