"""Documents of ``napkin calibrate`` and ``napkin validate``."""

from typing import Any

from napkin.calibration.measurements.records import Harness, Measurement, group_label
from napkin.calibration.profile import Profile
from napkin.calibration.protocol import campaigns_of
from napkin.calibration.terms import TIED, UNFITTED
from napkin.report.document import Document, Section
from napkin.timing.frontend import FRONTEND_FIELDS
from napkin.validation.calibrate import ErrorStats, ValidationReport


def _pct(x: float) -> str:
    return "—" if x != x else f"{x:.1%}"


def _stats_cells(s: ErrorStats) -> list[str]:
    return [str(s.rows), _pct(s.median_abs_error), f"{s.bias:+.1%}" if s.bias == s.bias else "—",
            _pct(s.within_10), _pct(s.within_25)]


def _stats_json(s: ErrorStats) -> dict[str, float]:
    return {"rows": s.rows, "median_abs_error": s.median_abs_error, "bias": s.bias,
            "within_10": s.within_10, "within_25": s.within_25}


def _load(h: Harness) -> str:
    """A harness's load as the worst-rows table prints it: ``c 8``, ``2.5 req/s``, ``burst``."""
    if h.kind == "closed_loop":
        return f"c {h.concurrency}"
    if h.kind == "poisson":
        return f"{h.rate_per_s:g} req/s"
    return "burst"


def _layout(m: Measurement) -> str:
    """A row's parallel layout as the worst-rows table prints it: ``tp 4``, ``tp 4 ep 4``,
    ``dp 4 ep 4`` (attention data parallelism: one attention rank a GPU)."""
    ep = f" ep {m.expert_parallel_size}" if m.expert_parallel_size > 1 else ""
    if m.attention_data_parallel > 1:
        return f"dp {m.attention_data_parallel}{ep}"
    return f"tp {m.tensor_parallel}{ep}"


def _group_labels(rep: ValidationReport) -> dict[tuple, str]:
    """Each group in words; a (GPU, model, TP) group of attention-data-parallel rows says so
    (their TP is the attention's, 1 a rank), with the layouts it holds."""
    labels = {g: group_label(rep.by, g) for g in rep.groups}
    if rep.by != "group":
        return labels
    for g in labels:
        dp = sorted({_layout(p.row) for p in rep.predictions
                     if p.row.group == g and p.row.attention_data_parallel > 1})
        if dp:
            labels[g] += f" ({', '.join(dp)})"
    return labels


def report_sections(title: str, rep: ValidationReport) -> list[Section]:
    """The overall and per-group error tables and the worst rows."""
    cols = ["group", "metric", "rows", "median |error|", "bias", "within 10 %", "within 25 %"]
    scored = [m for m in rep.overall if rep.overall[m].rows] or list(rep.overall)
    rows = [["all", m.upper(), *_stats_cells(rep.overall[m])] for m in scored]
    labels = _group_labels(rep)
    for g, stats in rep.groups.items():
        shown = [m for m in scored if stats[m].rows]
        for m in shown:
            rows.append([labels[g] if m == shown[0] else "", m.upper(),
                         *_stats_cells(stats[m])])
    worst = [[p.row.source, m.upper(), f"{e:+.1%}",
              f"{p.row.input_tokens}/{p.row.output_tokens}, {_load(p.row.harness)}, "
              f"{_layout(p.row)}"] for p, m, e in rep.worst]
    return [Section(title, cols, rows, ["error = predicted/measured − 1 of the mean over "
                                        "counted requests"]),
            Section("worst rows", ["row", "metric", "error", "isl/osl, concurrency, layout"],
                    worst)]


