"""Engine releases, their execution generations, and what a profile says about them."""

import pytest

from napkin.calibration.profile import Domain, load_profile
from napkin.calibration.terms import FLOOR
from napkin.errors import NapkinError
from napkin.serving.scenario import Scenario, build
from napkin.specs.releases import eager_prefill, generation, release


@pytest.mark.parametrize(("text", "want"), [
    ("0.17", (0, 17)), ("v0.20.0", (0, 20, 0)), ("1.0.0rc3", (1, 0, 0)),
    ("0.5.10.post1", (0, 5, 10)), ("1.2.0rc6.post1", (1, 2, 0)), ("nightly-dev", None),
    ("", None)])
def test_release_reads_the_numeric_part(text, want):
    assert release(text) == want


@pytest.mark.parametrize(("backend", "version", "gen", "eager"), [
    ("trtllm", "0.17", "compiled TensorRT engines", False),
    ("trtllm", "0.21.0", "compiled TensorRT engines", False),
    ("trtllm", "1.0.0rc3", "PyTorch backend", True),
    ("vllm", "0.6.3.post1", "V0 engine", True),
    ("vllm", "0.8.0", "V1 engine", True),
    ("sglang", "0.5.9", None, True),
    ("trtllm", "", None, True)])
def test_generations(backend, version, gen, eager):
    """TensorRT-LLM's PyTorch backend is the default from 1.0 (compiled engines before); vLLM's
    V1 engine from 0.8.0; an unknown release is taken as current."""
    assert generation(backend, version) == gen
    assert eager_prefill(backend, version) == eager


def test_a_profile_names_the_releases_it_was_fitted_on():
    d = Domain(versions=("1.0.0rc3", "1.2.0rc6.post1", "1.3.0rc1"))
    assert d.version_outside("trtllm", "1.2.0rc3") == []
    assert d.version_outside("trtllm", "1.3.2") == []  # a patch of a fitted minor release
    assert d.version_outside("trtllm", "1.4.0") == [
        "engine version 1.4.0 (fitted on 1.0.0rc3–1.3.0rc1)"]
    assert d.version_outside("trtllm", "0.17") == [
        "engine version 0.17: compiled TensorRT engines (fitted on 1.0.0rc3–1.3.0rc1: "
        "PyTorch backend)"]
    assert d.version_outside("trtllm", "nightly") == []  # nothing to compare
    assert Domain().version_outside("trtllm", "0.17") == []  # nothing recorded


def test_shipped_profiles_know_their_releases():
    """Read from the profiles' sources where their domain predates the field: TensorRT-LLM's
    rows ran 1.0.0rc3–1.3.0rc1, vLLM's 0.12.0 and 0.18.0."""
    assert load_profile("trtllm").domain.versions == ("1.0.0rc3", "1.2.0rc6.post1", "1.3.0rc1")
    assert {"0.12.0", "0.18.0"} <= set(load_profile("vllm").domain.versions)


def _trtllm(version: str | None) -> Scenario:
    engine = {"backend": "trtllm", **({"version": version} if version else {})}
    return Scenario.model_validate({
        "name": "v", "model": "llama-3.1-8b", "gpu": "h100-sxm", "calibration": "auto",
        "engine": engine, "workload": {"seed": 0, "classes": {"a": {
            "input_tokens": 512, "output_tokens": 16}},
            "arrivals": {"kind": "poisson", "rate_per_s": 2, "num_requests": 20}}})


def test_a_scenarios_engine_version_warns_and_sets_the_eager_floor():
    """TensorRT-LLM 0.17 runs compiled engines: the 1.x profile, named, warns and its
    eager-prefill floor (``eager_layer`` × layers) does not apply; 1.2 is inside and keeps it;
    ``calibration: auto`` picks the compiled-engine profile for 0.17, inside its releases."""
    from pathlib import Path

    def named(version: str | None) -> Scenario:
        return _trtllm(version).model_copy(update={"calibration": "trtllm"})

    old, new = build(named("0.17"), Path(".")), build(named("1.2.0"), Path("."))
    assert any("engine version 0.17: compiled TensorRT engines" in w for w in old.warnings)
    assert not any("engine version" in w for w in new.warnings)
    floor = load_profile("trtllm").model.coefficients[FLOOR]
    assert floor > 0
    assert old.engines()[0].timer.model.coefficients[FLOOR] == 0
    assert new.engines()[0].timer.model.coefficients[FLOOR] == floor
    assert build(named(None), Path(".")).engines()[0].timer.model.coefficients[FLOOR] == floor
    auto = build(_trtllm("0.17"), Path("."))
    assert auto.profile.name == "trtllm-compiled"
    assert not any("engine version" in w for w in auto.warnings)


