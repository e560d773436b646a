"""One MoE layer's routed experts as the shipped profiles time them, against the engines' own
kernel timings on H100 (``catalog/measurements/aiconfigurator_h100_moe_kernels.csv``) or, with
``--gpu b200``, on B200 (``aiconfigurator_b200_moe_kernels.csv``: the same engine versions).

For each engine and expert format, by tokens a layer: the median |error| and bias of the
profile's time of the layer — the busiest rank's routed FLOPs, expert bytes, pairs and its
fixed time through the profile's ``expert*``, ``expert_weights``, ``expert_pair`` and
``moe_layer`` coefficients (:func:`napkin.calibration.moe_kernels.features`) — and of the same
layer timed as dense work (the profile's ``dense*`` and ``weights`` coefficients, as profiles
timed the routed experts before they had terms of their own). The shipped profiles hold the
expert terms at their fit on these tables (``benchmarks/fit_profiles.py``), so the first
column is a training error on H100; :func:`napkin.calibration.moe_kernels.fit_kernels` reports
the held-out-by-model one. On B200 the columns time the layers with the profile's coefficients
as fitted (on H100), without its Blackwell factors; a line per engine gives the expert terms
fitted on the B200 rows themselves, held out by model, and a last one the profile with
Blackwell factors from the other models' kernels (:func:`~napkin.calibration.moe_kernels.
architecture_scales`), held out by model: how the shipped factors were chosen.

Usage: python benchmarks/check_moe_kernels.py [--gpu h100-sxm|b200]
"""

import argparse
from dataclasses import replace

import numpy as np

from napkin.calibration.basis import StepModel
from napkin.calibration.moe_kernels import (
    KERNEL_TABLES,
    architecture_scales,
    features,
    fit_kernels,
    read_moe_kernels,
)
from napkin.calibration.profile import load_profile
from napkin.calibration.terms import TIED

BINS = ((1, 64), (64, 1024), (1024, 4096), (4096, 1 << 30))


def as_dense(model: StepModel) -> StepModel:
    """``model`` with its routed-expert terms at their dense parents' coefficients."""
    c = model.as_dict()
    return StepModel.of({t: v for t, v in c.items()
                         if not (t.startswith("expert") and t in TIED)}, model.request_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=list(KERNEL_TABLES), default="h100-sxm")
    args = ap.parse_args()
    rows = read_moe_kernels(gpu=args.gpu)
    h100 = read_moe_kernels() if args.gpu != "h100-sxm" else rows
    for engine in ("trtllm", "vllm", "sglang"):
        model = replace(load_profile(engine).model, architecture_scales=())
        dense = as_dense(model)
        c = model.as_dict()
        mine = [r for r in rows if r.engine == engine]
        print(f"{engine} {mine[0].version}: " + ", ".join(
            f"{t} {c[t] * 1e6:.1f} µs" if t == "moe_layer" else f"{t} {c[t]:.3g}"
            for t in ("expert", "expert_low", "expert_w4a16", "expert_weights", "moe_layer")))
        for fmt in sorted({r.moe_dtype for r in mine}):
            sub = [r for r in mine if r.moe_dtype == fmt]
            f = [features(r) for r in sub]
            shipped = np.array([k.time(model) / k.measured_s - 1 for k in f])
            old = np.array([k.time(dense) / k.measured_s - 1 for k in f])
            tokens = np.array([r.tokens for r in sub])
            for lo, hi in BINS:
                m = (tokens >= lo) & (tokens < hi)
                if not m.any():
                    continue
                top = "…" if hi > 1 << 20 else f"{hi - 1:,}"
                print(f"  {fmt:12} {lo:>6,}–{top:>6} tokens {int(m.sum()):5} rows: shipped "
                      f"{np.median(abs(shipped[m])):6.1%} ({np.median(shipped[m]):+6.1%}), "
                      f"as dense work {np.median(abs(old[m])):6.1%} ({np.median(old[m]):+6.1%})")
        if args.gpu != "h100-sxm":
            fit = fit_kernels(mine, model)
            print("  fitted on these rows: " + ", ".join(
                f"{t} {v * 1e6:.1f} µs" if t == "moe_layer" else f"{t} {v:.3g}"
                for t, v in fit.coefficients.items())
                  + f"; median |error| {fit.train_error:.1%} in, {fit.holdout_error:.1%} held "
                  f"out by model (the shipped profile's {fit.start_error:.1%})")
            print("  " + held_out_scales(model, [r for r in h100 if r.engine == engine], mine))


def held_out_scales(model: StepModel, h100: list, other: list) -> str:
    """The profile's error on each model's rows of ``other`` with and without architecture
    factors fitted on the other models' rows of both tables (median |error|, bias)."""
    plain, scaled = [], []
    for name in sorted({r.model for r in other}):
        train_h = [r for r in h100 if r.model != name]
        train_o = [r for r in other if r.model != name]
        on = model.scaled(architecture_scales(train_h, train_o))
        for r in (r for r in other if r.model == name):
            f = features(r)
            plain.append(f.time(model) / f.measured_s - 1)
            scaled.append(f.time(on) / f.measured_s - 1)
    p, s = np.array(plain), np.array(scaled)
    return (f"with factors from the other models' kernels (held out by model): "
            f"{np.median(abs(s)):.1%} ({np.median(s):+.1%}) against {np.median(abs(p)):.1%} "
            f"({np.median(p):+.1%}) without")


if __name__ == "__main__":
    main()
