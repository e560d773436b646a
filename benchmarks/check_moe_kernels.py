"""One MoE layer's routed experts as the shipped profiles time them, against the engines' own H100
kernel timings (``catalog/measurements/aiconfigurator_h100_moe_kernels.csv``).

For each engine and expert format, by tokens a layer: the median |error| and bias of the
profile's time of the layer — the busiest rank's routed FLOPs, expert bytes, pairs and its
fixed time through the profile's ``expert*``, ``expert_weights``, ``expert_pair`` and
``moe_layer`` coefficients (:func:`napkin.calibration.moe_kernels.features`) — and of the same
layer timed as dense work (the profile's ``dense*`` and ``weights`` coefficients, as profiles
timed the routed experts before they had terms of their own). The shipped profiles hold the
expert terms at their fit on these tables (``benchmarks/fit_profiles.py``), so the first
column is a training error; :func:`napkin.calibration.moe_kernels.fit_kernels` reports the
held-out-by-model one.

Usage: python benchmarks/check_moe_kernels.py
"""

import numpy as np

from napkin.calibration.basis import StepModel
from napkin.calibration.moe_kernels import features, read_moe_kernels
from napkin.calibration.profile import load_profile
from napkin.calibration.terms import TIED

BINS = ((1, 64), (64, 1024), (1024, 4096), (4096, 1 << 30))


def as_dense(model: StepModel) -> StepModel:
    """``model`` with its routed-expert terms at their dense parents' coefficients."""
    c = model.as_dict()
    return StepModel.of({t: v for t, v in c.items()
                         if not (t.startswith("expert") and t in TIED)}, model.request_s)


def main() -> None:
    rows = read_moe_kernels()
    for engine in ("trtllm", "vllm", "sglang"):
        model = load_profile(engine).model
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


if __name__ == "__main__":
    main()
