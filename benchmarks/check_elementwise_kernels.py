"""One layer's elementwise kernels (norms, residual add, rotary, MLP activation) against Vidur's
per-operator profiles (``catalog/measurements/vidur_elementwise.csv``, MIT), by GPU, model and
tensor-parallel size: the measured time of a layer's kernels at 4,096 tokens (replicated and
sharded), their ideal memory time (:func:`napkin.calibration.elementwise_kernels.ideal_s`), and
the fit's error — in training, held out by model and held out by GPU
(:func:`napkin.calibration.elementwise_kernels.fit_elementwise`, the coefficients
``benchmarks/fit_profiles.py --elementwise held`` holds in a refit).

Usage: python benchmarks/check_elementwise_kernels.py
"""

import time

from napkin.calibration.elementwise_kernels import (
    fit_elementwise,
    ideal_s,
    read_elementwise_profiles,
)


def main() -> None:
    t0 = time.perf_counter()
    rows = read_elementwise_profiles()
    f = fit_elementwise(rows)
    print(f"fit on {f.rows} rows (>= 128 tokens): norms {f.norms:.3f}, elementwise "
          f"{f.elementwise:.3f} × ideal time, launch floors {f.floors_s[0] * 1e6:.1f} / "
          f"{f.floors_s[1] * 1e6:.1f} µs a layer; median |error| of a layer {f.train_error:.1%}, "
          f"held out by model {f.by_model_error:.1%}, by GPU {f.by_gpu_error:.1%}")
    print(f"{'gpu':14} {'model':12} {'tp':>2}  {'norms ms':>9} {'ideal':>7} {'x':>5}  "
          f"{'sharded ms':>10} {'ideal':>7} {'x':>5}")
    seen = set()
    for r in rows:
        key = (r.gpu, r.model, r.tp)
        if r.tokens != 4096 or key in seen:
            continue
        seen.add(key)
        rep, sha = ideal_s(r)
        print(f"{r.gpu:14} {r.model:12} {r.tp:>2}  {r.replicated_s * 1e3:9.4f} {rep * 1e3:7.4f} "
              f"{r.replicated_s / rep:5.2f}  {r.sharded_s * 1e3:10.4f} {sha * 1e3:7.4f} "
              f"{r.sharded_s / sha:5.2f}")
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
