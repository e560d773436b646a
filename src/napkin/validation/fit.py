"""Fitting a step-time model to measurements through the simulator, and cross-validating it.

For a fixed schedule (which requests share which steps), a request's TTFT and TPOT are linear in
the coefficients of :class:`napkin.calibration.basis.StepModel`: TTFT = request_s + Σ_k c_k·X_k
with X the basis terms summed over the steps between its arrival and its first token. So the
fit alternates: replay every measurement with the current coefficients (recording X), solve a
bounded linear least-squares problem for non-negative coefficients on *relative* residuals
(``(X·c − y)/y``, every row and metric weighted alike) with a soft-L1 loss against outlying
rows, and repeat with the new schedule until the coefficients settle (a fixed point; 3–4 rounds).

Cross-validation holds out one group (GPU, model, tensor-parallel size) at a time, refits on the
rest from the full fit's coefficients, and replays the held-out rows: those are the hold-out
residuals a profile's error bands are built from.
"""

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from napkin.accounting.forward import Precision
from napkin.calibration.basis import FLOOR, TERMS, FittedTimer, StepBasis, StepModel
from napkin.calibration.measurements import Measurement
from napkin.errors import require
from napkin.serving.engine import EngineSpec, StepTimer
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
H100 rows (14.7 µs, ``benchmarks/fit_profiles.py``): a fit with MoE rows moves it, and one
without them (vLLM's and SGLang's, dense models only) keeps it — the routed-expert block's
fixed time carried from one engine's kernels to the others', where 0 is known to be wrong (MoE
decode read 12–45 % fast on every engine of the external check)."""

Progress = Callable[[str], None]


def fitted_timer(model: StepModel) -> TimerFactory:
    """A timer factory for replays under ``model``."""
    def make(spec_model: ModelSpec, acc: Accelerator, precision: Precision,
             spec: EngineSpec) -> StepTimer:
        basis = StepBasis.of(spec_model, acc, precision.weights.compute, spec.tensor_parallel,
                             spec.allreduce_bytes_per_s)
        return FittedTimer(basis, model)
    return make


@dataclass(frozen=True)
class Observation:
    """One metric of one measurement, with its replayed features."""

    metric: str
    measured_s: float
    features: np.ndarray
    """Basis sums (``len(TERMS)``) then the request term (1 for TTFT, 0 for TPOT)."""
    offset_s: float = 0.0
    """Time in the measured value that no coefficient scales (a harness's own latency)."""


def observations(rows: Sequence[Measurement], model: StepModel) -> list[Observation]:
    """Replay every row under ``model`` and collect the TTFT and TPOT feature rows."""
    out = []
    for m in rows:
        r = replay(m, fitted_timer(model), record=True)
        assert r.ttft_features is not None and r.tpot_features is not None
        if m.mean_ttft_s:
            out.append(Observation("ttft", m.mean_ttft_s, np.append(r.ttft_features,
                                                                        r.ttft_request_weight),
                                   r.ttft_offset_s))
        if m.mean_tpot_s and m.output_tokens > 1:
            out.append(Observation("tpot", m.mean_tpot_s, np.append(r.tpot_features, 0.0)))
    return out


PHYSICAL_FLOOR = {"dense": 1.0, "dense_low": 1.0, "attention": 1.0, "weights": 1.0, "kv": 1.0,
                  "allreduce_bytes": 1.0}
"""Roofline terms cannot beat the datasheet: their coefficients (1/efficiency) are >= 1."""


def solve(obs: Sequence[Observation], start: StepModel, terms: Sequence[str] = TERMS,
          f_scale: float = 0.1) -> StepModel:
    """Coefficients minimizing the soft-L1 loss of relative residuals, each >= 0 and the
    roofline terms >= 1 (:data:`PHYSICAL_FLOOR`); terms not in ``terms`` stay 0, and a term no
    observation exercises (an all-zero column: all-reduces on TP 1 rows) keeps its ``start``
    value, except the ``eager_layer`` floor, which goes to 0 when it binds on no step (the data
    do not ask for one). ``dense_low`` is tied to ``dense`` (one coefficient for both columns)
    when ``terms`` leaves it out or no row has sub-16-bit matmuls to fit it on."""
    require(len(obs) > 0, "calibrate: no measurements with a TTFT or TPOT to fit")
    i_dense, i_low = TERMS.index("dense"), TERMS.index("dense_low")
    features = np.array([o.features for o in obs])
    tied = "dense" in terms and ("dense_low" not in terms or not features[:, i_low].any())
    if tied:  # one matmul efficiency for every format: the low-precision FLOPs count in dense
        features[:, i_dense] += features[:, i_low]
    use = [TERMS.index(t) for t in terms if not (t == "dense_low" and tied)]
    idle = [i for i in use if not features[:, i].any()]
    use = [i for i in use if i not in idle] + [len(TERMS)]
    measured = np.array([o.measured_s for o in obs])
    a = features[:, use] / measured[:, None]
    target = 1.0 - np.array([o.offset_s for o in obs]) / measured
    scale = np.maximum(np.abs(a).max(axis=0), 1e-30)  # columns of comparable size
    names = [TERMS[i] for i in use[:-1]] + ["request"]
    low = np.array([PHYSICAL_FLOOR.get(n, 0.0) for n in names]) * scale
    x0 = np.append(np.array(start.coefficients), start.request_s)[use] * scale
    res = least_squares(lambda x: (a / scale) @ x - target, np.maximum(x0, low * (1 + 1e-9)),
                        jac=lambda x: a / scale, bounds=(low, np.inf), loss="soft_l1",
                        f_scale=f_scale, method="trf")
    full = np.zeros(len(TERMS) + 1)
    full[idle] = np.array(start.coefficients)[idle]
    if FLOOR in idle:
        full[FLOOR] = 0.0
    full[use] = res.x / scale
    if tied:
        full[i_low] = full[i_dense]
    return StepModel(tuple(float(v) for v in full[:-1]), float(full[-1]))


def _restricted(model: StepModel, terms: Sequence[str]) -> StepModel:
    """``model`` with the terms not in ``terms`` at 0 (``dense_low`` at ``dense``)."""
    c = model.as_dict()
    kept = {t: (c["dense"] if t == "dense_low" else 0.0) if t not in terms else c[t]
            for t in TERMS}
    return StepModel.of(kept, model.request_s)


def fit(rows: Sequence[Measurement], start: StepModel = START, rounds: int = 4,
        terms: Sequence[str] = TERMS, progress: Progress | None = None) -> StepModel:
    """The fixed point of replay-then-solve, from ``start`` (its terms not in ``terms`` at 0
    from the first replay on, ``dense_low`` at ``dense`` when left out)."""
    model = _restricted(start, terms)
    for k in range(rounds):
        model = solve(observations(rows, model), model, terms)
        if progress:
            progress(f"round {k + 1}/{rounds}")
    return model


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


def _fold(args: tuple[list[Measurement], list[Measurement], StepModel, int, tuple[str, ...]]
          ) -> list[Prediction]:
    train, held, start, rounds, terms = args
    return predict(held, fit(train, start, rounds, terms))


def cross_validate(rows: Sequence[Measurement], full: StepModel, rounds: int = 2,
                   terms: Sequence[str] = TERMS, progress: Progress | None = None,
                   jobs: int = 1) -> list[Prediction]:
    """Leave-one-group-out predictions (groups: GPU, model, TP), refit from ``full``; folds
    run in ``jobs`` processes (0: one per core)."""
    groups = sorted({m.group for m in rows})
    if len(groups) < 2:
        return predict(rows, full)
    tasks = [([m for m in rows if m.group != g], [m for m in rows if m.group == g], full,
              rounds, tuple(terms)) for g in groups]
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
            progress(f"fold {n + 1}/{len(groups)}: {g[1]} on {g[0]}, tp {g[2]}")
    if jobs != 1:
        pool.shutdown()
    return out
