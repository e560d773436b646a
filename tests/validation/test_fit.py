"""Fitting through the simulator: linearity of the recorded features, recovery of a known
model from measurements it generated, and the profile it writes."""

from dataclasses import replace as swap
from importlib.resources import files

import numpy as np
import pytest

from napkin.calibration.basis import StepModel
from napkin.calibration.measurements.records import Harness, Measurement
from napkin.calibration.profile import Profile, load_profile
from napkin.calibration.protocol import Protocol, campaigns_of, parse_campaign
from napkin.calibration.terms import TERMS
from napkin.validation.calibrate import bands, calibrate, report, validate
from napkin.validation.fit import Observation, Prediction, fit, fitted_timer, predict, solve
from napkin.validation.replay import replay

TRUE = StepModel.of({"step": 3e-3, "dense": 1.6, "attention": 1.2, "weights": 1.3, "kv": 1.5,
                     "allreduce": 20e-6, "allreduce_bytes": 1.0}, request_s=0.04)
FLOORED = StepModel.of({**TRUE.as_dict(), "eager_layer": 0.8e-3}, request_s=0.04)
"""TRUE with a 25.6 ms floor (0.8 ms × 32 layers) on Llama-3.1-8B's steps with a prefill chunk:
it binds on the 512-token prompts' steps (≈ 15 ms of sum at TP 1) and not on a whole 2,048-token
prompt's (≈ 53 ms)."""


def _row(tp: int, isl: int, osl: int, c: int, model: str = "llama-3.1-8b") -> Measurement:
    return Measurement(f"synthetic:{model}-{tp}-{isl}-{osl}-{c}", "vllm", "test", model,
                       "h100-sxm", "bf16", tp, isl, osl, Harness("closed_loop", concurrency=c))


ROWS = [_row(tp, isl, osl, c) for tp in (1, 2) for isl, osl in ((512, 32), (2048, 16))
        for c in (2, 8)]


@pytest.mark.parametrize("true", [TRUE, FLOORED], ids=["sum", "floored"])
def test_recorded_features_reproduce_the_replayed_means(true):
    """Mean TTFT = request_s + X_ttft·c and mean TPOT = X_tpot·c, for the schedule simulated
    (with a floor: each step's features are the side of the floor that set its time)."""
    c = np.array(true.coefficients)
    for m in ROWS[:4]:
        r = replay(m, fitted_timer(true), record=True)
        assert r.mean_ttft_s == pytest.approx(true.request_s + r.ttft_features @ c, rel=1e-9)
        assert r.mean_tpot_s == pytest.approx(r.tpot_features @ c, rel=1e-9)


def _measured(rows: list[Measurement], true: StepModel = TRUE) -> list[Measurement]:
    out = []
    for m in rows:
        r = replay(m, fitted_timer(true))
        out.append(Measurement(m.source, m.backend, m.backend_version, m.model, m.gpu, m.weights,
                               m.tensor_parallel, m.input_tokens, m.output_tokens, m.harness,
                               mean_ttft_s=r.mean_ttft_s, mean_tpot_s=r.mean_tpot_s))
    return out


@pytest.mark.parametrize(("true", "rounds"), [(TRUE, 4), (FLOORED, 8)], ids=["sum", "floored"])
def test_fit_recovers_the_latencies_of_a_known_model(true, rounds):
    """Measurements made by a known step-time model are fitted back to within 2 %, starting
    from the hand calibration (a different point; its 0.5 ms per layer floor binds on
    different steps than FLOORED's 0.8 ms, and must fall away for TRUE). Which steps the floor
    binds on moves from round to round, so the floored fit takes more rounds to settle (its
    floor comes back within 1 % of 0.8 ms)."""
    rows = _measured(ROWS, true)
    model = fit(rows, rounds=rounds).model
    if true is FLOORED:
        assert model.as_dict()["eager_layer"] == pytest.approx(0.8e-3, rel=0.01)
    for p in predict(rows, model):
        assert p.ttft_s == pytest.approx(p.row.mean_ttft_s, rel=0.02)
        assert p.tpot_s == pytest.approx(p.row.mean_tpot_s, rel=0.02)


def _burst(isl: int, osl: int, n: int, model: str = "llama-3.1-8b") -> Measurement:
    return Measurement(f"synthetic:burst-{model}-{isl}-{osl}-{n}", "vllm", "test", model,
                       "h100-sxm", "bf16", 1, isl, osl, Harness("burst", num_requests=n))


BURSTS = [_burst(isl, osl, n) for isl, osl in ((512, 64), (2048, 32), (256, 256))
          for n in (64, 512)]


def test_a_bursts_span_is_request_s_plus_its_summed_basis():
    """All requests at t = 0: the engine is never idle, so first arrival to last finish =
    request_s + (the engine's basis summed over its steps) · coefficients, and the output
    throughput = tokens / that span."""
    c = np.array(TRUE.coefficients)
    for m in BURSTS[:3]:
        r = replay(m, fitted_timer(TRUE), record=True)
        assert r.span_features is not None
        span = TRUE.request_s + r.span_features @ c
        assert r.output_tokens / span == pytest.approx(r.output_tokens_per_s, rel=1e-6)
    closed = replay(ROWS[0], fitted_timer(TRUE), record=True)
    assert closed.span_features is None  # a closed loop idles between clients' requests