def report_json(rep: ValidationReport) -> dict[str, Any]:
    return {
        "overall": {m: _stats_json(rep.overall[m]) for m in rep.overall},
        "by": rep.by,
        "groups": [{**({"gpu": g[0], "model": g[1], "tensor_parallel": g[2]}
                       if rep.by == "group" else {"group": group_label(rep.by, g)}),
                    **{m: _stats_json(s[m]) for m in s}} for g, s in rep.groups.items()],
        "rows": [{"source": p.row.source, "backend": p.row.backend, "model": p.row.model,
                  "gpu": p.row.gpu, "tensor_parallel": p.row.tensor_parallel,
                  "input_tokens": p.row.input_tokens, "output_tokens": p.row.output_tokens,
                  "concurrency": p.row.harness.concurrency,
                  "measured_ttft_s": p.row.mean_ttft_s, "predicted_ttft_s": p.ttft_s,
                  "measured_tpot_s": p.row.mean_tpot_s, "predicted_tpot_s": p.tpot_s,
                  **({"measured_output_tokens_per_s": p.row.output_tokens_per_s,
                      "predicted_output_tokens_per_s": p.output_tokens_per_s}
                     if p.row.output_tokens_per_s else {})}
                 for p in rep.predictions],
    }


def profile_section(p: Profile) -> Section:
    def shown(k: str, v: float) -> str:
        if k in p.terms:
            return f"{v:.4g}"
        if k in TIED and TIED[k] in p.terms:
            return f"{v:.4g} (= {TIED[k]})"
        if k in UNFITTED and v == UNFITTED[k]:
            return f"{v:.4g} (the link's, not fitted)"
        return f"{v:.4g} (held, not fitted here)" if v else "0 (not fitted)"
    rows = [[k, shown(k, v)] for k, v in p.model.as_dict().items()]
    rows.append(["request_s", f"{p.model.request_s:.4g}"])
    if p.domain.versions:
        rows.append(["engine releases", ", ".join(p.domain.versions)])
    rows.append(["request_token_s", f"{p.model.request_token_s:.4g}"
                 if "request_token" in p.terms else "0 (not fitted)"])
    f = p.model.frontend
    rows += [[f"frontend {k}", f"{getattr(f, k):.4g}"] for k in FRONTEND_FIELDS] \
        if f is not None else [["frontend", "none (no queue)"]]
    rows += [[f"on {arch} GPUs", ", ".join(f"{t} × {v:.4g}" for t, v in scales)]
             for arch, scales in p.model.architecture_scales]
    return Section(f"profile {p.name} ({p.backend})", ["term", "coefficient"], rows,
                   ["dense/dense_low/dense_w4a16/attention/weights/kv/elementwise/"
                    "allreduce_bytes/alltoall_bytes: multiples of the ideal (datasheet) time, "
                    "1/efficiency; step, layer, token, allreduce, alltoall, alltoall_step, "
                    "request: seconds per event; request_token: seconds per prompt token "
                    "outside the engine; "
                    "frontend: seconds of work of the frontend queue (docs/serving.md); "
                    "eager_layer: seconds per layer, the least time of a step with a prefill "
                    "chunk; on … GPUs: factors on those coefficients for a step on a GPU of "
                    "that architecture (docs/calibration.md)"])


def calibrate_doc(p: Profile, holdout: ValidationReport, out: str) -> Document:
    described = "; ".join([p.harness.get("closed_loop", "")] + [
        c.describe() for c in campaigns_of(p.harness)])
    return Document("Calibration", {"backend": p.backend, "profile": out},
                    {"rows": sum(s.get("rows", 0) for s in p.sources),
                     "harness (closed loops the files do not describe)": described},
                    [profile_section(p), *report_sections("hold-out errors (leave one group "
                                                          "out)", holdout)],
                    {"profile": p.to_dict(), "holdout": report_json(holdout)})


def validate_doc(results: list[tuple[str, str, ValidationReport]]) -> Document:
    sections, data = [], []
    for label, how, rep in results:
        sections += report_sections(f"{label} ({how})", rep)
        data.append({"set": label, "method": how, **report_json(rep)})
    return Document("Validation", {"sets": ", ".join(r[0] for r in results)}, {}, sections,
                    {"results": data})
