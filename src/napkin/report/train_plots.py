"""Figures for ``napkin train`` and ``napkin rl`` (matplotlib, imported only inside the
functions): one device's training memory stacked against its capacity, and one RL cycle's
FLOPs (and seconds) by role."""

from pathlib import Path

from napkin.reinforcement.cycle import RLCycle
from napkin.reinforcement.timing import RLTiming
from napkin.training.memory import Fit
from napkin.units import GB, TFLOP


def plot_train_memory(fit: Fit, title: str, path: str | Path,
                      datasheet_bytes: float | None = None) -> Path:
    """One bar per device's memory, stacked: weights, gradients, optimizer states (the
    parameter state), then activations, the loss's logits and the rest (re-run layer, FSDP
    buffers, caching allocator, reserve), in GB; a solid line at the memory the device reports
    and a dashed one at the datasheet's when it differs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = fit.state
    parts = [("weights", s.weights_bytes, "tab:blue"), ("gradients", s.grads_bytes, "tab:cyan"),
             ("optimizer states", s.optimizer_bytes, "tab:purple"),
             ("activations", fit.activations_bytes, "tab:orange"),
             ("loss logits", fit.logits_bytes, "tab:olive"),
             ("other (re-run layer, FSDP, allocator, reserve)",
              fit.working_bytes + fit.buffer_bytes + fit.allocator_bytes + fit.reserve_bytes,
              "tab:gray")]
    fig, ax = plt.subplots(figsize=(6.5, 5))
    bottom = 0.0
    for label, n_bytes, color in parts:
        ax.bar(["per device"], [n_bytes / GB], bottom=bottom, color=color, width=0.5,
               label=f"{label}: {n_bytes / GB:,.1f} GB")
        bottom += n_bytes / GB
    ax.axhline(s.bytes / GB, color="black", linewidth=0.8, linestyle=":",
               label=f"parameter state: {s.bytes / GB:,.1f} GB")
    ax.axhline(fit.capacity_bytes / GB, color="tab:red", linewidth=2,
               label=f"device memory: {fit.capacity_bytes / GB:,.1f} GB")
    if datasheet_bytes and datasheet_bytes != fit.capacity_bytes:
        ax.axhline(datasheet_bytes / GB, color="tab:red", linewidth=1.5, linestyle="--",
                   label=f"datasheet: {datasheet_bytes / GB:,.0f} GB")
    ax.set_ylabel("GB per device (1e9 B)")
    ax.set_xlim(-1, 1)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_rl_cycle(cycle: RLCycle, title: str, path: str | Path,
                  timing: RLTiming | None = None, compare: RLCycle | None = None) -> Path:
    """Left: one cycle's matrix TFLOP by role (rollout prefill and decode, reference, teacher
    and reward reads, the policy update), with ``compare`` beside it at its number of answers
    (the chapter's Fig. 3-26). Right, with ``timing``: its seconds by phase (rollout, reads,
    update, weight sync)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    roles = [("rollout\nprefill", cycle.prefill_flops), ("rollout\ndecode", cycle.decode_flops),
             ("reference", cycle.reference_flops), ("teacher", cycle.teacher_flops),
             ("reward\nmodel", cycle.reward_flops), ("policy\nupdate", cycle.update_flops)]
    panels = 2 if timing is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.5), squeeze=False)
    ax = axes[0][0]
    names = [r for r, _ in roles]
    if compare is None:
        bars = ax.bar(names, [f / TFLOP for _, f in roles], color="tab:blue")
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    else:
        other = [compare.prefill_flops, compare.decode_flops, compare.reference_flops,
                 compare.teacher_flops, compare.reward_flops, compare.update_flops]
        x = range(len(roles))
        for shift, label, values, color in (
                (-0.2, f"{cycle.generated} answers", [f for _, f in roles], "tab:blue"),
                (0.2, f"{compare.generated} answers", other, "tab:orange")):
            bars = ax.bar([i + shift for i in x], [f / TFLOP for f in values], 0.4,
                          label=label, color=color)
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.set_xticks(list(x), names)
        ax.legend(fontsize=8)
    ax.set_ylabel("matrix TFLOP per cycle")
    if compare is None:
        ax.set_title(f"{title}: {cycle.generated} answers, {cycle.kept} kept, "
                     f"{cycle.total_flops / TFLOP:,.0f} TFLOP", fontsize=10)
    else:
        ax.set_title(f"{title}, {cycle.kept} kept: {cycle.generated} answers "
                     f"{cycle.total_flops / TFLOP:,.0f} TFLOP, {compare.generated} answers "
                     f"{compare.total_flops / TFLOP:,.0f} TFLOP", fontsize=10)
    if timing is not None:
        phases = [("rollout", timing.rollout_s), ("reads", timing.read_s),
                  ("update", timing.update_s), ("sync", timing.sync_s)]
        ax_t = axes[0][1]
        bars = ax_t.bar([p for p, _ in phases], [s for _, s in phases], color="tab:orange")
        ax_t.bar_label(bars, fmt="%.2f", fontsize=8)
        ax_t.set_ylabel("seconds per cycle")
        ax_t.set_title(f"cycle {timing.cycle_s:,.2f} s on {timing.pools.gpus} × "
                       f"{timing.pools.gpu}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
