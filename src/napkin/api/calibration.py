"""Fitting and scoring step-time profiles: ``napkin calibrate`` and ``napkin validate``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.errors import require

Paths = str | Path | Sequence[str | Path]
"""One measurement file or several: aiconfigurator CSV, ``vllm bench serve`` JSON, guidellm
JSON, or napkin's plain CSV."""


def _paths(files: Paths) -> list[str]:
    listed = [files] if isinstance(files, str | Path) else list(files)
    require(len(listed) >= 1, "files: give at least one measurement file")
    return [str(f) for f in listed]


def _jobs(jobs: int) -> None:
    require(jobs >= 0, f"jobs: must be >= 0 (0: one per core), got {jobs}")


@checked
def calibrate(files: Paths, *, backend: str, out: str | Path, gpu: str | None = None,
              model: str | None = None, tp: int | None = None, weights: str | None = None,
              rounds: int = 4, harness: str = "steady", terms: str | Sequence[str] = "all",
              campaign: Sequence[str] = (), jobs: int = 0,
              progress: Callable[[str], None] | None = None) -> Result:
    """Fit a step-time profile for ``backend`` (vllm, trtllm or sglang) to measured serving
    runs, cross-validated by (GPU, model, TP) group, and save it to ``out`` (YAML; the profile
    is named after the file).

    Each engine step is timed as t_step = Σ_k c_k·x_k (s) over basis terms per device of the
    tensor-parallel group (T new tokens): 1 (c_step, s per step), decoder layers (s per
    layer), T (s per token), dense FLOPs/(tp·dense peak), attention FLOPs/(tp·BF16 peak),
    weight bytes/(tp·bandwidth), KV bytes/(tp·bandwidth) (× ideal time: a dense coefficient
    of 2 is an MFU of 0.5), all-reduces (s each) and ring all-reduce bytes/link bandwidth,
    and a floor for a step with a prefill chunk (``eager_layer``, s per layer: that step takes
    at least this × layers), the elementwise kernels' bytes (``norms`` whole on every rank,
    ``elementwise`` divided by tp; × ideal time); plus ``request_s`` per request and
    ``request_token_s`` per prompt token outside the engine. For a fixed
    schedule (and the side of each step's floor) a request's TTFT and TPOT are linear in the
    c_k, so the fit alternates ``rounds`` times: replay every
    measured run through the serving simulator, then solve non-negative least squares on the
    relative residuals. ``terms``: the basis terms the fit may use (``all``, or some of step,
    layer, moe_layer, token, norms, elementwise, dense, dense_low, dense_w4a16, attention,
    weights, kv, allreduce, allreduce_bytes, alltoall, alltoall_bytes, expert_pair, expert,
    expert_low, expert_w4a16, expert_weights, expert_weights_w4a16, eager_layer and
    request_token; the rest stay 0, or tied to the matching term).
    ``harness``: how closed loops whose file does not say ran (steady, burst, inferencemax, or
    ``key=value,…``); ``campaign``: rows that ran otherwise, each
    ``MODEL[@VERSION][/GPU]:key=value,…`` over ``harness`` (a file mixing benchmark
    campaigns); ``latency_s=fit`` fits that campaign's harness latency (seconds every one of its
    TTFTs carries on top of ``request_s``) and writes it into the profile. ``gpu``, ``model``,
    ``tp``, ``weights`` describe JSON results (they do not say). The hold-out report: each
    (GPU, model, TP) group predicted by a refit on the others; errors predicted/measured − 1.
    ``jobs``: processes for the folds (0: one per core).
    ``progress(line)`` reports each round. ``value``: the Calibration (profile, holdout).
    """
    from napkin.calibration.measurements.read import read_measurements
    from napkin.calibration.protocol import parse_campaign, parse_protocol
    from napkin.calibration.terms import parse_terms
    from napkin.report.calib_views import calibrate_doc
    from napkin.specs.files import check_output
    from napkin.validation.calibrate import calibrate as fit_profile

    check_output(out, (".yaml", ".yml"), "out")
    require(1 <= rounds <= 20, f"rounds: must be between 1 and 20, got {rounds}")
    _jobs(jobs)
    protocol = parse_protocol(harness)
    campaigns = tuple(parse_campaign(c, protocol) for c in
                      ([campaign] if isinstance(campaign, str) else campaign))
    fitted_terms = parse_terms(terms if isinstance(terms, str) else ",".join(terms))
    rows = read_measurements(_paths(files), gpu=gpu, model=model, tensor_parallel=tp,
                             weights=weights, backend=None)
    cal = fit_profile(rows, backend, Path(out).stem, rounds=rounds, protocol=protocol,
                      progress=progress, jobs=jobs, terms=fitted_terms, campaigns=campaigns)
    cal.profile.save(Path(out))
    return Result(calibrate_doc(cal.profile, cal.holdout, str(out)), cal)