def test_fit_recovers_a_known_model_from_throughputs_alone():
    """Offline throughputs made by TRUE (no TTFT or TPOT reported, as trtllm-bench or an
    MLPerf Offline run gives them) fit back to within 1 %, from the hand calibration; the
    report scores them, and a row with nothing to fit is refused."""
    rows = []
    for m in BURSTS:
        r = replay(m, fitted_timer(TRUE))
        rows.append(swap(m, output_tokens_per_s=r.output_tokens_per_s))
    model = fit(rows, rounds=4, terms=("step", "dense", "attention", "weights", "kv")).model
    preds = predict(rows, model)
    for p in preds:
        assert p.output_tokens_per_s == pytest.approx(p.row.output_tokens_per_s, rel=0.01)
    rep = report(preds)
    assert rep.overall["throughput"].rows == len(rows)
    assert rep.overall["throughput"].median_abs_error < 0.01
    with pytest.raises(Exception, match="no measurements with a TTFT, a TPOT or"):
        fit([swap(BURSTS[0], output_tokens_per_s=None)], rounds=1)


def _obs(measured_s: float, **features: float) -> Observation:
    x = np.zeros(len(TERMS) + 1)
    for name, v in features.items():
        x[TERMS.index(name)] = v
    return Observation("tpot", measured_s, x)


def test_low_precision_matmuls_get_their_own_coefficient_or_share_dense():
    """Two rows whose time is all matmul: BF16 at 1.0 ms ideal measured 1.5 ms, FP8 at 0.5 ms
    ideal measured 1.0 ms — dense 1.5, dense_low 2.0 when both are fitted. With only BF16 rows,
    or with dense_low left out of the terms, one coefficient covers both columns (exact fit of
    a single column: measured / ideal; both rows together: between 1.5 and 2.0)."""
    rows = [_obs(1.5e-3, dense=1e-3), _obs(1.0e-3, dense_low=0.5e-3)]
    c = solve(rows, StepModel.of({"dense": 1.0})).model.as_dict()
    assert c["dense"] == pytest.approx(1.5, rel=1e-3)
    assert c["dense_low"] == pytest.approx(2.0, rel=1e-3)
    only16 = solve(rows[:1], StepModel.of({"dense": 1.0})).model.as_dict()
    assert only16["dense"] == pytest.approx(1.5, rel=1e-3)
    assert only16["dense_low"] == only16["dense"]
    shared = solve(rows, StepModel.of({"dense": 1.0}),
                   terms=[t for t in TERMS if t != "dense_low"]).model.as_dict()
    assert 1.5 < shared["dense"] < 2.0 and shared["dense_low"] == shared["dense"]


def test_weight_only_matmuls_get_their_own_coefficient_or_share_dense():
    """BF16 matmuls at 1.0 ms ideal measured 1.5 ms, W4A16 ones at 1.0 ms ideal measured
    3.5 ms, FP8 at 0.5 ms measured 1.0 ms: dense 1.5, dense_w4a16 3.5, dense_low 2.0. Without
    weight-only rows dense_w4a16 is dense's (1.5), and left out of the terms both columns share
    one coefficient (between 1.5 and 3.5)."""
    rows = [_obs(1.5e-3, dense=1e-3), _obs(3.5e-3, dense_w4a16=1e-3),
            _obs(1.0e-3, dense_low=0.5e-3)]
    c = solve(rows, StepModel.of({"dense": 1.0})).model.as_dict()
    assert (c["dense"], c["dense_w4a16"], c["dense_low"]) == pytest.approx((1.5, 3.5, 2.0),
                                                                          rel=1e-3)
    without = solve(rows[:1] + rows[2:], StepModel.of({"dense": 1.0})).model.as_dict()
    assert without["dense_w4a16"] == without["dense"] == pytest.approx(1.5, rel=1e-3)
    shared = solve(rows[:2], StepModel.of({"dense": 1.0}),
                   terms=[t for t in TERMS if t != "dense_w4a16"]).model.as_dict()
    assert 1.5 < shared["dense"] < 3.5 and shared["dense_w4a16"] == shared["dense"]


def test_all_to_alls_are_tied_to_the_all_reduces_or_fixed_at_the_links_time():
    """A row of 1.5 ms of matmul at 1.0 ms ideal plus 116 all-to-alls of 10 µs each (2.66 ms
    measured): fitted without the all-reduce pair, the all-to-alls keep the link's 10 µs and
    1.0 (the fit subtracts them) and dense comes out 1.5. With the pair fitted (an all-reduce
    row of 80 all-reduces, 4 ms measured, sets 50 µs a collective), they share its value."""
    rows = [_obs(1.5e-3 + 116 * 10e-6, dense=1e-3, alltoall=116)]
    c = solve(rows, StepModel.of({"dense": 1.0}), terms=["dense"]).model.as_dict()
    assert c["dense"] == pytest.approx(1.5, rel=1e-4)
    assert (c["alltoall"], c["alltoall_bytes"]) == (10e-6, 1.0)
    tied = solve([_obs(4e-3, allreduce=80), _obs(1e-3 + 116 * 50e-6, dense=1e-3, alltoall=116)],
                 StepModel.of({"dense": 1.0}), terms=["dense", "allreduce"]).model.as_dict()
    assert tied["allreduce"] == pytest.approx(50e-6, rel=1e-3)
    assert tied["alltoall"] == tied["allreduce"] and tied["dense"] == pytest.approx(1.0, rel=1e-3)


def test_a_held_term_is_subtracted_not_fitted():
    """A row of 1.5 ms of matmul at 1.0 ms ideal plus 0.5 ms of pair traffic at its ideal
    0.1 ms × 5 (2.0 ms measured): with ``expert_pair`` held at 5 (fitted on kernel timings) the
    fit subtracts it and dense comes out 1.5; the held value is the model's."""
    rows = [_obs(2.0e-3, dense=1e-3, expert_pair=1e-4)]
    c = solve(rows, StepModel.of({"dense": 1.0}), terms=["dense"],
              held={"expert_pair": 5.0}).model.as_dict()
    assert c["dense"] == pytest.approx(1.5, rel=1e-4) and c["expert_pair"] == 5.0
    free = solve(rows, StepModel.of({"dense": 1.0}), terms=["dense"]).model.as_dict()
    assert free["expert_pair"] == 0.0 and free["dense"] == pytest.approx(2.0, rel=1e-4)


