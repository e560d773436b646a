"""The bad inputs of ``shared/reproducers/`` (one cause each), rebuilt here: each gives one
error line naming the user's field, exit status 2, no traceback (or the right answer)."""

import subprocess
import sys
from pathlib import Path

import pytest

import napkin
from napkin.errors import NapkinError

SMALL = """name: small
model: qwen3-0.6b
gpu: h100-sxm
engine: {max_num_seqs: 16, kv_pool_gib: 2}
workload:
  seed: 1
  classes: {a: {input_tokens: 256, output_tokens: 16}}
  arrivals: {kind: poisson, rate_per_s: 20, num_requests: 20}
"""


def _one_line(code: int, out: str, err: str) -> str:
    assert code == 2, (code, out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def test_c01_yaml_nested_50000_deep_is_refused_not_a_crash(tmp_path):
    """libyaml's C parser recursed once per level and died (SIGSEGV); the depth is measured
    first. In a subprocess: a regression would kill the test run."""
    path = tmp_path / "p.yaml"
    path.write_text("a: " + "[" * 50_000 + "\n")
    r = subprocess.run([str(Path(sys.executable).parent / "napkin"), "plan", str(path)],
                       capture_output=True, text=True, timeout=60, check=False)
    line = _one_line(r.returncode, r.stdout, r.stderr)
    assert line == (f"napkin: error: {path}: nested about 50,001 levels deep; at most 200 "
                    "are read")


@pytest.mark.parametrize("text", ["[" * 100_000, "{\"a\": " * 5_000 + "1" + "}" * 5_000])
def test_c02_deep_json_measurements_are_refused(cli, tmp_path, text):
    path = tmp_path / "v.json"
    path.write_text(text)
    line = _one_line(*cli("validate", str(path), "--calibration", "vllm", "--gpu", "h100-sxm"))
    assert "levels deep; at most 200 are read" in line and line.startswith(
        f"napkin: error: {path}: nested about")


@pytest.mark.parametrize("where", ["/dev/zero", "/etc"])
def test_files_must_be_regular_files(cli, where):
    line = _one_line(*cli("plan", where))
    assert line in ("napkin: error: plan: '/dev/zero' is not a regular file",
                    "napkin: error: plan: '/etc' is a folder")


def test_a_deep_override_value_is_refused(cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    line = _one_line(*cli("serve", "simulate", str(path), "--set",
                          "engine.max_num_seqs=" + "[" * 500))
    assert line == ("napkin: error: set: engine.max_num_seqs: nested about 501 levels deep; "
                    "at most 200 are read")


def test_u10_prefill_tp_is_named_as_given(cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    line = _one_line(*cli("serve", "simulate", str(path), "--set",
                          "engine.disaggregated={prefill_replicas: 1, decode_replicas: 1, "
                          "prefill_tensor_parallel: 3}"))
    assert line.startswith("napkin: error: engine.disaggregated.prefill_tensor_parallel: 3 ")


def test_api_errors_are_napkin_errors():
    with pytest.raises(NapkinError):
        napkin.call("qwen3-0.6b", new=0)
