"""Fitting a step-time model to measurements through the simulator, and cross-validating it.

For a fixed schedule (which requests share which steps), a request's TTFT and TPOT are linear in
the coefficients of :class:`napkin.calibration.basis.StepModel`: TTFT = request_s + Σ_k c_k·X_k
with X the basis terms summed over the steps between its arrival and its first token. So the
fit alternates: replay every measurement with the current coefficients (recording X), solve a
bounded linear least-squares problem for non-negative coefficients on *relative* residuals
(``(X·c − y)/y``, every row and metric weighted alike) with a soft-L1 loss against outlying
rows, and repeat with the new schedule until the coefficients settle (a fixed point; 3–4 rounds).
A campaign whose harness latency is fitted (``latency_s=fit``) adds one more unknown, a
non-negative time its TTFTs carry; it only adds to TTFT, so it is linear too.

Cross-validation holds out one group (GPU, model, tensor-parallel size) at a time, refits on the
rest from the full fit's coefficients, and replays the held-out rows: those are the hold-out
residuals a profile's error bands are built from.
"""

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from napkin.accounting.forward import Precision
from napkin.calibration.basis import FittedTimer, StepBasis, StepModel
from napkin.calibration.measurements.records import Measurement, group_label
from napkin.calibration.protocol import Campaign, with_latencies
from napkin.calibration.terms import FLOOR, REQUEST_TOKEN, TERMS, TIED, UNFITTED
from napkin.errors import require
from napkin.serving.engine_spec import EngineSpec, StepTimer
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.validation.replay import TimerFactory, replay

START = StepModel.of({"step": 4e-3, "dense": 1 / 0.7, "attention": 1 / 0.7, "weights": 1 / 0.95,
                      "kv": 1 / 0.95, "allreduce": 10e-6, "allreduce_bytes": 1.0,
                      "moe_layer": 15e-6, "eager_layer": 0.5e-3})
"""Where fits start: the earlier hand calibration (MFU 0.7, MBU 0.95, 4 ms per step), and a
0.5 ms per layer floor on steps with a prefill chunk (a floor that starts at 0 never binds, so
the fit could not find it; one that the data do not ask for falls until it stops binding).
``moe_layer`` starts at 15 µs per MoE layer, what TensorRT-LLM's fit found on its Qwen3-235B-A22B
H100 rows (14.7 µs, ``benchmarks/fit_profiles.py``) while their expert parallelism was timed as
TP (in their layout, with the busiest expert rank, the 2026-12-04 refit puts it at 0): a fit
with MoE rows moves it, and one
without them (vLLM's and SGLang's, dense models only) keeps it — the routed-expert block's
fixed time carried from one engine's kernels to the others', where 0 is known to be wrong (MoE
decode read 12–45 % fast on every engine of the external check)."""

Progress = Callable[[str], None]


def fitted_timer(model: StepModel) -> TimerFactory:
    """A timer factory for replays under ``model`` on the replayed GPU's architecture
    (:meth:`StepModel.on`), without its ``eager_layer`` floor on an engine whose prefill steps
    are not eager (:attr:`EngineSpec.eager_prefill`)."""

    def make(spec_model: ModelSpec, acc: Accelerator, precision: Precision,
             spec: EngineSpec) -> StepTimer:
        basis = StepBasis.of(spec_model, acc, precision.weights.compute, spec.tensor_parallel,
                             spec.allreduce_bytes_per_s, precision.weights.weight_only,
                             precision)
        on = model.on(acc.architecture)
        return FittedTimer(basis, on if spec.eager_prefill else on.without_floor())
    return make


@dataclass(frozen=True)
class Observation:
    """One metric of one measurement, with its replayed features."""

    metric: str
    measured_s: float
    features: np.ndarray
    """Basis sums (``len(TERMS)``), then the request term (1 for TTFT, 0 for TPOT) and the
    request-token term (the prompt tokens that weigh ``request_token_s``)."""
    offset_s: float = 0.0
    """Time in the measured value that no coefficient scales (a harness's own latency)."""
    campaign: int = -1
    """For a TTFT, the index (among the fitted-latency campaigns) of the campaign whose
    harness latency it carries; -1: none."""