def test_routed_expert_terms_chain_to_the_dense_ones_or_are_held():
    """A dense FP8 row (1.0 ms at 0.5 ms ideal) and a MoE FP8 row whose routed experts are
    0.2 ms ideal of FLOPs and 0.3 ms of reads: left out of the fit, ``expert_low`` follows
    ``dense_low`` and, with ``dense_low`` left out too, ``dense`` (the chain expert_low →
    dense_low → dense); ``expert_weights`` follows ``weights``. Held at their kernel fit
    (3.0 and 1.2) they are subtracted: the MoE row's 0.5 ms ideal of dense FP8 work plus
    3.0 × 0.2 + 1.2 × 0.3 ms = 1.96 ms measured leaves dense_low at 2.0 from both rows."""
    rows = [_obs(1.0e-3, dense_low=0.5e-3),
            _obs(1.96e-3, dense_low=0.5e-3, expert_low=0.2e-3, expert_weights=0.3e-3)]
    fitted = [t for t in TERMS if not t.startswith("expert")]
    held = solve(rows, StepModel.of({"dense": 1.0}), terms=fitted,
                 held={"expert_low": 3.0, "expert_weights": 1.2}).model.as_dict()
    assert held["dense_low"] == pytest.approx(2.0, rel=1e-3)
    assert (held["expert_low"], held["expert_weights"]) == (3.0, 1.2)
    assert held["expert"] == held["dense"]  # no BF16 expert work: tied, not held
    tied = solve(rows, StepModel.of({"dense": 1.0}), terms=fitted).model.as_dict()
    assert tied["expert_low"] == tied["dense_low"] and tied["expert_weights"] == tied["weights"]
    chain = solve(rows, StepModel.of({"dense": 1.0}),
                  terms=[t for t in fitted if t != "dense_low"]).model.as_dict()
    assert chain["expert_low"] == chain["dense_low"] == chain["dense"] > 1.0


def test_a_profile_file_before_the_all_to_all_pair_ties_it_to_its_fitted_all_reduces():
    """A profile written before ``alltoall`` existed: with ``allreduce`` among its fitted terms
    its all-to-alls take that coefficient (as they did), without it the link's 10 µs."""
    base = {"backend": "sglang", "coefficients": {"dense": 1.5, "allreduce": 3e-5,
                                                  "allreduce_bytes": 1.2}}
    fitted = Profile.from_dict({**base, "fitted_terms": ["dense", "allreduce",
                                                         "allreduce_bytes"]}, "p.yaml")
    assert fitted.model.as_dict()["alltoall"] == 3e-5
    assert fitted.model.as_dict()["alltoall_bytes"] == 1.2
    left = Profile.from_dict({**base, "fitted_terms": ["dense"]}, "p.yaml").model.as_dict()
    assert (left["alltoall"], left["alltoall_bytes"]) == (10e-6, 1.0)


def test_calibrate_writes_a_profile_with_domain_bands_and_sources(tmp_path):
    rows = _measured(ROWS[:6])
    cal = calibrate(rows, "vllm", "synthetic", rounds=2, cv_rounds=1)
    p = cal.profile
    assert p.domain.gpus == ("h100-sxm",) and p.domain.tensor_parallel == (1, 2)
    assert p.domain.concurrency == (2, 8) and p.domain.input_tokens == (512, 2048)
    assert p.domain.attention == ("gqa",) and p.domain.routed_experts == (0, 0)  # Llama-3.1-8B
    assert p.domain.attention_dp == (1, 1)  # no row ran attention data parallelism
    assert p.sources[0]["file"] == "synthetic" and p.sources[0]["rows"] == 6
    assert set(p.bands) == {"ttft", "tpot"}
    path = tmp_path / "synthetic.yaml"
    p.save(path)
    again = load_profile(str(path))
    assert again.model.as_dict() == pytest.approx(p.model.as_dict(), rel=1e-5)
    assert again.domain == p.domain


def test_bands_are_the_measured_over_predicted_quantiles():
    """Ratios 0.5, 0.8, 1.0, 1.25, 2.0 (measured/predicted): the 10th and 90th percentiles
    by linear interpolation are 0.62 and 1.7."""
    preds = []
    for ratio in (0.5, 0.8, 1.0, 1.25, 2.0):
        m = _row(1, 512, 32, 2)
        row = Measurement(m.source, m.backend, "", m.model, m.gpu, m.weights, 1, 512, 32,
                          m.harness, mean_ttft_s=ratio, mean_tpot_s=ratio)
        preds.append(Prediction(row, 1.0, 1.0, 0.0))
    b = bands(preds)["ttft"]
    assert b.ratio_low == pytest.approx(0.5 + 0.4 * 0.3)  # 10 % of the way: 0.62
    assert b.ratio_high == pytest.approx(1.25 + 0.6 * 0.75)  # 1.7
    assert b.of(2.0) == pytest.approx((1.24, 3.4))
    r = report(preds)
    # errors predicted/measured − 1: +1, +0.25, 0, −0.2, −0.5 → |e| median 0.25
    assert r.overall["ttft"].median_abs_error == pytest.approx(0.25)
    assert r.overall["ttft"].bias == pytest.approx(0.0)
    assert r.overall["ttft"].within_10 == pytest.approx(0.2)
    assert r.overall["ttft"].within_25 == pytest.approx(0.6)


def test_shipped_profiles_load_and_record_their_sources():
    for name in ("vllm", "sglang", "trtllm"):
        p = load_profile(name)
        assert isinstance(p, Profile) and p.backend == name
        assert p.sources and p.sources[0]["licence"] == "Apache-2.0"
        assert p.domain.gpus == ("h100-sxm",)


