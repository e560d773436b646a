"""The timeline of an agent task (Figures 3-11 and 3-12) with the state it holds, M(t)."""

from pathlib import Path

from napkin.agents.analysis import TaskAnalysis
from napkin.report.plots import _plt
from napkin.units import GiB

COLORS = {"model": "tab:blue", "tool": "tab:orange", "encode": "tab:green",
          "control": "tab:gray"}


def plot_trajectory(a: TaskAnalysis, path: Path) -> Path:
    """One bar per step as drawn and one after another; M(t) for both below."""
    plt = _plt()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True,
                                      gridspec_kw={"height_ratios": [2, 1]})
    rows = []
    for label, sched in (("as drawn", a.dag), ("serial", a.serial)):
        for sp in sched.spans:
            y = len(rows)
            rows.append(f"{sp.id} ({label})")
            top.barh(y, sp.duration_s, left=sp.start_s, color=COLORS.get(sp.kind, "k"),
                     edgecolor="white")
    top.set_yticks(range(len(rows)), rows, fontsize=8)
    top.invert_yaxis()
    top.set_title(f"{a.trajectory.task or 'agent task'}: critical path {a.dag.makespan_s:.3f} s, "
                  f"serial {a.serial.makespan_s:.3f} s", fontsize=10)
    for label, curve, style in (("as drawn", a.dag_state, "-"), ("serial", a.serial_state, "--")):
        if curve.bytes_:
            held = [b / GiB for b in curve.bytes_]
            bottom.step(curve.times_s, [*held, held[-1]], where="post",
                        linestyle=style,
                        label=f"{label}: {curve.gib_seconds:,.3g} GiB·s")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel("time, s")
    bottom.set_ylabel("state held, GiB")
    bottom.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
