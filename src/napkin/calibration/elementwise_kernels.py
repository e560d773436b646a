"""The elementwise kernels' efficiency, fitted on per-operator timings across tensor parallelism.

Between the matmuls every decoder layer runs elementwise kernels whose bytes the FLOP count
and the roofline leave out (:mod:`napkin.accounting.elementwise`): norms and residual adds on
the whole hidden vector, which every tensor-parallel rank runs in full, and the MLP's activation
and rotary embedding, which each rank runs on its ``1/tp`` of the heads and of the intermediate.
The step-time basis times them with ``norms`` and ``elementwise`` (× the ideal memory time of
those bytes, :mod:`napkin.calibration.terms`). Serving rows barely tell them from the per-token
and per-layer terms, so they are fitted here, on Vidur's per-operator profiles of Llama models
(microsoft/vidur ``data/profiling/compute/<gpu>/<model>/mlp.csv``, MIT: CUDA-timed medians of
Sarathi-Serve's kernels, a vLLM fork, per layer at 1–4,096 tokens — 32,768 for Llama-3 — on one
rank of TP 1, 2, 4, 8; ``catalog/measurements/vidur_elementwise.csv``). Per layer and row:

    input_layernorm + post_attention_layernorm + add  =  c_norms · T·r/B        + f_norms
    attn_rope + mlp_act                               =  c_elementwise · T·s/B  + f_elementwise

with ``r`` and ``s`` the replicated and sharded bytes a token and layer of the rank
(:func:`~napkin.accounting.elementwise.elementwise_bytes_per_token` over the layers) and ``B``
the GPU's memory bandwidth; ``f`` is the kernels' launch floor per layer, which the serving
fit's ``layer`` term carries and a profile does not take from here. Each pair is fitted by
non-negative least squares on relative residuals and held out by model and by GPU.

In these profiles the norms stay flat from TP 1 to TP 8 and rotary and the activation fall
about as ``1/tp`` (Llama-2-7B on H100 at 4,096 tokens: the two norms 0.067 ms each at every TP,
the activation 0.139 → 0.026 ms): the split :mod:`napkin.accounting.elementwise` counts.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from napkin.accounting.elementwise import elementwise_bytes_per_token
from napkin.calibration.measurements.fields import csv_table, positive_float, positive_int
from napkin.catalog import load_accelerator, load_model, measurement_file
from napkin.errors import require

PROFILES = "vidur_elementwise.csv"
REPLICATED = ("input_layernorm_ms", "post_attention_layernorm_ms", "add_ms")
SHARDED = ("attn_rope_ms", "mlp_act_ms")
COLUMNS = ("gpu", "model", "tensor_parallel", "tokens", *REPLICATED, *SHARDED)
MIN_TOKENS = 128
"""Rows with fewer tokens are launch floors (3–5 µs a kernel whatever the bytes): left out."""


@dataclass(frozen=True)
class KernelTiming:
    """One layer's elementwise kernels at ``tokens`` tokens on one rank of ``tp``."""

    gpu: str
    model: str
    tp: int
    tokens: int
    replicated_s: float
    """The norms' and residual add's time (s)."""
    sharded_s: float
    """Rotary's and the activation's time (s)."""


def read_elementwise_profiles(path: Path | None = None) -> list[KernelTiming]:
    """Rows of a per-operator table (default: the shipped one); a malformed row is one error
    line naming the file, the line and the column."""
    source = measurement_file(PROFILES) if path is None else path
    rows = []
    for line, r in csv_table(source, COLUMNS):
        where = f"{source} line {line}"
        tp = positive_int(r["tensor_parallel"], where, "tensor_parallel")
        tokens = positive_int(r["tokens"], where, "tokens")
        times = {c: positive_float(r[c], where, c) * 1e-3 for c in (*REPLICATED, *SHARDED)}
        require(all(t < 1 for t in times.values()), f"{where}: times must be below 1000 ms")
        rows.append(KernelTiming(r["gpu"], r["model"], tp, tokens,
                                 sum(times[c] for c in REPLICATED),
                                 sum(times[c] for c in SHARDED)))
    return rows


def ideal_s(row: KernelTiming) -> tuple[float, float]:
    """(replicated, sharded) ideal memory time of the row's layer: its tokens × the bytes a
    token and layer of the rank / the GPU's bandwidth."""
    model = load_model(row.model)
    replicated, sharded = elementwise_bytes_per_token(model, row.tp)
    per_layer = row.tokens / (model.num_layers * load_accelerator(row.gpu).mem_bytes_per_s)
    return replicated * per_layer, sharded * per_layer


@dataclass(frozen=True)
class ElementwiseFit:
    """``norms`` and ``elementwise`` (× ideal time) and their launch floors per layer (s),
    with the median |error| of a layer's kernels: in training, held out by model and held out
    by GPU (each row predicted by a fit without its model's, or its GPU's, rows)."""

    norms: float
    elementwise: float
    floors_s: tuple[float, float]
    rows: int
    train_error: float
    by_model_error: float
    by_gpu_error: float

    @property
    def coefficients(self) -> dict[str, float]:
        return {"norms": self.norms, "elementwise": self.elementwise}


def _solve(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(c, f) ≥ 0 minimizing Σ ((c·x + f)/t − 1)²."""
    a = np.column_stack([x, np.ones_like(x)]) / t[:, None]
    return nnls(a, np.ones_like(t))[0]


def _pairs(rows: list[KernelTiming]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ideal = np.array([ideal_s(r) for r in rows])
    times = np.array([(r.replicated_s, r.sharded_s) for r in rows])
    return ideal[:, 0], times[:, 0], ideal[:, 1], times[:, 1]


def _layer_errors(train: list[KernelTiming], test: list[KernelTiming]) -> np.ndarray:
    """Relative errors of the test rows' layer time (both kinds) under a fit on ``train``."""
    xr, tr, xs, ts = _pairs(train)
    (cr, fr), (cs, fs) = _solve(xr, tr), _solve(xs, ts)
    xr, tr, xs, ts = _pairs(test)
    return (cr * xr + fr + cs * xs + fs) / (tr + ts) - 1


def fit_elementwise(rows: list[KernelTiming]) -> ElementwiseFit:
    """Fit both pairs on ``rows`` with at least :data:`MIN_TOKENS` tokens (module docstring)."""
    rows = [r for r in rows if r.tokens >= MIN_TOKENS]
    require(len(rows) > 0, f"elementwise profiles: no rows with >= {MIN_TOKENS} tokens")
    xr, tr, xs, ts = _pairs(rows)
    (cr, fr), (cs, fs) = _solve(xr, tr), _solve(xs, ts)

    def held_out(key: str) -> float:
        groups = sorted({getattr(r, key) for r in rows})
        if len(groups) < 2:
            return float("nan")
        errors = [_layer_errors([r for r in rows if getattr(r, key) != g],
                                [r for r in rows if getattr(r, key) == g]) for g in groups]
        return float(np.median(np.abs(np.concatenate(errors))))
    train = float(np.median(np.abs((cr * xr + fr + cs * xs + fs) / (tr + ts) - 1)))
    return ElementwiseFit(float(cr), float(cs), (float(fr), float(fs)), len(rows), train,
                          held_out("model"), held_out("gpu"))
