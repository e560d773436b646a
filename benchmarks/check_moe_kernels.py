"""One MoE layer's routed experts as the shipped profiles time them, against the engines' own H100
kernel timings (``catalog/measurements/aiconfigurator_h100_moe_kernels.csv``).

For each engine and expert format, by tokens a layer: the median |error| and bias of the
profile's time of the layer — its matmul and weight coefficients on the busiest rank's routed
FLOPs and expert bytes, plus its ``moe_layer`` and ``expert_pair`` terms
(:func:`napkin.calibration.moe_kernels.features`) — and of the same with ``expert_pair`` and a
fixed time fitted on the engine's BF16 and block-scaled FP8 kernels (the screen
``benchmarks/fit_profiles.py --kernel-pair`` holds in a serving refit; not shipped).

No figure here is fitted into a shipped profile. Usage: python benchmarks/check_moe_kernels.py
"""

import numpy as np

from napkin.calibration.moe_kernels import features, fit_expert_pair, read_moe_kernels
from napkin.calibration.profile import load_profile

BINS = ((1, 64), (64, 1024), (1024, 4096), (4096, 1 << 30))
FIT_FORMATS = ("bfloat16", "fp8_block")


def main() -> None:
    rows = read_moe_kernels()
    for engine in ("trtllm", "vllm", "sglang"):
        model = load_profile(engine).model
        c = model.as_dict()
        mine = [r for r in rows if r.engine == engine]
        fit = fit_expert_pair([r for r in mine if r.moe_dtype in FIT_FORMATS], model)
        print(f"{engine} {mine[0].version}: shipped moe_layer {c['moe_layer'] * 1e6:.1f} µs, "
              f"expert_pair {c['expert_pair']:g}; kernel fit expert_pair {fit.expert_pair:.3g},"
              f" fixed {fit.fixed_s * 1e6:.1f} µs")
        for fmt in sorted({r.moe_dtype for r in mine}):
            sub = [r for r in mine if r.moe_dtype == fmt]
            f = [features(r, model) for r in sub]
            shipped = np.array([(k.work_s + c["moe_layer"] + c["expert_pair"] * k.pair_s)
                                / k.measured_s - 1 for k in f])
            screen = np.array([(k.work_s + fit.fixed_s + fit.expert_pair * k.pair_s)
                               / k.measured_s - 1 for k in f])
            tokens = np.array([r.tokens for r in sub])
            for lo, hi in BINS:
                m = (tokens >= lo) & (tokens < hi)
                if not m.any():
                    continue
                top = "…" if hi > 1 << 20 else f"{hi - 1:,}"
                print(f"  {fmt:12} {lo:>6,}–{top:>6} tokens {int(m.sum()):5} rows: shipped "
                      f"{np.median(abs(shipped[m])):6.1%} ({np.median(shipped[m]):+6.1%}), "
                      f"kernel-fitted pair {np.median(abs(screen[m])):6.1%} "
                      f"({np.median(screen[m]):+6.1%})")


if __name__ == "__main__":
    main()
