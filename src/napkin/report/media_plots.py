"""Figures for multimodal and real-time workloads (matplotlib, imported only inside functions):
visual tokens against image size with an image's patch and token grid (the chapter's
Figure 3-16), the jitter-buffer playback timeline (Figure 3-19)."""

from collections.abc import Sequence
from pathlib import Path

from napkin.media.playback import Timeline
from napkin.media.vision import ImageCost
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


GRID_MAX_TOKENS_PER_SIDE = 64
"""Draw an image's patch and token grid only up to this many tokens a side (beyond, the lines
merge into grey)."""


def plot_vision_tokens(sizes: Sequence[tuple[int, int]], images: Sequence[ImageCost],
                       curve: Sequence[tuple[int, int]], patch: int, merge: int, model: str,
                       path: Path) -> Path:
    """Left: visual tokens n_v against the image's pixels (H·W as given), log axes: the line is
    square images through the preprocessor, the dots the given images. Right: the first image
    after resizing cut into p×p patches (thin lines) merged r×r into tokens (thick lines), as in
    Figure 3-16."""
    plt = _plt()
    fig, (ax, ax_grid) = plt.subplots(1, 2, figsize=(11, 4.6),
                                      gridspec_kw={"width_ratios": [1.5, 1]})
    ax.plot([side * side / 1e6 for side, _ in curve], [n for _, n in curve], color="tab:blue",
            label="square images, resized like the preprocessor")
    for (h, w), c in zip(sizes, images, strict=True):
        ax.plot([h * w / 1e6], [c.tokens], "o", color="tab:red")
        ax.annotate(f"{h}×{w} → {c.tokens:,} tokens", xy=(h * w / 1e6, c.tokens),
                    xytext=(6, -12), textcoords="offset points", color="tab:red")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("image pixels H·W, megapixels")
    ax.set_ylabel("visual tokens n_v = H·W/(p²·r²)")
    ax.set_title(f"{model}: p = {patch}, r = {merge}; {patch * merge}×{patch * merge} px a token")
    ax.legend(loc="upper left", fontsize="small")
    first = images[0]
    rows, cols = first.height // (patch * merge), first.width // (patch * merge)
    ax_grid.set_xlim(0, first.width)
    ax_grid.set_ylim(first.height, 0)
    ax_grid.set_aspect("equal")
    if max(rows, cols) <= GRID_MAX_TOKENS_PER_SIDE:
        for x in range(0, first.width + 1, patch):
            ax_grid.axvline(x, color="0.8", linewidth=0.4 if x % (patch * merge) else 1.2)
        for y in range(0, first.height + 1, patch):
            ax_grid.axhline(y, color="0.8", linewidth=0.4 if y % (patch * merge) else 1.2)
        for x in range(0, first.width + 1, patch * merge):
            ax_grid.axvline(x, color="tab:blue", linewidth=0.9)
        for y in range(0, first.height + 1, patch * merge):
            ax_grid.axhline(y, color="tab:blue", linewidth=0.9)
    ax_grid.set_title(f"image 1 resized to {first.height}×{first.width} px:\n"
                      f"{first.patches:,} patches → {rows}×{cols} = {first.tokens:,} tokens")
    ax_grid.set_xlabel("width, px")
    ax_grid.set_ylabel("height, px")
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
