"""Fit the shipped calibration profiles (``src/napkin/catalog/profiles/<backend>.yaml``).

Data: the shipped H100 set (``napkin/catalog/measurements/aiconfigurator_h100.csv``, from
ai-dynamo/aiconfigurator's silicon sample, Apache-2.0). Each backend's rows are fitted
(replay → bounded least squares, 4 rounds) and cross-validated leave-one-group-out (GPU, model,
TP); the hold-out residuals become the profile's error bands. Prints the hold-out errors.

Usage: python benchmarks/fit_profiles.py [vllm trtllm sglang]   (minutes per backend)
"""

import sys
import time
from importlib import resources
from pathlib import Path

from napkin.calibration.measurements import read_aiconfigurator_csv
from napkin.validation.calibrate import calibrate

OUT = Path(__file__).resolve().parents[1] / "src/napkin/catalog/profiles"
NOTES = {"aiconfigurator_h100.csv": {
    "origin": "ai-dynamo/aiconfigurator silicon_sample.csv (H100 SXM, dense models, agg)",
    "licence": "Apache-2.0"}}


def main() -> None:
    path = resources.files("napkin.catalog").joinpath("measurements", "aiconfigurator_h100.csv")
    rows = read_aiconfigurator_csv(str(path))
    for backend in sys.argv[1:] or ["vllm", "trtllm", "sglang"]:
        t = time.time()
        cal = calibrate(rows, backend, source_notes=NOTES, progress=lambda s: print("  ", s))
        cal.profile.save(OUT / f"{backend}.yaml")
        o = cal.holdout.overall
        print(f"{backend}: {o['ttft'].rows} rows; hold-out median |error| TTFT "
              f"{o['ttft'].median_abs_error:.1%} (bias {o['ttft'].bias:+.1%}), TPOT "
              f"{o['tpot'].median_abs_error:.1%} (bias {o['tpot'].bias:+.1%}); "
              f"{time.time() - t:.0f} s")
        print("  ", cal.profile.model.as_dict(), "request_s", cal.profile.model.request_s)


if __name__ == "__main__":
    main()
