"""Documents for ``napkin serve metrics`` (latency from a log) and ``napkin serve little``
(state held by waiting tasks)."""

from typing import Any

from napkin.report.document import Document, Section
from napkin.serving.request_log import MetricStats, RequestTimes
from napkin.units import GiB, fmt_seconds

_LABELS = {"ttft": "TTFT (t₁ − tₐ)", "tpot": "TPOT ((t_G − t₁)/(G − 1))",
           "e2e": "end-to-end (t_G − tₐ)"}


def _p(p: float) -> str:
    return f"p{p:g}"


def log_metrics_doc(name: str, times: RequestTimes,
                    metrics: tuple[MetricStats, ...]) -> Document:
    ps = [p for p, _ in metrics[0].percentiles_s]
    cols = ["metric", "requests", "mean", *(_p(p) for p in ps)]
    rows = [[_LABELS[m.name], f"{m.count:,}", fmt_seconds(m.mean_s, 3),
             *(fmt_seconds(v, 3) for _, v in m.percentiles_s)] for m in metrics]
    notes = ["percentiles are nearest-rank: the ⌈p/100·n⌉-th smallest of n",
             "TPOT over requests with more than one output token"]
    if times.source == "vllm-bench":
        notes.append("vllm bench result: times relative to each request's send; t_G = TTFT + "
                     f"Σ ITL; {times.skipped:,} failed requests skipped")
    data: dict[str, Any] = {"requests": len(times.arrival_s),
                            "skipped_requests": times.skipped,
                            "output_tokens": int(times.output_tokens.sum())}
    for m in metrics:
        data[m.name] = {"requests": m.count, "mean_s": m.mean_s,
                        **{f"{_p(p)}_s": v for p, v in m.percentiles_s}}
    return Document(f"{name}: latency from the log",
                    {"log": name, "format": times.source, "percentiles": ps}, {},
                    [Section("latency", cols, rows, notes)], data)


def little_doc(inputs: dict[str, Any], state_bytes: float, tasks: float,
               held_bytes: float, area_byte_s: float) -> Document:
    rows = [["state per waiting task M₀", f"{state_bytes / GiB:,.4g} GiB"],
            ["tasks waiting on average λ·τ", f"{tasks:,.4g}"],
            ["state held on average λ·M₀·τ", f"{held_bytes / GiB:,.4g} GiB"],
            ["one task's held area M₀·τ", f"{area_byte_s / GiB:,.4g} GiB·s"]]
    notes = ["Little's law in a steady state: tasks arriving at λ per second, each waiting τ s "
             "holding M₀ bytes; GiB = 2^30 bytes"]
    data = {"state_bytes": state_bytes, "waiting_tasks": tasks, "held_bytes": held_bytes,
            "task_byte_seconds": area_byte_s}
    return Document("state held by waiting tasks (Little's law)", inputs, {},
                    [Section("result", ["quantity", "value"], rows, notes)], data)
