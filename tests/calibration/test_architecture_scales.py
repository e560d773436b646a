"""A profile's per-architecture factors (``architecture_scales``): applied by hand to the
coefficients of a step on a GPU of that architecture and to nothing else, read from and written
to a profile file with bad values refused in one line, used by every path that times a step on
a GPU (scenarios, replays, one-call predictions), and traced to the kernel tables they come
from."""

import pytest
import yaml

from napkin.calibration.basis import StepModel
from napkin.calibration.moe_kernels import architecture_scales, read_moe_kernels
from napkin.calibration.profile import Profile, load_profile
from napkin.errors import NapkinError
from napkin.validation.fit import fitted_timer

SCALES = (("blackwell", (("expert", 1.5), ("expert_low", 2.0))),)


def _model() -> StepModel:
    m = StepModel.of({"dense": 1.2, "dense_low": 1.8, "weights": 1.1, "expert": 3.0,
                      "expert_low": 2.5, "step": 4e-3})
    return StepModel(m.coefficients, 0.05, architecture_scales=SCALES)


def test_on_scales_named_coefficients_of_that_architecture_only():
    m = _model()
    b = m.on("blackwell").as_dict()
    assert b["expert"] == 3.0 * 1.5 and b["expert_low"] == 2.5 * 2.0
    assert {k: v for k, v in b.items() if k not in ("expert", "expert_low")} == {
        k: v for k, v in m.as_dict().items() if k not in ("expert", "expert_low")}
    assert m.on("blackwell").request_s == 0.05 and m.on("blackwell").architecture_scales == ()
    assert m.on("hopper") is m and m.on("") is m
    assert m.scaled({"dense": 2.0}).as_dict()["dense"] == 2.4


@pytest.mark.parametrize(("scales", "message"), [
    ((("blackwell", (("nope", 1.5),)),), "architecture_scales.blackwell: unknown term 'nope'"),
    ((("blackwell", (("expert", 0.0),)),), "architecture_scales.blackwell.expert: must be"),
    ((("blackwell", (("expert", float("inf")),)),), "must be finite and > 0"),
    ((("blackwell", (("expert", float("nan")),)),), "must be finite and > 0"),
])
def test_bad_scales_are_one_error(scales, message):
    with pytest.raises(NapkinError, match=message):
        StepModel(StepModel.of({}).coefficients, architecture_scales=scales)


def test_a_profile_file_round_trips_its_scales(tmp_path):
    shipped = load_profile("sglang")
    path = tmp_path / "p.yaml"
    shipped.save(path)
    again = load_profile(str(path))
    assert again.model.architecture_scales == shipped.model.architecture_scales
    assert dict(shipped.model.architecture_scales)["blackwell"]  # the shipped one has some


@pytest.mark.parametrize(("value", "message"), [
    ([1, 2], "architecture_scales: must map an architecture"),
    ({"blackwell": {}}, "architecture_scales: must map an architecture"),
    ({"blackwell": {"expert": "x"}}, "architecture_scales: every factor must be a number"),
    ({"blackwell": {"expert": -1}}, "architecture_scales.blackwell.expert: must be finite"),
])
def test_a_bad_scales_field_in_a_profile_file_is_one_error(tmp_path, value, message):
    data = load_profile("sglang").to_dict()
    data["architecture_scales"] = value
    with pytest.raises(NapkinError, match=f"^p.yaml: {message}") as e:
        Profile.from_dict(yaml.safe_load(yaml.safe_dump(data)), "p.yaml")
    assert "coefficients are" not in str(e.value)  # the field's own error, not the catch-all


def test_every_timing_path_takes_the_gpus_architecture(qwen3_8b):
    """A replay's timer and a scenario's on B200 carry the scaled coefficients; on H100 the
    profile's own."""
    from napkin.accounting.forward import Precision
    from napkin.catalog import load_accelerator
    from napkin.serving.engine_spec import EngineSpec

    m = _model()
    spec = EngineSpec(num_blocks=100)
    for gpu, expert in (("b200", 3.0 * 1.5), ("h100-sxm", 3.0)):
        timer = fitted_timer(m)(qwen3_8b, load_accelerator(gpu), Precision.of("bf16"), spec)
        assert timer.model.as_dict()["expert"] == expert
        assert timer.model.as_dict()["dense"] == 1.2


def test_a_b200_scenario_times_the_experts_with_the_scaled_coefficients(tmp_path):
    from napkin.serving.scenario import Scenario, build

    base = {"name": "s", "model": "qwen3-30b-a3b", "calibration": "sglang",
            "workload": {"seed": 0, "classes": {"c": {"input_tokens": 512, "output_tokens": 4}},
                         "arrivals": {"kind": "poisson", "rate_per_s": 1, "num_requests": 2}}}
    shipped = load_profile("sglang").model
    for gpu, want in (("b200", shipped.on("blackwell")), ("h100-sxm", shipped)):
        built = build(Scenario.model_validate({**base, "gpu": gpu}), tmp_path)
        timer = built._timer(built.spec, built.layout)
        assert timer is not None and timer.model.coefficients == want.coefficients
    b = dict(dict(shipped.architecture_scales)["blackwell"])
    assert b["expert_low"] > 1  # so the B200 timer's differs from the H100 one's
    assert shipped.on("blackwell").as_dict()["expert_low"] == pytest.approx(
        shipped.as_dict()["expert_low"] * b["expert_low"])


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_shipped_scales_are_the_kernel_tables_ratio(engine):
    """Each shipped profile's Blackwell factors are its engine's B200 kernel fit over its H100
    one (four significant digits in the file)."""
    h = [r for r in read_moe_kernels() if r.engine == engine]
    b = [r for r in read_moe_kernels(gpu="b200") if r.engine == engine]
    want = architecture_scales(h, b)
    got = {t: v for t, v in dict(dict(load_profile(engine).model.architecture_scales)[
        "blackwell"]).items()
        if t not in ("mla_layer", "dsa_layer")}  # (the block tables': test_mla_blocks.py)
    assert set(got) == set(want) == {"expert", "expert_low"}
    for t, v in want.items():
        assert got[t] == pytest.approx(v, rel=1e-3)


def test_one_call_predictions_take_the_gpus_architecture():
    """``calibrated_decode`` under a profile with Blackwell factors: a MoE decode step on B200
    is the step under the scaled coefficients (longer: its experts' matmuls run slower); on
    H100 the profile's own."""
    from dataclasses import replace

    from napkin.accounting.forward import Precision
    from napkin.calibration.predict import calibrated_decode
    from napkin.catalog import load_accelerator, load_model

    shipped = load_profile("sglang")
    plain = replace(shipped, model=replace(shipped.model, architecture_scales=()))
    scaled_on_b200 = replace(shipped, model=shipped.model.on("blackwell"))
    spec, fp8 = load_model("qwen3-30b-a3b"), Precision.of("fp8")
    for gpu in ("b200", "h100-sxm"):
        acc = load_accelerator(gpu)
        got = calibrated_decode(shipped, spec, acc, fp8, [64], 2048)[0].step_s
        base = calibrated_decode(plain, spec, acc, fp8, [64], 2048)[0].step_s
        if gpu == "b200":
            want = calibrated_decode(scaled_on_b200, spec, acc, fp8, [64], 2048)[0].step_s
            assert got == want and got > base
        else:
            assert got == base


def test_the_profile_table_prints_the_factors():
    from napkin.report.calib_views import profile_section

    rows = dict(profile_section(load_profile("sglang")).rows)
    assert rows["on blackwell GPUs"] == "expert × 1.9, expert_low × 1.444, mla_layer × 1.337"
