"""Calibrated times of one request chain (prefill + decode steps) under a profile.

The analytic counterpart of the simulator's fitted timer for ``napkin call --calibration``:
``TTFT = request_s + t(prefill of B sequences of P new on S cached tokens)``; decode step j
(from 0) has B sequences at context S + P + j, so its FLOPs and bytes are affine in j and so is
its time: the mean TPOT over the G − 1 decode steps is the mean of the first and last;
end-to-end = TTFT + (G − 1)·TPOT. Bands come from the profile's hold-out residuals.

A step's (dense FLOPs, attention FLOPs, weight bytes, KV bytes, 16-bit FLOPs) are those of
:func:`napkin.accounting.linear.tp_cost` — the simulator's engines' own — so that at tensor
parallel tp the basis's ``kv`` term (KV part / ``kv_devices(tp)``) holds each GPU's
``KV/kv_devices(tp) + state/tp`` bytes: a linear-attention state (Gated DeltaNet) splits over
every rank, the KV of 2 KV heads (Qwen3-Next) over at most 2.
"""

from dataclasses import dataclass

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision
from napkin.accounting.linear import tp_cost
from napkin.calibration.basis import StepBasis
from napkin.calibration.profile import Profile
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec


@dataclass(frozen=True)
class CalibratedCall:
    """Times of one request chain under a profile, with its bands and domain warnings."""

    profile: str
    ttft_s: float
    tpot_s: float
    e2e_s: float
    ttft_low_s: float
    ttft_high_s: float
    tpot_low_s: float
    tpot_high_s: float
    warnings: tuple[str, ...]


def calibrated_call(profile: Profile, model: ModelSpec, acc: Accelerator, precision: Precision,
                    new: int, gen: int = 1, cached: int = 0, batch: int = 1,
                    tensor_parallel: int = 1, model_id: str | None = None) -> CalibratedCall:
    """See the module docstring; ``model_id`` (catalog id) is checked against the domain."""
    link = acc.allreduce_bytes_per_s
    basis = StepBasis.of(model, acc, precision.weights.compute, tensor_parallel, link,
                         precision.weights.weight_only, precision)
    cost = tp_cost(model, precision, tensor_parallel)
    sm = profile.model.on(acc.architecture)

    def step(b: Batch, tokens: int, prefill: bool = False) -> float:
        return sm.time(basis.terms(cost.parts(b), tokens, prefill))

    ttft = sm.request_s + step(Batch.uniform(cached, new, batch), new * batch, True)
    tpot = 0.0
    if gen > 1:
        first = step(Batch.uniform(cached + new, 1, batch), batch)
        last = step(Batch.uniform(cached + new + gen - 2, 1, batch), batch)
        tpot = (first + last) / 2
    t_band, o_band = profile.bands.get("ttft"), profile.bands.get("tpot")
    t_lo, t_hi = t_band.of(ttft) if t_band else (ttft, ttft)
    o_lo, o_hi = o_band.of(tpot) if o_band else (tpot, tpot)
    outside = profile.domain.outside(acc.id, model_id or model.name, tensor_parallel,
                                     precision.weights.name, cached + new, gen, batch,
                                     spec=model)
    return CalibratedCall(profile.name, ttft, tpot, ttft + (gen - 1) * tpot, t_lo, t_hi, o_lo,
                          o_hi, tuple(f"outside profile {profile.name!r}: {w}" for w in outside))


@dataclass(frozen=True)
class CalibratedStep:
    """One decode step of ``batch`` sequences at a context, under a profile."""

    batch: int
    step_s: float
    step_low_s: float
    step_high_s: float
    tokens_per_s: float


def calibrated_decode(profile: Profile, model: ModelSpec, acc: Accelerator,
                      precision: Precision, batches: list[int], context: int,
                      tensor_parallel: int = 1) -> list[CalibratedStep]:
    """Decode-step times (one token for each of B sequences with ``context`` cached tokens)
    under the profile's step-time model, with its TPOT band (the band of a mean TPOT, which
    is a mean of steps)."""
    link = acc.allreduce_bytes_per_s
    basis = StepBasis.of(model, acc, precision.weights.compute, tensor_parallel, link,
                         precision.weights.weight_only, precision)
    cost = tp_cost(model, precision, tensor_parallel)
    band = profile.bands.get("tpot")
    sm = profile.model.on(acc.architecture)
    out = []
    for b in batches:
        t = sm.time(basis.terms(cost.parts(Batch.decode(context, b)), b))
        lo, hi = band.of(t) if band else (t, t)
        out.append(CalibratedStep(b, t, lo, hi, b / t))
    return out
