"""Engine releases, their execution generations, and what a profile says about them."""

import pytest

from napkin.calibration.basis import FLOOR
from napkin.calibration.profile import Domain, load_profile
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
    """TensorRT-LLM 0.17 runs compiled engines: the profile (fitted on the PyTorch backend) warns,
    and its eager-prefill floor (``eager_layer`` × layers) does not apply; 1.2 is inside and
    keeps it."""
    from pathlib import Path

    old, new = build(_trtllm("0.17"), Path(".")), build(_trtllm("1.2.0"), Path("."))
    assert any("engine version 0.17: compiled TensorRT engines" in w for w in old.warnings)
    assert not any("engine version" in w for w in new.warnings)
    floor = load_profile("trtllm").model.coefficients[FLOOR]
    assert floor > 0
    assert old.engines()[0].timer.model.coefficients[FLOOR] == 0
    assert new.engines()[0].timer.model.coefficients[FLOOR] == floor
    assert build(_trtllm(None), Path(".")).engines()[0].timer.model.coefficients[FLOOR] == floor


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