def test_shipped_profiles_are_read_once_and_profile_files_each_time(tmp_path):
    """A shipped profile is package data: one object per process (a planner builds hundreds of
    scenarios on it). A profile file may change under a long-lived process (``napkin web``):
    it is read again, so a new request_s shows."""
    assert load_profile("vllm") is load_profile("vllm")
    path = tmp_path / "mine.yaml"
    text = (files("napkin.catalog") / "profiles" / "vllm.yaml").read_text()
    path.write_text(text)
    first = load_profile(str(path))
    assert first.model == load_profile("vllm").model
    key = next(line for line in text.splitlines() if line.strip().startswith("request_s:"))
    path.write_text(text.replace(key, key.split(":")[0] + ": 0.5"))
    assert load_profile(str(path)).model.request_s == 0.5 != first.model.request_s


# Hold-out medians recorded when the shipped profiles were fitted (benchmarks/fit_profiles.py):
# a regression gate that may only tighten. TPOT meets the 10 % target and TTFT its 15 %
# on all three backends.
GATE = {"vllm": {"ttft": 0.089, "tpot": 0.0495}, "sglang": {"ttft": 0.096, "tpot": 0.062},
        "trtllm": {"ttft": 0.1275, "tpot": 0.051}}
"""Hold-out median |error| of the shipped profiles. Moved four times. First, 2026-12-01, for
corrected inputs rather than a model change: vLLM's InferenceMAX rows now run with the FP8 KV
cache InferenceMAX's scripts set (TTFT 0.158 → 0.162, TPOT 0.042 → 0.059), and TensorRT-LLM's
harness counts half a completion interval into TTFT (TTFT 0.260 → 0.194, TPOT 0.058 →
0.062); both improved the external check (docs/calibration.md). Second, 2026-12-01, vLLM's
fit without the all-reduce-bytes term (``benchmarks/fit_profiles.py`` FITTED_TERMS): TTFT
0.162 → 0.105, TPOT 0.059 → 0.070 — TTFT was the one over its target (15 %), TPOT stays
within its 10 %. Third, 2026-12-02, tightened: TensorRT-LLM's FP8 rows with the FP8 KV cache
aiconfigurator models them with and FP8 matmuls with their own coefficient (``dense_low``):
TTFT 0.194 → 0.184, TPOT 0.062 → 0.049. Fourth, 2026-12-02, TensorRT-LLM with the
``eager_layer`` floor (a step with a prefill chunk runs eagerly: its host time bounds it) and
its Llama-3.1-8B campaign counting the one completion interval its rows show
(``benchmarks/fit_profiles.py`` CAMPAIGNS): TTFT 0.184 → 0.144, TPOT 0.049 → 0.054 — TTFT was
the one over its target (15 %), TPOT stays within its 10 %. Fifth, 2026-12-02, the
TensorRT-LLM fit adds 125 H100 rows of the MoE Qwen3-235B-A22B with a ``moe_layer`` term, and
expert parallelism is timed with all-reduces (as the engines run it) instead of all-to-alls: its
bands now cover 482 rows, TTFT 0.144 → 0.135, TPOT 0.054 → 0.066 (the MoE rows' TPOT is
looser); on the 357 dense rows alone (``napkin validate h100``) 0.139 / 0.052, tighter than
before on both. Sixth, 2026-12-02, vLLM's per-token time per layer (``token_layer``) instead of
per token: TTFT 0.104 → 0.113, TPOT 0.069 → 0.060. Leave-one-group-out cannot see what it
fixes: every held-out group's model is in the other groups, while a per-token time fitted on
64- and 80-layer models made every shallower model's prefill too slow (Llama-3.1-8B on H200:
TTFT +327 % → +168 %; the external vLLM rows 23.3 % → 18.5 % TTFT, TPOT level); both metrics
stay within their targets. Seventh, 2026-12-02, tightened: TensorRT-LLM's Qwen3-32B and
Qwen3-235B-A22B campaigns carry fitted harness latencies (85 ms and 136 ms) instead of half a
completion interval and a hand-screened 100 ms: TTFT 0.135 → 0.125, TPOT 0.066 → 0.050.
Eighth, 2026-12-02, corrected inputs: SGLang rows of 0.5.3 and later replay with the chunk and
``mem_fraction_static`` their server derives from the GPU's memory (sgl-project/sglang#10975;
six of the 84 H100 rows are 0.5.8.post1: 0.835–0.818 of memory instead of 0.88), refitted: TTFT
0.103 → 0.095, TPOT 0.059 → 0.061. Ninth, 2026-12-04, more rows and a term: vLLM fitted with
its 43 gpt-oss-120b rows and a weight-only matmul coefficient (``dense_w4a16``), hold-out over
181 rows TTFT 0.112 → 0.089, TPOT 0.060 → 0.048 (tightened); TensorRT-LLM with its 5
gpt-oss-120b rows, which alone set that coefficient, so held out as one group they are timed at
``dense`` and read 70 % / 54 % short: over 487 rows TTFT 0.126 → 0.1274, while the 482 rows of
before hold out at 0.1243 / 0.0488, as they did (0.124 / 0.049). Tenth, 2026-12-05, corrected
inputs: vLLM's gpt-oss-120b rows read with the BF16 KV cache ``gptoss_fp4_h100.sh`` runs (it sets
no ``--kv-cache-dtype``; they had the FP8 one of every dated FP8/FP4 row) and its token budget
and request cap, refitted: TTFT 0.0885 → 0.0880, TPOT 0.0477 → 0.0494."""


@pytest.mark.parametrize("name", sorted(GATE))
def test_shipped_profile_holdout_errors_do_not_regress(name):
    p = load_profile(name)
    for metric, limit in GATE[name].items():
        assert p.bands[metric].median_abs_error <= limit


