"""Figures (matplotlib, imported only here): demand per window, backlog and KV occupancy over
time, latency CDFs, the fluid queue's backlog curve (the chapter's Figures 3-4, 3-5, 3-7 and 3-8
are the models)."""

from pathlib import Path

import numpy as np

from napkin.planning.search import PlanResult
from napkin.serving.demand import WindowDemand
from napkin.serving.fluid import FluidResult
from napkin.serving.simulate import SimRun
from napkin.serving.sweep import SweepResult


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_fluid(result: FluidResult, title: str, path: Path) -> Path:
    """Backlog of decode steps over time, through the drain (Figure 3-7)."""
    plt = _plt()
    t, q = result.curve()
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(t, q, color="tab:red")
    ax.fill_between(t, q, alpha=0.2, color="tab:red")
    ax.set_xlabel("time, s")
    ax.set_ylabel("backlog, decode steps")
    ax.set_title(title)
    ax.annotate(result.describe_drain().replace("; ", "\n", 1),
                xy=(0.02, 0.9), xycoords="axes fraction")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


BAR_WINDOWS = 48
"""Most windows :func:`plot_demand` draws as bars; more are drawn as curves over time."""


def plot_demand(name: str, windows: tuple[WindowDemand, ...], overall: WindowDemand,
                counts: tuple[dict[str, int], ...], path: Path) -> Path:
    """Requests per window by class, and the window's new input tokens/s and decode steps/s
    (the chapter's Figures 3-4 and 3-5), each window and then all of them together
    (``counts``: one mapping per window, then the total's); past :data:`BAR_WINDOWS` windows,
    curves over time without the total."""
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    classes = list(counts[0]) if counts else []
    rates = (("new input tokens/s (prefill)", [w.input_tokens_per_s for w in windows]),
             ("decode steps/s (G − 1 per request)", [w.decode_steps_per_s for w in windows]))
    if len(windows) > BAR_WINDOWS:
        t = [w.start_s for w in windows]
        left.stackplot(t, [[c[k] for c in counts[:-1]] for k in classes], labels=classes,
                       step="post")
        for label, values in rates:
            right.step(t, values, where="post", label=label)
        for ax in (left, right):
            ax.set_xlabel("window start, s")
    else:
        labels = [f"{w.start_s:g}–{w.start_s + w.duration_s:g} s" for w in windows]
        labels.append(f"all ({overall.duration_s:g} s)")
        rates = ((rates[0][0], [*rates[0][1], overall.input_tokens_per_s]),
                 (rates[1][0], [*rates[1][1], overall.decode_steps_per_s]))
        x = np.arange(len(labels))
        bottom = np.zeros(len(labels))
        for k in classes:
            heights = np.array([c[k] for c in counts], dtype=float)
            left.bar(x, heights, 0.6, bottom=bottom, label=k)
            bottom += heights
        width = 0.38
        for (label, values), shift in zip(rates, (-width / 2, width / 2), strict=True):
            right.bar(x + shift, values, width, label=label)
        for ax in (left, right):
            ax.set_xticks(x, labels)
            ax.set_xlabel("window")
    left.set_title("requests per window, by class")
    left.set_ylabel("requests")
    right.set_title("demand per window")
    right.set_ylabel("per second")
    for ax in (left, right):
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{name}: demand")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_runs(runs: list[tuple[str, SimRun]], path: Path) -> Path:
    """Waiting requests and KV occupancy over time; CDFs of TTFT and end-to-end (Figure 3-8)."""
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for name, run in runs:
        e = run.engines[0]
        t = np.asarray(e.series_t)
        axes[0, 0].step(t, e.series_waiting, where="post", label=name)
        axes[0, 1].step(t, np.asarray(e.series_blocks) / e.spec.num_blocks, where="post",
                        label=name)
        r = run.records
        for ax, values in ((axes[1, 0], r.first_token_s - r.arrival_s),
                           (axes[1, 1], r.finish_s - r.arrival_s)):
            v = np.sort(values)
            ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=name)
    labels = (("waiting requests", "time, s", "requests"),
              ("KV pool in use (engine 0)", "time, s", "share of blocks"),
              ("TTFT, CDF", "seconds", "share of requests"),
              ("end-to-end, CDF", "seconds", "share of requests"))
    for ax, (title, xl, yl) in zip(axes.flat, labels, strict=True):
        ax.set_title(title)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_sweep(result: SweepResult, path: Path) -> Path:
    """Latency percentiles (worst seed) vs offered load with the SLO bounds, SLO attainment and
    P(SLO met), and the maximum sustainable load marked with its 80 % band; loads whose runs
    stopped early (partial figures) are left out of the curves."""
    plt = _plt()
    points = [p for p in result.points if not p.stopped] or list(result.points)
    loads = [p.load for p in points]
    fig, (a_ttft, a_tpot, a_met) = plt.subplots(1, 3, figsize=(15, 4.2))
    slo = points[0].summaries[0].slo
    for ax, attr, bound, label in ((a_ttft, "ttft", slo.ttft_s, "TTFT, s"),
                                   (a_tpot, "tpot", slo.tpot_s, "TPOT, s")):
        for stat, style in (("p50_s", ":"), ("p90_s", "--"), ("p95_s", "-"), ("p99_s", "-.")):
            ax.plot(loads, [max(getattr(getattr(s, attr), stat) for s in p.summaries)
                            for p in points], style, marker="o", ms=3,
                    label=stat.removesuffix("_s"))
        ax.axhline(bound, color="tab:red", lw=1, label="SLO")
        ax.set_yscale("log")
        ax.set_ylabel(label)
    a_met.plot(loads, [p.worst_slo_met_frac for p in points], marker="o",
               label="SLO met (worst seed)")
    sure = [(p.load, p.p_slo_met) for p in points if p.p_slo_met is not None]
    if sure:
        a_met.plot(*zip(*sure, strict=True), marker="s", ms=4, ls="--", label="P(SLO met)")
    a_met.axhline(result.share, color="tab:red", lw=1, label=f"required {result.share:.0%}")
    a_met.set_ylabel("share of requests / probability")
    a_met.set_ylim(0, 1.05)
    for ax in (a_ttft, a_tpot, a_met):
        if result.max_sustainable is not None:
            ax.axvline(result.max_sustainable, color="tab:green", lw=1,
                       label=f"max sustainable {result.max_sustainable:,.3g}")
        if result.band is not None:
            ax.axvspan(*result.band, color="tab:green", alpha=0.12, label="80 % band")
        ax.set_xlabel(f"offered load, {result.unit}")
        ax.legend(fontsize=7)
    fig.suptitle(f"{result.scenario}: load sweep")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_pareto(result: PlanResult, path: Path) -> Path:
    """Output tokens/s per GPU vs tokens/s per user of every simulated configuration; the
    feasible ones coloured by GPU type with each type's Pareto frontier dashed, the overall
    frontier drawn, the cheapest marked."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    sim = [e for e in result.evaluations
           if e.tokens_per_s_per_user is not None and e.tokens_per_s_per_gpu is not None]
    fronts = result.pareto_by_gpu()
    for gpu in sorted({e.candidate.gpu for e in sim}):
        ok = [e for e in sim if e.candidate.gpu == gpu and e.status == "feasible"]
        dots = ax.scatter([e.tokens_per_s_per_user for e in ok],
                          [e.tokens_per_s_per_gpu for e in ok], label=f"{gpu} (feasible)", s=18)
        if front := fronts.get(gpu):
            ax.plot([e.tokens_per_s_per_user for e in front],
                    [e.tokens_per_s_per_gpu for e in front], lw=0.8, ls="--",
                    color=dots.get_facecolor()[0] if len(ok) else None)
    bad = [e for e in sim if e.status != "feasible"]
    ax.scatter([e.tokens_per_s_per_user for e in bad], [e.tokens_per_s_per_gpu for e in bad],
               marker="x", color="grey", s=14, label="misses the SLO, or knife-edge")
    front = result.pareto
    if front:
        ax.plot([e.tokens_per_s_per_user for e in front],
                [e.tokens_per_s_per_gpu for e in front], color="black", lw=1, label="Pareto")
    if result.cheapest is not None:
        c = result.cheapest
        ax.scatter([c.tokens_per_s_per_user], [c.tokens_per_s_per_gpu], s=120,
                   facecolors="none", edgecolors="red", label="cheapest")
    ax.set_xlabel("tokens/s per user (1 / median TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(f"{result.plan.name}: configurations")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
