"""``napkin calibrate`` and ``napkin validate`` as library calls: fit a profile from
measurements with cross-validated error bands, and score predictions against measurements.

Errors are relative, ``predicted/measured − 1``; a report gives per group (GPU, model, TP) and
overall the median |error|, the bias (median signed error) and the shares within 10 % and 25 %.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from napkin.calibration.measurements.records import Measurement
from napkin.calibration.profile import BAND_COVERAGE, Band, Domain, Profile
from napkin.calibration.protocol import (
    PROTOCOLS,
    Campaign,
    Protocol,
    assume,
    campaigns_of,
    harness_dict,
    with_latencies,
)
from napkin.calibration.terms import TERMS
from napkin.catalog import load_model
from napkin.errors import require
from napkin.specs.releases import releases
from napkin.validation.fit import START, Prediction, Progress, cross_validate, fit, predict
from napkin.validation.replay import check_layout

METRICS = ("ttft", "tpot")
"""The latencies every report scores and every profile carries a band of."""
THROUGHPUT = "throughput"
"""Output tokens/s, scored where rows report it (:func:`report`)."""


def pairs(preds: Sequence[Prediction], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, measured) of ``metric`` over the rows that report it."""
    got, want = [], []
    for p in preds:
        if metric == THROUGHPUT:
            measured, value = p.row.output_tokens_per_s, p.output_tokens_per_s
        elif metric == "ttft":
            measured, value = p.row.mean_ttft_s, p.ttft_s
        else:
            measured, value = p.row.mean_tpot_s, p.tpot_s
        if measured and value > 0:
            got.append(value)
            want.append(measured)
    return np.array(got), np.array(want)


@dataclass(frozen=True)
class ErrorStats:
    """Relative errors of one metric over a set of rows."""

    rows: int
    median_abs_error: float
    bias: float
    within_10: float
    within_25: float

    @classmethod
    def of(cls, predicted: np.ndarray, measured: np.ndarray) -> "ErrorStats":
        if len(measured) == 0:
            return cls(0, float("nan"), float("nan"), float("nan"), float("nan"))
        e = predicted / measured - 1
        return cls(len(e), float(np.median(np.abs(e))), float(np.median(e)),
                   float(np.mean(np.abs(e) <= 0.10)), float(np.mean(np.abs(e) <= 0.25)))


@dataclass(frozen=True)
class ValidationReport:
    """Errors overall and per group, and the worst rows."""

    overall: dict[str, ErrorStats]
    groups: dict[tuple[str | int, ...], dict[str, ErrorStats]]
    worst: list[tuple[Prediction, str, float]]
    predictions: list[Prediction]
    by: str = "group"
    """How :attr:`groups` group the rows
    (:data:`~napkin.calibration.measurements.records.GROUPINGS`)."""


def report(preds: Sequence[Prediction], worst: int = 5, by: str = "group") -> ValidationReport:
    """Score ``preds`` (see the module docstring): TTFT and TPOT, and the output throughput
    when any row reports one; per group of :meth:`Measurement.group_by` ``by``."""
    metrics = METRICS + ((THROUGHPUT,) if any(p.row.output_tokens_per_s for p in preds)
                         else ())
    overall = {m: ErrorStats.of(*pairs(preds, m)) for m in metrics}
    groups = {}
    for g in sorted({p.row.group_by(by) for p in preds}, key=str):
        sub = [p for p in preds if p.row.group_by(by) == g]
        groups[g] = {m: ErrorStats.of(*pairs(sub, m)) for m in metrics}
    rows = []
    for p in preds:
        for m in metrics:
            got, want = pairs([p], m)
            if len(want):
                rows.append((p, m, float(got[0] / want[0] - 1)))
    rows.sort(key=lambda r: -abs(r[2]))
    return ValidationReport(overall, groups, rows[:worst], list(preds), by)


def bands(preds: Sequence[Prediction]) -> dict[str, Band]:
    """Measured/predicted ratio quantiles (an 80 % interval) of the hold-out predictions."""
    out = {}
    tail = (1 - BAND_COVERAGE) / 2
    for m in (*METRICS, THROUGHPUT):
        got, want = pairs(preds, m)
        if len(want):
            ratio = want / got
            out[m] = Band(float(np.quantile(ratio, tail)), float(np.quantile(ratio, 1 - tail)),
                          float(np.median(np.abs(got / want - 1))), len(want))
    return out


def domain(rows: Sequence[Measurement]) -> Domain:
    """The span of the fitted rows."""
    def span(values: list[int]) -> tuple[int, int]:
        return (min(values), max(values))
    conc = [m.harness.concurrency or 1 for m in rows]
    models = sorted({m.model for m in rows})
    return Domain(tuple(sorted({m.gpu for m in rows})), tuple(models),
                  span([m.tensor_parallel for m in rows]), span(conc),
                  span([m.input_tokens for m in rows]), span([m.output_tokens for m in rows]),
                  tuple(sorted({m.weights for m in rows})),
                  **Domain.architectures([load_model(name) for name in models]),
                  layouts=tuple(sorted({check_layout(m, load_model(m.model)).kind
                                        for m in rows})),
                  versions=releases(m.backend_version for m in rows),
                  attention_dp=span([m.attention_data_parallel for m in rows]))