def _scored_as_training_error(name: str, backend: str, gate: dict[str, float],
                              rows: int) -> None:
    """``napkin validate <name>`` scores the shipped ``backend`` profile on the set's ``rows``
    rows, says it is their training error, and stays within ``gate``."""
    from napkin.api import calibration as api

    ((label, how, rep),) = api.validate(name).value
    assert label == f"{name} · {backend}" and "training error" in how
    for metric, limit in gate.items():
        assert rep.overall[metric].rows == rows
        assert rep.overall[metric].median_abs_error <= limit


MOE_GATE = {"ttft": 0.056, "tpot": 0.026}
"""Median |error| of the vLLM profile on the gpt-oss-120b rows (a regression gate that may only
tighten). Until 2026-12-04 no profile was fitted on them and they checked the dense fit: 0.192 /
0.055 at the end (TTFT bias −16 %: the prefill of its MXFP4 experts, unpacked to BF16 on
Hopper, ran at the dense BF16 coefficient), after the per-token time per layer, the 15 µs
``moe_layer`` every fit starts from and the parts the checkpoint keeps in BF16 had each moved
it. Since then vLLM's profile is fitted on them with the dense rows (the rules allow H100
InferenceMAX rows) and they carry its weight-only matmul coefficient, ``dense_w4a16`` (3.51,
against 1.45 for BF16); this is their training error, 0.0485 / 0.0206 (bias −1.1 % / +0.9 %),
and the profile's hold-out over all 181 rows (leave-one-TP-out for these) is in its bands.
Loosened once (2026-12-05) to 0.056 / 0.026 (0.0560 / 0.0260, bias −1.6 % / −0.2 %; ``dense_w4a16``
3.51 → 3.43) when the rows were read as their script ran them — a BF16 KV cache, not the FP8 one
every dated FP8/FP4 row had been given — a correction of the data, not of the model; the
hold-out over the 181 rows went 8.9 % / 4.8 % → 8.8 % / 4.9 %."""


def test_the_gptoss_vllm_set_is_scored_as_its_training_error():
    """``h100-moe``: 43 distinct vLLM 0.18.0 rows of gpt-oss-120b on H100 at TP 2, 4 and 8, run
    by InferenceMAX's client with ``gptoss_fp4_h100.sh``'s flags (a BF16 KV cache: the script
    sets no ``--kv-cache-dtype`` and gpt-oss's MXFP4 checkpoint declares none; its FP4 experts
    run W4A16 on Hopper); the vLLM profile is fitted on them with ``h100``, and napkin validate
    says so."""
    from napkin.validation.sets import FITTED, TRAINING, load_set

    rows = load_set("h100-moe")
    assert len(rows) == 43 and "h100-moe" not in FITTED and "h100-moe" in TRAINING
    assert {(m.backend, m.model, m.gpu, m.weights, m.kv_dtype) for m in rows} == {
        ("vllm", "gpt-oss-120b", "h100-sxm", "mxfp4", "bf16")}
    assert {(m.launch.max_num_seqs, m.launch.max_num_batched_tokens, m.launch.memory_fraction)
            for m in rows} == {(m.harness.concurrency, 8192, 0.9) for m in rows}
    assert {m.tensor_parallel for m in rows} == {2, 4, 8}
    assert all(m.harness.stated and m.harness.range_style == "below" for m in rows)
    _scored_as_training_error("h100-moe", "vllm", MOE_GATE, 43)
    assert load_profile("vllm").model.as_dict()["dense_w4a16"] > 2 * load_profile(
        "vllm").model.as_dict()["dense"]


MINIMAX_GATE = {"ttft": 0.159, "tpot": 0.063}
"""Median |error| of the shipped vLLM profile on the 30 H100 rows of MiniMax-M2.5 FP8 (vLLM
0.18.0, InferenceMAX, ``tp 4, ep 4``), which no profile is fitted on: 0.204 / 0.078 (bias
−20.4 % / −6.7 %) on 2026-12-05, a regression gate that may only tighten. Read as their script
ran them (BF16 KV; tensor parallelism, not attention DP) they had been 0.311 / 0.094 before, and
0.237 / 0.077 with the routed experts timed at vLLM's dense coefficient instead of its MoE
kernels' (the choice this set decided). Tightened the same day to 0.158 / 0.062 (bias −15.8 % /
+1.9 %): vLLM reads its FP8 experts at their kernels' 1.18 (``expert_weights`` held, the
weight-only experts' reads apart on ``expert_weights_w4a16``), which this set decided among
the screens in ``benchmarks/fit_profiles.py``."""


def test_the_minimax_vllm_set_is_held_out_and_read_as_its_script_ran_it():
    """``h100-minimax``: MiniMax-M2.5 on four H100s, ``minimaxm2.5_fp8_h100.sh`` (0.90 of
    memory, at most 256 requests, no ``--kv-cache-dtype``: a BF16 cache) as TP 4 with EP 4 —
    both exports, the 2026-04-06 one writing ``attention_dp_size`` 4 — scored under the shipped
    vLLM profile, which is not fitted on it. A token's KV, by hand from the config: 62 layers
    × 2 (K and V) × 8 KV heads × 128 × 2 B = 253,952 B, a quarter on each TP rank."""
    from napkin.api import calibration as api
    from napkin.catalog import load_model
    from napkin.validation.sets import FITTED, TRAINING, load_set

    rows = load_set("h100-minimax")
    assert len(rows) == 30 and "h100-minimax" not in FITTED + TRAINING
    assert {(m.backend, m.model, m.gpu, m.weights, m.kv_dtype, m.tensor_parallel,
             m.attention_data_parallel, m.expert_parallel_size) for m in rows} == {
        ("vllm", "minimax-m2.5", "h100-sxm", "fp8", "bf16", 4, 1, 4)}
    assert {(m.launch.max_num_seqs, m.launch.memory_fraction) for m in rows} == {(256, 0.9)}
    assert load_model("minimax-m2.5").kv_bytes_per_token(2) == 62 * 2 * 8 * 128 * 2 == 253_952
    ((label, how, rep),) = api.validate("h100-minimax").value
    assert label == "h100-minimax · vllm" and "not fitted on this set" in how
    for metric, limit in MINIMAX_GATE.items():
        assert rep.overall[metric].rows == 30
        assert rep.overall[metric].median_abs_error <= limit