@checked
def validate(sets: str | Sequence[str] | None = None, *, calibration: str | None = None,
             gpu: str | None = None, model: str | None = None, tp: int | None = None,
             weights: str | None = None, jobs: int = 0,
             progress: Callable[[str], None] | None = None, by: str = "group") -> Result:
    """Replay measured serving runs through the simulator and report the errors of its
    predicted mean TTFT and TPOT: relative errors predicted/measured − 1, overall and per
    (GPU, model, TP) group the median |error|, the bias (median signed error) and the shares
    within 10 % and 25 %, and the worst rows.

    ``sets``: shipped sets (``h100``, ``h100-moe``, ``h100-trtllm-moe``, ``h100-trtllm-gptoss``,
    ``splitwise``, ``trtllm-v0.17``, ``trtllm-perf-overview``, ``h100-minimax``) or files
    (``gpu``, ``model``, ``tp``, ``weights`` describe JSON results); default: every shipped
    set. With ``calibration`` (a profile name or file) that profile scores its backend's rows
    as fitted.
    Without it each backend's shipped profile scores its rows: by leave-one-group-out refits
    (each group predicted by a refit on the others) on a set or file the profile may have
    been fitted on, as fitted on a shipped set no profile saw. ``jobs``: processes for the
    refits (0: one per core); ``progress(line)`` reports each fold. ``by``: how the errors
    are grouped and the refits' folds held out (:data:`~napkin.calibration.measurements.records.
    GROUPINGS`: ``group`` = GPU, model and TP; ``gpu``: leave-one-GPU-out; ``tp``:
    leave-one-TP-out; ``model``, ``engine``, ``version``).
    ``value``: tuple of (set · backend, how it was scored, ValidationReport).
    """
    from napkin.calibration.measurements.read import read_measurements
    from napkin.calibration.measurements.records import GROUPINGS
    from napkin.calibration.profile import load_profile
    from napkin.report.calib_views import validate_doc
    from napkin.validation.calibrate import holdout
    from napkin.validation.calibrate import validate as score
    from napkin.validation.sets import FITTED, SET_PROFILES, SETS, TRAINING, load_set

    _jobs(jobs)
    require(by in GROUPINGS, f"by: must be one of {', '.join(GROUPINGS)}, got {by!r}")
    names = list(SETS) if sets is None else [sets] if isinstance(sets, str) else list(sets)
    require(len(names) >= 1, "sets: give at least one set or file (None: every shipped set)")
    results = []
    for name in names:
        if name in SETS:
            rows = load_set(name)
        else:
            rows = read_measurements([name], gpu=gpu, model=model, tensor_parallel=tp,
                                     weights=weights)
        if calibration is not None:  # one profile: its backend's rows if there are any
            profile = load_profile(calibration)
            mine = [m for m in rows if m.backend == profile.backend] or rows
            results.append((f"{name} · {profile.backend}", f"profile {calibration}, as fitted",
                            score(mine, profile, by)))
            continue
        for backend in sorted({m.backend for m in rows}):
            mine = [m for m in rows if m.backend == backend]
            prof = SET_PROFILES.get(name, backend)
            if name in TRAINING:  # fitted on with h100: the training error
                rep = score(mine, load_profile(prof), by)
                how = f"profile {prof} as fitted, on rows it was fitted on: training error"
            elif name in SETS and name not in FITTED:  # no profile saw it: score as fitted
                rep = score(mine, load_profile(prof), by)
                how = f"profile {prof} as fitted (not fitted on this set)"
            else:
                rep = holdout(mine, load_profile(prof), progress=progress, jobs=jobs, by=by)
                how = (f"leave-one-group-out refits of profile {prof}" if by == "group" else
                       f"leave-one-{by}-out refits of profile {prof}")
            results.append((f"{name} · {backend}", how, rep))
    found = tuple(results)

    def plotter(path: Path) -> None:
        from napkin.report.calib_plots import plot_validation

        plot_validation(list(found), path)

    return Result(validate_doc(results), found, plotter)
