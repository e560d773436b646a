"""A shipped profile's frontend queue chosen on its measurement rows, held out by group
(:mod:`napkin.validation.frontend_fit`): each candidate frontend replayed over every row with
the profile's step-time model, and the leave-one-group-out error of choosing among them.

Candidates: no frontend queue, and every combination of ``--request-ms`` (work per request
before the engine) and ``--response-ms`` (work per response after its last token). Prints each
candidate's mean |relative error| (TTFT and TPOT), the winner, and the median |error| of TTFT
and TPOT without a frontend and held out.

Usage: python benchmarks/fit_frontend.py BACKEND [--set SET] [--request-ms MS ...]
[--response-ms MS ...] [--by group|gpu|tp|model] (TensorRT-LLM's 357 rows: ~20 s a candidate)
"""

import argparse

from arguments import non_negative
from napkin.calibration.profile import load_profile
from napkin.timing.frontend import Frontend
from napkin.validation.calibrate import report
from napkin.validation.frontend_fit import fit_frontend
from napkin.validation.sets import load_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", choices=("vllm", "sglang", "trtllm"))
    parser.add_argument("--set", default="h100", choices=("h100", "h100-moe",
                                                          "h100-trtllm-moe"),
                        help="measurement set (default: h100)")
    parser.add_argument("--request-ms", nargs="+", type=non_negative, default=[0.0])
    parser.add_argument("--response-ms", nargs="+", type=non_negative,
                        default=[0.0, 10.0, 20.0, 30.0])
    parser.add_argument("--by", default="group", choices=("group", "gpu", "tp", "model"))
    a = parser.parse_args()
    rows = [m for m in load_set(a.set) if m.backend == a.backend]
    if not rows:
        parser.error(f"--set: {a.set} has no {a.backend} rows")
    candidates = [None] + [Frontend(request_s=q * 1e-3, response_s=r * 1e-3)
                           for q in a.request_ms for r in a.response_ms if q or r]
    fit = fit_frontend(rows, load_profile(a.backend), candidates, a.by, progress=print)
    print(f"chosen on every row: {fit.chosen}")
    for name, preds in (("no frontend", fit.predictions[0]),
                        (f"held out by {a.by}", fit.holdout)):
        r = report(preds, by=a.by)
        print(f"{name}: median |TTFT| {r.overall['ttft'].median_abs_error:.1%}, "
              f"median |TPOT| {r.overall['tpot'].median_abs_error:.1%} over "
              f"{len(preds)} rows")


if __name__ == "__main__":
    main()