@dataclass(frozen=True)
class Fitted:
    """A fitted step-time model and the harness latencies (s) of the campaigns whose latency
    was fitted with it (:attr:`napkin.calibration.protocol.Campaign.fit_latency`, in order)."""

    model: StepModel
    latencies_s: tuple[float, ...] = ()

    def campaigns(self, campaigns: tuple[Campaign, ...]) -> tuple[Campaign, ...]:
        """``campaigns`` with the fitted latencies written into their protocols (to 1 µs)."""
        it = iter(self.latencies_s)
        return tuple(replace(c, protocol=replace(c.protocol, latency_s=round(next(it, 0.0), 6)))
                     if c.fit_latency else c for c in campaigns)


def observations(rows: Sequence[Measurement], model: StepModel,
                 campaigns: tuple[Campaign, ...] = ()) -> list[Observation]:
    """Replay every row under ``model`` and collect the TTFT and TPOT feature rows (a row of a
    fitted-latency campaign has its harness latency as a column, not in the offset), and for a
    ``burst`` row with an output throughput its span: the replayed requests' output tokens at
    the measured tokens/s against ``request_s`` plus the engine's summed basis (metric
    ``throughput``: the span's relative residual is the throughput's, inverted)."""
    fitted = [c.label for c in campaigns if c.fit_latency]
    out = []
    for m in rows:
        r = replay(m, fitted_timer(model), record=True)
        assert r.ttft_features is not None and r.tpot_features is not None
        g = fitted.index(m.harness.campaign) if m.harness.campaign in fitted else -1
        if m.mean_ttft_s:
            offset = r.ttft_offset_s - (m.harness.latency_s if g >= 0 else 0.0)
            out.append(Observation("ttft", m.mean_ttft_s, np.append(
                r.ttft_features, (r.ttft_request_weight, r.ttft_prompt_weight)), offset, g))
        if m.mean_tpot_s and m.output_tokens > 1:
            out.append(Observation("tpot", m.mean_tpot_s,
                                   np.append(r.tpot_features, (0.0, 0.0))))
        if m.output_tokens_per_s and r.span_features is not None and r.output_tokens:
            out.append(Observation("throughput", r.output_tokens / m.output_tokens_per_s,
                                   np.append(r.span_features, (1.0, r.span_prompt_tokens))))
    return out


PHYSICAL_FLOOR = {"dense": 1.0, "dense_low": 1.0, "dense_w4a16": 1.0, "attention": 1.0,
                  "weights": 1.0, "kv": 1.0, "allreduce_bytes": 1.0, "alltoall_bytes": 1.0,
                  "expert": 1.0, "expert_low": 1.0, "expert_w4a16": 1.0, "expert_weights": 1.0,
                  "expert_weights_w4a16": 1.0}
"""Roofline terms cannot beat the datasheet: their coefficients (1/efficiency) are >= 1."""


LATENCY_PULL = 0.01
"""A fitted campaign latency equal to its rows' median TTFT costs as much as a 1 % error on one
row: it only breaks the tie with ``request_s`` (which every row carries), so a campaign keeps
the latency its rows have beyond the others' and ``request_s`` the part they share."""