GPTOSS_TRTLLM_GATE = {"ttft": 0.124, "tpot": 0.229}
"""Training error of the TensorRT-LLM profile on its 5 gpt-oss-120b H100 rows (1.3.0rc1,
4,000/1,000 tokens, 160–384 clients over 2–4 attention-data-parallel ranks; 2026-12-04), which
alone set its ``dense_w4a16`` (5.43: the W4A16 MoE at 18 % of the BF16 peak) and
``alltoall``; a regression gate that may only tighten (TPOT 25.4 → 25.6 % when the all-reduce
and all-to-all latency was held at the kernel's 3.45 µs instead of fitted at 1.5 µs: the TP
hold-out's gain). Before the
term (``dense`` for these matmuls) they read 70 % / 54 % short; one coefficient leaves ±20–30 %
between them. Tightened (2026-12-05) to 12.4 % / 22.9 % when the profile fitted a time per
all-to-all (221 µs; these rows' flat TPOT over 160–384 clients is a fixed cost a step) and
``dense_w4a16`` fell to 5.43; the same when that time became one a step (15.2 ms,
``alltoall_step``; the twenty-first session). Their hold-out is TensorRT-LLM's perf-overview rows
(``napkin validate trtllm-perf-overview``, ``tests/validation/test_perf_overview.py``)."""


def test_the_gptoss_trtllm_set_is_scored_as_its_training_error():
    """``h100-trtllm-gptoss``: the sample's 5 TensorRT-LLM rows of gpt-oss-120b on H100,
    labelled FP8 and read as the checkpoint's W4A16 path with a BF16 KV cache, replayed over
    attention data parallelism (MoE TP or TP × EP); fitted on, scored as training error."""
    from napkin.validation.sets import TRAINING, load_set

    rows = load_set("h100-trtllm-gptoss")
    assert len(rows) == 5 and "h100-trtllm-gptoss" in TRAINING
    assert {(m.backend, m.model, m.weights, m.kv_dtype) for m in rows} == {
        ("trtllm", "gpt-oss-120b", "mxfp4", "bf16")}
    assert {(m.tensor_parallel, m.attention_data_parallel) for m in rows} == {(1, 2), (1, 4)}
    _scored_as_training_error("h100-trtllm-gptoss", "trtllm", GPTOSS_TRTLLM_GATE, 5)


MOE_TRAINING_GATE = {"ttft": 0.109, "tpot": 0.0873}
"""Training error of the TensorRT-LLM profile on the Qwen3-235B-A22B rows it was fitted on
(2026-12-02; its hold-out is in the profile's bands): a regression gate that may only tighten.
The dense-fitted profile before them scored 32.8 % / 21.1 % on these rows. Tightened from
0.125 / 0.112 when the campaign's harness latency was fitted (136 ms) instead of set by hand
(100 ms): 0.110 / 0.090. Tightened again (2026-12-04) when the rows were replayed and fitted in
their layout — experts whole over the TP group, each step waiting for the busiest expert
rank — instead of as tensor parallelism: 0.1084 / 0.0869 (the fixed MoE-layer term fell from
13 µs to 0: the busiest rank's load and reads carry it). TPOT 0.0872 since the all-reduce
latency is held at the kernel's 3.45 µs (fitted: 1.5 µs), which took the leave-one-TP-out
hold-out from 12.6 % / 5.6 % to 11.8 % / 3.9 %. TPOT 0.08723 (from 0.08718) since the profile
fits a time per all-to-all of attention-DP layouts (2026-12-05; these rows have none, the
refit moved the shared coefficients in the 4th digit), which took the held-out perf-overview
H100 throughputs from 20.9 % to 11.7 % (``tests/validation/test_perf_overview.py``)."""


def test_the_trtllm_moe_set_is_scored_as_its_training_error():
    """``h100-trtllm-moe``: 125 TensorRT-LLM rows of Qwen3-235B-A22B-FP8 on H100, TP 4 and 8 with
    the experts over the whole group (replayed in that layout: the busiest expert rank's step);
    the TensorRT-LLM profile was fitted on them with ``h100``, and napkin validate says so."""
    from napkin.validation.sets import TRAINING, load_set

    rows = load_set("h100-trtllm-moe")
    assert len(rows) == 125 and "h100-trtllm-moe" in TRAINING
    assert {(m.backend, m.model, m.gpu, m.weights) for m in rows} == {
        ("trtllm", "qwen3-235b-a22b", "h100-sxm", "fp8")}
    assert {(m.tensor_parallel, m.expert_parallel_size) for m in rows} == {(4, 4), (8, 8)}
    assert load_profile("trtllm").domain.layouts == ("dp", "dp ep", "tp", "tp ep")
    _scored_as_training_error("h100-trtllm-moe", "trtllm", MOE_TRAINING_GATE, 125)


