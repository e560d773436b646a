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


def test_c04_an_integer_beyond_float_is_refused_by_name():
    with pytest.raises(NapkinError) as e:
        napkin.flops("qwen3-0.6b", tokens=10**400)
    assert str(e.value) == ("tokens: integers must be at most 9,007,199,254,740,992 in "
                            "magnitude, got an integer of 401 digits (int)")


@pytest.mark.parametrize(("call", "message"), [
    (lambda: napkin.call("qwen3-0.6b", new="16", gpu="h100-sxm"),
     "new: must be a valid integer, got '16' (str)"),
    (lambda: napkin.load_model(5), "model: must be str or ModelSpec, got 5 (int)"),
    (lambda: napkin.deployment("qwen3-0.6b", "h100-sxm", mfu="0.5"),
     "mfu: must be a valid number, got '0.5' (str)"),
    (lambda: napkin.simulate("x.yaml", seed=1.5), "seed: must be a valid integer, got 1.5 "
                                                   "(float)"),
    (lambda: napkin.call("qwen3-0.6b", new=16, batch=True),
     "batch: must be a valid integer, got True (bool)"),
    (lambda: napkin.call("qwen3-0.6b", new=16, mbu=float("nan")),
     "mbu: must be a finite number, got nan (float)"),
    (lambda: napkin.call("qwen3-0.6b", news=16), None),
])
def test_c06_wrong_types_are_refused_at_the_boundary(call, message):
    with pytest.raises(NapkinError) as e:
        call()
    if message is None:
        assert str(e.value).startswith("news: not an argument of napkin.call; allowed: model, ")
    else:
        assert str(e.value) == message


def test_h06_replicas_are_bounded(cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    line = _one_line(*cli("serve", "simulate", str(path), "--set", "engine.replicas=1000000"))
    assert line == (f"napkin: error: {path}: field engine.replicas: Input should be less than "
                    "or equal to 10000 (got 1000000)")


def test_s14_a_load_scaling_the_workload_below_its_minimum_is_refused(cli, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SMALL)
    line = _one_line(*cli("serve", "sweep", str(path), "--rates", "1e-308"))
    assert line.startswith("napkin: error: rates: a load of 1e-308 requests/s cannot be "
                           "simulated: load factor ")
    assert "field arrivals.rate_per_s: Input should be greater than or equal to" in line


def test_s17_plan_jobs_and_top_have_the_cli_s_bounds(tmp_path):
    from napkin.api.planning import MAX_JOBS, MAX_TOP

    for kwargs, text in (({"jobs": 100_000}, f"jobs: must be less than or equal to {MAX_JOBS}, "
                                             "got 100000 (int)"),
                         ({"top": 10**9}, f"top: must be less than or equal to {MAX_TOP}, got "
                                          "1000000000 (int)")):
        with pytest.raises(NapkinError) as e:
            napkin.plan(tmp_path / "p.yaml", **kwargs)
        assert str(e.value) == text


def test_u12_measurement_errors_name_the_file_s_column(cli, tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,"
                    "mean_ttft_ms,mean_tpot_ms\n"
                    "vllm,llama-3.1-8b,h100-sxm,bf16,1,512,32,closed_loop,100001,60,7.5\n")
    line = _one_line(*cli("validate", str(path), "--calibration", "vllm", "--jobs", "1"))
    assert line == (f"napkin: error: {path} line 2: load: 100,001 clients; a closed loop "
                    "holds at most 100,000")


@pytest.mark.parametrize(("args", "field"), [
    (["rl", "qwen3-0.6b", "--prompt-len", "128", "--gen-len", "64", "--teacher", "nope"],
     "teacher"),
    (["rl", "qwen3-0.6b", "--prompt-len", "128", "--gen-len", "64", "--reward-model", "nope"],
     "reward_model"),
    (["media", "audio", "--slow", "nope"], "slow"),
    (["media", "audio", "--fast", "nope"], "fast"),
])
def test_u15_a_second_model_is_named_as_given(cli, args, field):
    line = _one_line(*cli(*args))
    assert line.startswith(f"napkin: error: {field}: unknown model 'nope'")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="no /proc on this machine")
@pytest.mark.parametrize("args", [
    ["serve", "simulate", "examples/chapter-3-1-uniform.yaml", "--plot", "/proc/x.png"],
    ["serve", "simulate", "examples/chapter-3-1-uniform.yaml", "--export", "/proc"],
])
def test_a_folder_that_takes_no_files_is_one_line(cli, args):
    """``/proc`` exists and passes the writable check (as root) but takes no new file: the
    write fails as one line naming the option, and nothing is left behind."""
    line = _one_line(*cli(*args))
    assert "/proc" in line and ("plot" in line or "export" in line), line


def test_ced_with_no_layers_is_refused(cli):
    line = _one_line(*cli("ced", "--encoder-layers", "0", "--decoder-layers", "0"))
    assert line == ("napkin: error: encoder-layers: with decoder-layers must count at least "
                    "one layer, got 0 and 0")


def test_fluid_capacity_is_named_as_its_option(cli):
    line = _one_line(*cli("serve", "fluid", "examples/chapter-3-1-shifted.workload.yaml",
                          "--capacity-steps-s", "-5"))
    assert line == ("napkin: error: capacity-steps-s: must be > 0 decode steps per second, "
                    "got -5")


def test_pass_at_k_samples_are_bounded():
    """pass@k's product runs over up to n terms: n is at most 10,000,000 (found by the long
    API fuzz: n = c = k = 2^53 ran for minutes)."""
    with pytest.raises(NapkinError, match=r"^pass_at_k: n must be an integer in \[1, 10000000\]"):
        napkin.eval_passk(n=2**53, c=2**53, k=2**53)


def test_sweep_seeds_are_bounded():
    """A sweep's seeds became ``tuple(range(seeds))``: 2^31 from a web form filled the machine's
    memory; at most 32, as the CLI's ``--seeds``."""
    with pytest.raises(NapkinError) as e:
        napkin.sweep("examples/chapter-3-1-uniform.yaml", seeds=2**31)
    assert str(e.value) == "seeds: must be less than or equal to 32, got 2147483648 (int)"