def solve(obs: Sequence[Observation], start: StepModel, terms: Sequence[str] = TERMS,
          f_scale: float = 0.1, latencies_s: Sequence[float] = (),
          held: Mapping[str, float] | None = None) -> Fitted:
    """Coefficients minimizing the soft-L1 loss of relative residuals, each >= 0 and the
    roofline terms >= 1 (:data:`PHYSICAL_FLOOR`); terms not in ``terms`` stay 0, and a term no
    observation exercises (an all-zero column: all-reduces on TP 1 rows) keeps its ``start``
    value, except the ``eager_layer`` floor, which goes to 0 when it binds on no step (the data
    do not ask for one). A term of :data:`~napkin.calibration.terms.TIED` (``dense_low``,
    ``dense_w4a16`` to ``dense``; the all-to-all pair to the all-reduce pair) shares its
    parent's coefficient (one for both columns) when ``terms`` leaves it out or no row has its
    work, and the parent is fitted; left out with its parent, it keeps its
    :data:`~napkin.calibration.terms.UNFITTED` value, a fixed time the fit subtracts.

    ``latencies_s`` are the starting harness latencies of the fitted-latency campaigns
    (:attr:`Observation.campaign`): each is a column of its campaign's TTFTs, in [0, 60] s,
    pulled towards 0 by :data:`LATENCY_PULL`; one without observations keeps its start.
    ``held``: terms fitted elsewhere (the routed experts', on kernel timings), left out of
    ``terms`` and kept at these values, a fixed time the fit subtracts; a held :data:`TIED`
    term is not tied. ``request_s`` is always fitted, ``request_token_s`` where ``terms``
    names :data:`~napkin.calibration.terms.REQUEST_TOKEN` (else it stays 0)."""
    require(len(obs) > 0, "calibrate: no measurements with a TTFT, a TPOT or (all requests at "
            "once) an output throughput to fit")
    n_lat = len(latencies_s)
    campaign = np.array([o.campaign for o in obs])
    latency = np.zeros((len(obs), n_lat))
    for g in range(n_lat):
        latency[campaign == g, g] = 1.0
    features = np.hstack([np.array([o.features for o in obs]), latency])
    tied: dict[int, int] = {}
    for t, of in reversed(TIED.items()):  # parents first: a chain ties to its fitted root
        i, parent = TERMS.index(t), TERMS.index(of)
        if t not in (held or {}) and (of in terms or parent in tied) \
                and (t not in terms or not features[:, i].any()):
            tied[i] = parent
    tied = dict(reversed(tied.items()))  # children first, as TIED lists them
    for i, parent in tied.items():  # one coefficient for both columns
        features[:, parent] += features[:, i]
    fixed = {TERMS.index(t): v for t, v in UNFITTED.items()
             if t not in terms and TIED[t] not in terms}
    fixed.update({TERMS.index(t): v for t, v in (held or {}).items() if t not in terms})
    fixed_s = sum((features[:, i] * v for i, v in fixed.items()), np.zeros(len(obs)))
    use = [TERMS.index(t) for t in terms if t in TERMS and TERMS.index(t) not in tied]
    idle = [i for i in use if not features[:, i].any()]
    req, tok = len(TERMS), len(TERMS) + 1  # the request and request-token columns
    lat = [tok + 1 + g for g in range(n_lat) if (campaign == g).any()]
    per_token = [tok] if REQUEST_TOKEN in terms and features[:, tok].any() else []
    use = [i for i in use if i not in idle] + [req] + per_token + lat
    measured = np.array([o.measured_s for o in obs])
    a = features[:, use] / measured[:, None]
    target = 1.0 - (np.array([o.offset_s for o in obs]) + fixed_s) / measured
    pull = np.zeros((len(lat), len(use)))
    for k, i in enumerate(lat):
        typical = float(np.median(measured[campaign == i - tok - 1]))
        pull[k, len(use) - len(lat) + k] = LATENCY_PULL / typical
    a, target = np.vstack([a, pull]), np.append(target, np.zeros(len(lat)))
    scale = np.maximum(np.abs(a).max(axis=0), 1e-30)  # columns of comparable size
    names = [TERMS[i] if i < req else "request" for i in use[:len(use) - len(lat)]] + [
        "latency"] * len(lat)
    low = np.array([PHYSICAL_FLOOR.get(n, 0.0) for n in names]) * scale
    high = np.array([60.0 if n == "latency" else np.inf for n in names]) * scale
    x0 = np.concatenate([start.coefficients, [start.request_s, start.request_token_s],
                         latencies_s])[use] * scale
    res = least_squares(lambda x: (a / scale) @ x - target,
                        np.clip(x0, low * (1 + 1e-9), high * (1 - 1e-9)),
                        jac=lambda x: a / scale, bounds=(low, high), loss="soft_l1",
                        f_scale=f_scale, method="trf")
    full = np.zeros(tok + 1 + n_lat)
    full[tok + 1:] = latencies_s  # a campaign without TTFTs keeps its start
    full[idle] = np.array(start.coefficients)[idle]
    if FLOOR in idle:
        full[FLOOR] = 0.0
    full[use] = res.x / scale
    for i, parent in reversed(tied.items()):  # parents first
        full[i] = full[parent]
    for i, v in fixed.items():
        full[i] = v
    return Fitted(StepModel(tuple(float(v) for v in full[:req]), float(full[req]),
                            float(full[tok])),
                  tuple(float(v) for v in full[tok + 1:]))