@pytest.mark.slow
def test_sglang_holdout_reproduces_the_shipped_profile():
    """The leave-one-group-out run napkin validate does reproduces the hold-out errors the
    shipped SGLang profile recorded (≈ 1 min on one core)."""
    from napkin.validation.calibrate import holdout
    from napkin.validation.sets import load_set

    p = load_profile("sglang")
    rows = [m for m in load_set("h100") if m.backend == "sglang"]
    rep = holdout(rows, p, jobs=2)  # folds in two processes: the same numbers
    for metric in ("ttft", "tpot"):
        assert rep.overall[metric].rows == p.bands[metric].rows
        assert rep.overall[metric].median_abs_error == pytest.approx(
            p.bands[metric].median_abs_error, abs=0.01)


def test_a_floor_that_binds_nowhere_goes_to_zero_and_other_idle_terms_keep_their_start():
    """Rows with no floor column (no step bound by it) and no all-reduce column (TP 1): the
    floor is not asked for, so 0; the all-reduce latency is not identified, so it keeps the
    start's value."""
    rows = [_obs(1.5e-3, dense=1e-3), _obs(3.0e-3, dense=2e-3)]
    start = StepModel.of({"dense": 1.0, "allreduce": 7e-6, "eager_layer": 0.5e-3})
    c = solve(rows, start).model.as_dict()
    assert c["dense"] == pytest.approx(1.5, rel=1e-3)
    assert c["eager_layer"] == 0.0 and c["allreduce"] == 7e-6


def test_a_harness_latency_is_subtracted_not_fitted():
    """Two TTFT rows whose engine time is all request latency (weight 1) measured 0.20 and
    0.30 s, with harness latencies of 0.15 and 0.25 s: request_s comes out 0.05 s exactly (the
    offsets are not scaled by any coefficient)."""
    x = np.zeros(len(TERMS) + 1)
    x[-1] = 1.0
    obs = [Observation("ttft", 0.20, x, 0.15), Observation("ttft", 0.30, x, 0.25)]
    assert solve(obs, StepModel.of({}, request_s=0.01), ["step"]).model.request_s == \
        pytest.approx(0.05, rel=1e-6)


def _ttft(measured_s: float, campaign: int = -1) -> Observation:
    """A TTFT row whose engine time is all request latency (weight 1; no prompt tokens)."""
    x = np.zeros(len(TERMS) + 2)
    x[len(TERMS)] = 1.0
    return Observation("ttft", measured_s, x, 0.0, campaign)


def test_a_campaign_latency_is_fitted_on_top_of_request_s():
    """Rows outside any campaign measure 0.05 s of request latency, campaign 0's rows 0.15 s:
    request_s 0.05 s and campaign 0's latency 0.10 s (the 1 % pull towards 0 moves it by less
    than 0.1 %); campaign 1 has no rows and keeps its start, 0.3 s."""
    obs = [_ttft(0.05), _ttft(0.05), _ttft(0.15, 0), _ttft(0.15, 0)]
    f = solve(obs, StepModel.of({}, request_s=0.01), ["step"], latencies_s=(0.02, 0.3))
    assert f.model.request_s == pytest.approx(0.05, rel=1e-3)
    assert f.latencies_s[0] == pytest.approx(0.10, rel=1e-3)
    assert f.latencies_s[1] == 0.3


def test_a_campaign_alone_leaves_its_common_latency_to_request_s():
    """Every row in one fitted campaign: the pull gives the shared 0.15 s to request_s, which
    every row carries, and leaves the campaign's own latency near 0 (the pull is weak, so the
    solver stops within a few ms of the tie-break; the sum is exact)."""
    obs = [_ttft(0.15, 0), _ttft(0.15, 0)]
    f = solve(obs, StepModel.of({}, request_s=0.01), ["step"], latencies_s=(0.05,))
    assert f.model.request_s + f.latencies_s[0] == pytest.approx(0.15, rel=1e-3)
    assert f.latencies_s[0] < 0.005


def test_calibrate_recovers_a_campaigns_harness_latency():
    """Measurements made by TRUE, with the Llama-3.1-8B rows of TP 2 taken 80 ms later by their
    harness: calibrated with that campaign's latency fitted (``latency_s=fit``), the profile
    writes 80 ms ± 2 ms into the campaign and request_s stays TRUE's 40 ms ± 2 ms; the profile
    then replays those rows within 2 %."""
    protocol = Protocol(ramp_cycles=0.0, requests_per_client=4, warmup_per_client=0)
    rows = []
    for m in ROWS:
        h = swap(protocol.harness(m.harness), latency_s=0.08 if m.tensor_parallel == 2 else 0)
        r = replay(swap(m, harness=h), fitted_timer(TRUE))
        rows.append(swap(m, harness=swap(m.harness, stated=False), mean_ttft_s=r.mean_ttft_s,
                         mean_tpot_s=r.mean_tpot_s, backend_version="2" if m.tensor_parallel
                         == 2 else "1"))
    campaign = parse_campaign("llama-3.1-8b@2:latency_s=fit", protocol)
    assert campaign.fit_latency and campaign.protocol.latency_s == 0
    cal = calibrate(rows, "vllm", protocol=protocol, campaigns=(campaign,), rounds=4)
    (fitted,) = campaigns_of(cal.profile.harness)
    assert fitted.fit_latency
    assert fitted.protocol.latency_s == pytest.approx(0.08, abs=2e-3)
    assert cal.profile.model.request_s == pytest.approx(0.04, abs=2e-3)
    for p in validate(rows, cal.profile).predictions:
        assert p.ttft_s == pytest.approx(p.row.mean_ttft_s, rel=0.02)