@pytest.mark.parametrize("bad", ["latest", "1" * 70, "1.0 rc", "true", "-1"])
def test_a_bad_engine_version_names_the_field(tmp_path, bad):
    """One error line naming ``engine.version`` and what a release looks like (a number such
    as 0.17, which YAML reads as one, is taken as its text)."""
    from napkin.serving.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(_trtllm(None).model_dump_json(exclude_defaults=True))
    with pytest.raises(NapkinError, match=r"field engine\.version: .*(a release such as "
                       r"0\.12\.0|valid string)"):
        load_scenario(path, [f"engine.version={bad}"])
    scenario, _ = load_scenario(path, ["engine.version=0.17"])
    assert scenario.engine.version == "0.17"


def test_auto_picks_the_compiled_engine_profile_for_old_tensorrt_llm():
    from napkin.calibration.profile import auto_profile

    assert auto_profile("trtllm", "0.17") == "trtllm-compiled"
    assert auto_profile("trtllm", "1.2.0rc6") == "trtllm"
    assert auto_profile("trtllm", None) == "trtllm"
    assert auto_profile("vllm", "0.6.3") == "vllm"  # no profile of 0.3–0.7: the V1 one warns
    assert auto_profile("vllm", "0.2.7") == "vllm-0.2"  # eager steps, NCCL's ring all-reduces
    assert auto_profile("vllm", "0.3.0") == "vllm"
    assert build(_trtllm("0.17"), __import__("pathlib").Path(".")).profile.name == \
        "trtllm-compiled"


def test_the_v017_rows_carry_trtllm_benchs_settings():
    """Llama-3.1-8B FP8 on one H100, 128/128: KV 32 · 2 · 8 · 128 · 1 B = 64 KiB a token; the
    heuristic's memory 81,559 MiB (79.65 GiB) − 8.03e9 B of weights (7.48 GiB) = 72.2 GiB ×
    0.95 / (64 KiB · 256 tokens) ≈ 4,180 requests → capped at 4,096 (a multiple of 256 above
    1,024), a token budget of 4,096 · (1 + 128/128) = 8,192; chunked prefill off."""
    from napkin.validation.trtllm_bench import v017_throughput_rows

    row = next(m for m in v017_throughput_rows()
               if (m.gpu, m.model, m.tensor_parallel, m.input_tokens, m.output_tokens)
               == ("h100-sxm", "llama-3.1-8b", 1, 128, 128))
    assert (row.backend, row.backend_version, row.weights, row.kv_dtype) == \
        ("trtllm", "0.17", "fp8", "fp8")
    assert row.output_tokens_per_s == pytest.approx(28836.77)
    assert row.launch is not None
    assert (row.launch.max_num_seqs, row.launch.max_num_batched_tokens,
            row.launch.chunked_prefill) == (4096, 8192, False)
    assert row.harness.kind == "burst" and row.harness.num_requests == 1000


def test_the_compiled_engine_profile_holds_out_within_its_gate():
    """Fitted on v0.17's 158 rows (H100, H200, L40S, A100): held out by (GPU, model, TP) its
    throughput is within 7.5 % at the median (2026-12-04; leave-one-GPU-out 6.4–10.1 %, L40S
    18.8 %: ``benchmarks/fit_profiles.py`` COMPILED_TERMS); it knows it ran 0.17."""
    p = load_profile("trtllm-compiled")
    assert p.backend == "trtllm" and p.domain.versions == ("0.17",)
    band = p.bands["throughput"]
    assert band.rows == 158 and band.median_abs_error <= 0.075
    assert p.model.coefficients[FLOOR] == 0