def _restricted(model: StepModel, terms: Sequence[str],
                held: Mapping[str, float] | None = None) -> StepModel:
    """``model`` with the terms not in ``terms`` at 0, a :data:`TIED` one at its parent's
    coefficient where that is in ``terms``, a ``held`` one at its value, else at its
    :data:`UNFITTED` value."""
    c = model.as_dict()
    kept: dict[str, float] = {}
    for t in TERMS:  # (a parent comes before its tied children in TERMS)
        if t in terms:
            kept[t] = c[t]
        elif held and t in held:
            kept[t] = held[t]
        elif t in TIED and (TIED[t] in terms or TIED[t] in TIED):
            kept[t] = kept[TIED[t]]
        else:
            kept[t] = UNFITTED.get(t, 0.0)
    return StepModel.of(kept, model.request_s,
                        model.request_token_s if REQUEST_TOKEN in terms else 0.0)


def fit(rows: Sequence[Measurement], start: StepModel = START, rounds: int = 4,
        terms: Sequence[str] = TERMS, progress: Progress | None = None,
        campaigns: tuple[Campaign, ...] = (), held: Mapping[str, float] | None = None
        ) -> Fitted:
    """The fixed point of replay-then-solve, from ``start`` (its terms not in ``terms`` at 0
    from the first replay on, :data:`TIED` ones as :func:`_restricted` leaves them); the latencies
    of the fitted-latency ``campaigns`` (rows as :func:`~napkin.calibration.protocol.assume` gave
    them) start from theirs. A harness latency only adds to TTFT, so it does not move the
    schedule the next round replays. ``held`` terms keep their values (:func:`solve`)."""
    result = Fitted(_restricted(start, terms, held),
                    tuple(c.protocol.latency_s for c in campaigns if c.fit_latency))
    for k in range(rounds):
        result = solve(observations(rows, result.model, campaigns), result.model, terms,
                       latencies_s=result.latencies_s, held=held)
        if progress:
            progress(f"round {k + 1}/{rounds}")
    return result


@dataclass(frozen=True)
class Prediction:
    """A measurement and what a model replayed for it."""

    row: Measurement
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float


def predict(rows: Sequence[Measurement], model: StepModel) -> list[Prediction]:
    out = []
    for m in rows:
        r = replay(m, fitted_timer(model))
        out.append(Prediction(m, r.mean_ttft_s, r.mean_tpot_s, r.output_tokens_per_s))
    return out


def _fold(args: tuple[list[Measurement], list[Measurement], StepModel, int, tuple[str, ...],
                      tuple[Campaign, ...]]) -> list[Prediction]:
    train, out, start, rounds, terms, campaigns = args
    c = start.as_dict()  # held: the terms not fitted, but a tied one only where set apart
    kept = {t: v for t, v in c.items() if t not in terms and not (t in TIED and v == c[TIED[t]])}
    f = fit(train, start, rounds, terms, campaigns=campaigns, held=kept)
    return predict(with_latencies(out, f.campaigns(campaigns)), f.model)


def cross_validate(rows: Sequence[Measurement], full: StepModel, rounds: int = 2,
                   terms: Sequence[str] = TERMS, progress: Progress | None = None,
                   jobs: int = 1, campaigns: tuple[Campaign, ...] = (),
                   by: str = "group") -> list[Prediction]:
    """Leave-one-group-out predictions (groups: :meth:`Measurement.group_by` ``by``; default
    GPU, model, TP; ``gpu``: leave-one-GPU-out, ``tp``: leave-one-TP-out …), refit from
    ``full`` (and the fitted-latency ``campaigns``' latencies, refitted too; a held-out group's
    campaign keeps its latency when no other group has rows of it); folds run in ``jobs``
    processes (0: one per core)."""
    groups = sorted({m.group_by(by) for m in rows}, key=str)
    if len(groups) < 2:
        return predict(rows, full)
    tasks = [([m for m in rows if m.group_by(by) != g], [m for m in rows if m.group_by(by) == g],
              full, rounds, tuple(terms), campaigns) for g in groups]
    jobs = jobs or os.cpu_count() or 1
    out: list[Prediction] = []
    if jobs == 1:
        results = map(_fold, tasks)
    else:
        pool = ProcessPoolExecutor(min(jobs, len(tasks)))
        results = pool.map(_fold, tasks)
    for n, (g, preds) in enumerate(zip(groups, results, strict=True)):
        out += preds
        if progress:
            progress(f"fold {n + 1}/{len(groups)}: {group_label(by, g)}")
    if jobs != 1:
        pool.shutdown()
    return out