def test_sglang_launch_defaults_follow_the_gpu_from_0_5_3():
    """SGLang ≥ 0.5.3 (sgl-project/sglang#10975) derives its chunk and mem_fraction_static from
    the GPU's memory: reserved MiB = 512 + 1.5·chunk + 2·graph batch + 1,024·tp/8, at least
    10 GiB. B200 (183,359 MiB) at TP 8: chunk 16,384, graph batch 512, reserved 512 + 24,576 +
    1,024 + 1,024 = 27,136 → (183,359 − 27,136)/183,359 = 0.852; H100 (81,559 MiB) at TP 1:
    8,192, 256, 512 + 12,288 + 512 + 128 = 13,440 → 0.835. Earlier releases (and rows of no
    stated version) keep the 80 GB defaults, 8,192 and 0.88."""
    from napkin.catalog import load_accelerator
    from napkin.validation.replay import backend_defaults

    b200, h100 = (load_accelerator(g).device_memory_bytes for g in ("b200", "h100-sxm"))
    new = backend_defaults("sglang", "0.5.9", b200, 8)
    assert (new.max_num_batched_tokens, new.memory_fraction) == (16384, 0.852)
    assert backend_defaults("sglang", "0.5.10.post1", h100, 1).memory_fraction == 0.835
    for version in ("0.5.1.post1", "", "nightly-dev-20260216-d3bae71e"):
        old = backend_defaults("sglang", version, b200, 8)
        assert (old.max_num_batched_tokens, old.memory_fraction) == (8192, 0.88)
    assert backend_defaults("vllm", "0.12.0", b200, 8).memory_fraction == 0.9


def test_leave_one_tp_out_folds_hold_out_every_row_of_a_tp_together():
    """``by="tp"``: one fold per tensor-parallel size (the rows' TP 1 and 2), each predicting
    all of that TP's rows from a refit on the other's; every row predicted once."""
    from napkin.validation.fit import START, cross_validate

    rows = _measured(ROWS[:6])
    folds: list[str] = []
    preds = cross_validate(rows, START, rounds=1, progress=folds.append, by="tp")
    assert folds == ["fold 1/2: tp 1", "fold 2/2: tp 2"]
    assert sorted(p.row.source for p in preds) == sorted(m.source for m in rows)


LEAVE_ONE_TP_OUT = {"vllm": (0.1015, 0.0505), "trtllm": (0.1185, 0.0395),
                    "sglang": (0.0955, 0.0615)}
"""Leave-one-TP-out hold-out on the shipped H100 set (``napkin validate h100 --by tp``, about
three minutes on two cores), median |error| of TTFT and TPOT, 2026-12-04 (the printed figures'
upper rounding edges): a regression gate that may only tighten. The issue's target, 12 % / 8 %,
is met by all three: vLLM 10.1 % / 5.0 %, SGLang 9.5 % / 6.1 %, TensorRT-LLM 11.8 % / 3.9 % since
its ``allreduce`` is held at its kernel's latency (12.6 % / 5.6 % fitted, its TP-1 fold 13.0 % /
11.2 %: ``benchmarks/fit_profiles.py`` ALLREDUCE_HELD). Each fold predicts a TP size none of
its rows ran."""


@pytest.mark.slow
def test_leave_one_tp_out_hold_out_does_not_regress():
    from napkin.api import calibration as api

    for label, how, rep in api.validate("h100", by="tp").value:
        backend = label.split(" · ")[1]
        assert "leave-one-tp-out" in how
        ttft, tpot = LEAVE_ONE_TP_OUT[backend]
        assert rep.overall["ttft"].median_abs_error <= ttft
        assert rep.overall["tpot"].median_abs_error <= tpot


SPLITWISE_HOLD_OUT = {"gpu": (0.0965, 0.0245), "tp": (0.1095, 0.0505)}
"""``napkin validate splitwise --by gpu`` and ``--by tp`` (the ``vllm-0.2`` profile's refits;
seconds a run), median |error| of TTFT and TPOT, 2026-12-04: each GPU's rows (A100, H100)
predicted by a refit on the other's, each TP size's by a refit on the other two. The issue's
target 12 % / 8 % is met by both. A regression gate that may only tighten."""


@pytest.mark.parametrize("by", list(SPLITWISE_HOLD_OUT))
def test_leave_one_gpu_and_one_tp_out_on_splitwise(by):
    from napkin.api import calibration as api

    ((_, how, rep),) = api.validate("splitwise", by=by, jobs=1).value
    assert f"leave-one-{by}-out refits of profile vllm-0.2" in how
    assert rep.overall["ttft"].rows == rep.overall["tpot"].rows == 90
    ttft, tpot = SPLITWISE_HOLD_OUT[by]
    assert rep.overall["ttft"].median_abs_error <= ttft
    assert rep.overall["tpot"].median_abs_error <= tpot


@pytest.mark.slow
def test_leave_one_gpu_out_of_the_compiled_engine_profile():
    """``napkin validate trtllm-v0.17 --by gpu`` (about 20 s): each GPU's rows predicted by a
    refit on the other three, 2026-12-04: pooled 7.7 %; A100 4.9 %, H100 6.5 %, H200 6.5 %,
    L40S 21.5 % (bias +21.5 %: the only PCIe GPU, no NVLink between its ranks). A regression
    gate that may only tighten. It was 7.2 % (A100 4.1 %, L40S 19.7 %) before the fixed times
    followed the GPU's clock (A100 1.40×, L40S 0.79×), which took splitwise's
    leave-one-GPU-out from about 21 % / 18 % TTFT / TPOT to 9.6 % / 2.4 %."""
    from napkin.api import calibration as api

    ((_, how, rep),) = api.validate("trtllm-v0.17", by="gpu").value
    assert "leave-one-gpu-out refits of profile trtllm-compiled" in how
    assert rep.overall["throughput"].rows == 158
    assert rep.overall["throughput"].median_abs_error <= 0.0775
    assert rep.groups[("l40s",)]["throughput"].median_abs_error <= 0.2155
    assert all(rep.groups[(g,)]["throughput"].median_abs_error <= 0.0655
               for g in ("a100-80gb-sxm", "h100-sxm", "h200"))