def sources_of(rows: Sequence[Measurement], notes: dict[str, dict] | None = None) -> list[dict]:
    """One entry per source file: rows, engine versions, models (plus given notes)."""
    by_file: dict[str, list[Measurement]] = {}
    for m in rows:
        by_file.setdefault(m.source.split(":")[0], []).append(m)
    out = []
    for name, ms in by_file.items():
        entry = {"file": name, "rows": len(ms),
                 "engine_versions": sorted({m.backend_version or "unknown" for m in ms}),
                 "models": sorted({m.model for m in ms}), "gpus": sorted({m.gpu for m in ms})}
        entry.update((notes or {}).get(name, {}))
        out.append(entry)
    return out


@dataclass(frozen=True)
class Calibration:
    """A fitted profile and its cross-validated predictions."""

    profile: Profile
    holdout: ValidationReport


def calibrate(rows: Sequence[Measurement], backend: str, name: str | None = None,
              rounds: int = 4, cv_rounds: int = 2, source_notes: dict[str, dict] | None = None,
              protocol: Protocol = PROTOCOLS["steady"], progress: Progress | None = None,
              jobs: int = 1, terms: Sequence[str] = TERMS,
              campaigns: tuple[Campaign, ...] = (),
              held: Mapping[str, float] | None = None) -> Calibration:
    """Fit a profile for ``backend`` on ``rows`` (only that backend's rows are used) and
    cross-validate it by group; ``protocol`` is how the closed loops that do not describe their
    harness ran (see :func:`napkin.calibration.protocol.assume`), recorded in the profile so
    validation replays the same way (``campaigns``: rows that ran under protocols of their
    own); ``terms`` are the basis terms the fit may use (the rest stay 0, or at their
    ``held`` values: terms fitted elsewhere), also recorded."""
    mine = assume([m for m in rows if m.backend == backend], protocol, campaigns)
    require(len(mine) > 0, f"backend: no measurements of {backend!r} in the input "
            f"(found: {', '.join(sorted({m.backend for m in rows})) or 'none'})")
    for c in campaigns:
        require(any(c.matches(m) for m in mine),
                f"campaign: {c.label} matches no {backend} row (models: "
                f"{', '.join(sorted({m.model for m in mine}))})")
    for m in {m.model for m in mine}:
        load_model(m)  # unknown models fail here, in one line
    fitted = fit(mine, START, rounds, terms, progress=progress, campaigns=campaigns,
                 held=held)
    model, campaigns = fitted.model, fitted.campaigns(campaigns)
    out = cross_validate(with_latencies(mine, campaigns), model, cv_rounds, terms,
                         progress=progress, jobs=jobs, campaigns=campaigns)
    harness = harness_dict(protocol, campaigns)
    profile = Profile(name or backend, backend, model, domain(mine), bands(out),
                      tuple(sources_of(mine, source_notes)), harness,
                      notes=f"fitted by napkin calibrate on {len(mine)} rows; bands from "
                            "leave-one-group-out (GPU, model, TP) predictions",
                      terms=tuple(terms))
    return Calibration(profile, report(out))


def validate(rows: Sequence[Measurement], profile: Profile, by: str = "group"
             ) -> ValidationReport:
    """Replay ``rows`` under ``profile`` (and its harness) and score them (no refitting),
    grouped ``by`` (:data:`~napkin.calibration.measurements.records.GROUPINGS`)."""
    return report(predict(assumed(rows, profile), profile.model), by=by)


def assumed(rows: Sequence[Measurement], profile: Profile) -> list[Measurement]:
    """``rows`` under the profile's harness (its default protocol and campaigns)."""
    h = profile.harness
    return assume(list(rows), Protocol.of(h), campaigns_of(h))


def holdout(rows: Sequence[Measurement], profile: Profile, cv_rounds: int = 2,
            progress: Progress | None = None, jobs: int = 1, by: str = "group"
            ) -> ValidationReport:
    """Leave-one-group-out errors: each group (``by``: GPU, model and TP together by default;
    ``gpu``, ``tp``, ``model``, ``engine`` or ``version`` alone) predicted by a refit (from
    ``profile``'s coefficients) on the other groups."""
    rows = assumed(rows, profile)
    return report(cross_validate(rows, profile.model, cv_rounds, profile.terms,
                                 progress=progress, jobs=jobs,
                                 campaigns=campaigns_of(profile.harness), by=by), by=by)
