"""Bad input to the calibration screening scripts (``benchmarks/fit_profiles.py --drop/--add/
--kernel-terms/--no-kernels/--out``, ``benchmarks/screen_trtllm_throughput.py --add/--kv`` and
``benchmarks/external_check.py --profile/--jobs`` and its sample file): each case exits 2
before any fitting or replay, with an error line naming the option or file, and no traceback;
so does ``benchmarks/serve_speed.py`` (and ``compiled_speed.py``) with a request count that is
not a whole number >= 1, and
``benchmarks/fit_frontend.py`` with a bad backend, set, grouping or candidate, and
``benchmarks/serve_speed_vs.py`` with a revision that is not a commit, a scenario kind it does
not know, a count that is not a whole number >= 1, a ``--scale`` outside (0, 1],
``--instructions`` with ``--cpu`` or
``--million`` or without valgrind (before extracting or running anything),
and ``benchmarks/check_disagg_h100.py`` with a sample that is no file or lacks its columns,
``benchmarks/extract_moe_kernels.py`` with no repository, a GPU napkin does not know, an
``--out`` that is a folder or in none, or a table the repository lacks, and
``benchmarks/check_moe_kernels.py`` with a GPU it has no table for, and
``benchmarks/check_mla_modules.py`` with no repository, a TP that does not divide DeepSeek-V3's
heads, bad ``--versions``, ``--batch`` or ``--prompt``, a GPU napkin does not
know, an ``--out`` that is a folder or in none, or a table the repository lacks.
The scripts run as a user runs them, in a fresh interpreter."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def _refused(p: subprocess.CompletedProcess, names: str) -> None:
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and not p.stdout
    last = p.stderr.strip().splitlines()[-1]
    assert "error:" in last and names in last, last


@pytest.mark.parametrize(("args", "names"), [
    (["vllm", "--drop", "nope"], "--drop"),
    (["vllm", "--add", ""], "--add"),
    (["vllm", "--add", "dense,nan"], "nan"),
    (["tgi"], "tgi"),
    (["sglang", "--kernel-terms", "nope"], "--kernel-terms"),
    (["sglang", "--kernel-terms", ""], "--kernel-terms"),
    (["sglang", "--kernel-terms", "expert,nan"], "nan"),
    (["sglang", "--kernel-terms", "dense,expert"], "dense not fitted on kernels"),
    (["sglang", "--no-kernels", "yes"], "unrecognized"),
    (["vllm", "--elementwise", "maybe"], "--elementwise"),
    (["vllm", "--elementwise", ""], "--elementwise"),
    (["trtllm-compiled", "--add", "request_token,nan"], "nan"),
    (["trtllm-compiledx"], "trtllm-compiledx"),
])
def test_fit_profiles_refuses_bad_options(args, names):
    _refused(_run("fit_profiles.py", *args), names)


@pytest.mark.parametrize(("args", "names"), [
    (["tgi"], "backend"),
    (["vllm", "--response-ms", "-1"], "--response-ms"),
    (["vllm", "--response-ms", "nan"], "--response-ms"),
    (["vllm", "--request-ms", "inf"], "--request-ms"),
    (["vllm", "--request-ms", "x"], "--request-ms"),
    (["vllm", "--by", "colour"], "--by"),
    (["vllm", "--set", "splitwise"], "--set"),
    (["sglang", "--set", "h100-moe"], "--set"),  # no SGLang rows there
])
def test_the_frontend_fit_refuses_bad_options(args, names):
    _refused(_run("fit_frontend.py", *args), names)


@pytest.mark.parametrize(("args", "names"), [
    (["--add", "nope"], "--add"),
    (["--add", ""], "--add"),
    (["--add", "alltoall,inf"], "inf"),
    (["--kv", "fp4"], "--kv"),
    (["--gptoss", "yes"], "unrecognized"),
])
def test_the_trtllm_screen_refuses_bad_options(args, names):
    _refused(_run("screen_trtllm_throughput.py", *args), names)


def test_fit_profiles_refuses_a_file_as_out_folder(tmp_path):
    out = tmp_path / "profile.yaml"
    out.write_text("x")
    _refused(_run("fit_profiles.py", "vllm", "--out", str(out)), "--out")
    assert out.read_text() == "x"  # nothing written over it


def _sample(tmp_path: Path, text: str) -> str:
    path = tmp_path / "sample.csv"
    path.write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    return str(path)


def test_external_check_refuses_bad_profiles_and_jobs(tmp_path):
    sample = _sample(tmp_path, "id,backend\n")
    junk = tmp_path / "junk.yaml"
    junk.write_text("coefficients: {dense: .nan}\nbackend: vllm\n")
    other = tmp_path / "sglang.yaml"
    other.write_text((ROOT / "src/napkin/catalog/profiles/sglang.yaml").read_text())
    for args, names in [
        (["--profile", "tgi=x.yaml"], "--profile tgi=x.yaml"),
        (["--profile", "vllm"], "--profile vllm"),
        (["--profile", f"vllm={tmp_path / 'missing.yaml'}"], "missing.yaml"),
        (["--profile", f"vllm={junk}"], "junk.yaml"),
        (["--profile", f"vllm={other}"], "not a vllm profile"),
        (["--jobs", "nan"], "--jobs"),
        (["--jobs", "inf"], "--jobs"),
    ]:
        _refused(_run("external_check.py", sample, *args), names)


@pytest.mark.parametrize("text", ["", "id,backend\n1,vllm\n", "\xff\xfe\x00garbage",
                                  "a,b\n\"unclosed\n"])
def test_external_check_refuses_a_file_that_is_not_the_sample(tmp_path, text):
    _refused(_run("external_check.py", _sample(tmp_path, text)), "sample")


def test_external_check_refuses_a_missing_sample(tmp_path):
    _refused(_run("external_check.py", str(tmp_path / "none.csv")), "sample")


@pytest.mark.parametrize("arg", ["x", "0", "-5", "1e3", ""])
def test_serve_speed_refuses_a_bad_request_count(arg):
    _refused(_run("serve_speed.py", arg), "requests: must be a whole number >= 1")


@pytest.mark.parametrize("arg", ["x", "0", "-5", "1e3", ""])
def test_compiled_speed_refuses_a_bad_request_count(arg):
    _refused(_run("compiled_speed.py", "1000", arg), "requests: must be a whole number >= 1")


@pytest.mark.parametrize("arg", ["x", "0", "-5", "1e3", ""])
def test_compiled_speed_refuses_a_bad_replica_count(arg):
    _refused(_run("compiled_speed.py", "1000", "--replicas", arg),
             "--replicas: must be a whole number >= 1")


@pytest.mark.parametrize("arg", ["--least-kv=yes", "--least-kv=", "--least-kv=nan"])
def test_compiled_speed_least_kv_takes_no_value(arg):
    _refused(_run("compiled_speed.py", "1000", "--replicas", "2", arg), "--least-kv")


@pytest.mark.parametrize(("args", "names"), [
    (["no-such-revision"], "rev"),
    (["HEAD", "--sizes", "0"], "--sizes"),
    (["HEAD", "--sizes", "1e3"], "--sizes"),
    (["HEAD", "--rounds", "-1"], "--rounds"),
    (["HEAD", "--best", "x"], "--best"),
    (["HEAD", "--tree", "no-such-revision"], "--tree"),
    (["HEAD", "--kinds", "no-such-kind"], "--kinds"),
    (["HEAD", "--cold", "0"], "--cold"),
    (["HEAD", "--cpu", "--instructions"], "--instructions"),
    (["HEAD", "--instructions=yes"], "--instructions"),
    (["HEAD", "--instructions", "--million"], "--million"),
    (["HEAD", "--scale", "0"], "--scale"), (["HEAD", "--scale", "1.5"], "--scale"),
    (["HEAD", "--scale", "nan"], "--scale"), (["HEAD", "--scale", "x"], "--scale"),
])
def test_serve_speed_vs_refuses_bad_input(args, names):
    _refused(_run("serve_speed_vs.py", *args), names)


def test_serve_speed_vs_instructions_needs_valgrind(tmp_path):
    """With no valgrind on the path, ``--instructions`` is one usage line (nothing runs)."""
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "serve_speed_vs.py"), "HEAD",
                        "--instructions"], capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env={"PATH": str(tmp_path)})
    _refused(p, "--instructions")
    assert "valgrind" in p.stderr


@pytest.mark.parametrize(("args", "names"), [
    (["--mfu", "0"], "--mfu"), (["--mfu", "nan"], "--mfu"), (["--mbu", "1.5"], "--mbu"),
    (["--mbu", "x"], "--mbu"), (["--requests", "0"], "--requests"),
    (["--requests", "1.5"], "--requests"), (["--kv-fraction", "2"], "--kv-fraction"),
    (["--kv-fraction", "inf"], "--kv-fraction"), (["--kv", "fp16"], "--kv"),
])
def test_check_moe_refuses_bad_options(args, names):
    _refused(_run("check_moe_h100.py", *args), names)


@pytest.mark.parametrize(("args", "names"), [
    (["no-such-file.csv"], "sample"), (["README.md"], "README.md"),
    (["README.md", "--cycles", "0"], "--cycles"), (["README.md", "--limit", "x"], "--limit"),
])
def test_check_disagg_refuses_bad_input(args, names):
    _refused(_run("check_disagg_h100.py", *args), names)


def test_check_disagg_names_the_columns_a_sample_lacks(tmp_path):
    path = tmp_path / "sample.csv"
    path.write_text("id,backend\nx,sglang\n")
    _refused(_run("check_disagg_h100.py", str(path)), "columns: missing")


@pytest.mark.parametrize(("column", "value"), [
    ("silicon_tpot_ms", "nan"), ("silicon_ttft_ms", "-3"), ("silicon_tpot_ms", "inf"),
    ("decode_tp_size", "1.5"), ("isl", "x"), ("silicon_data_source", "no clients stated"),
])
def test_check_disagg_skips_a_bad_row_on_one_line(tmp_path, column, value):
    """A sample row whose cell does not read is skipped on one line naming its line and
    column; the script goes on (exit 0, no traceback)."""
    row = {"id": "", "backend": "sglang", "model_path": "deepseek-ai/DeepSeek-R1",
           "system": "h100_sxm", "precision": "fp8", "mode": "disagg", "isl": "1024",
           "osl": "1024", "gemm_quant_mode": "fp8", "silicon_ttft_ms": "200",
           "silicon_tpot_ms": "10", "silicon_data_source": "silicon_concurrency=4",
           "prefill_num_workers": "", "prefill_tp_size": "16", "prefill_attention_dp_size": "",
           "prefill_moe_ep_size": "", "decode_num_workers": "", "decode_tp_size": "16",
           "decode_attention_dp_size": "", "decode_moe_ep_size": "", column: value}
    path = tmp_path / "sample.csv"
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    p = _run("check_disagg_h100.py", str(path))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout.startswith("line 2: skipped (line 2: ") and column in p.stdout, p.stdout


@pytest.mark.parametrize("value", ["9", "0", "nan", "x", "-1"])
def test_check_mlperf_mixtral_refuses_bad_input_scale(value):
    _refused(_run("check_mlperf_mixtral.py", "--input-scale", value), "--input-scale")


@pytest.mark.parametrize("value", ["fp16", "", "x"])
def test_screen_trtllm_throughput_refuses_a_bad_kv(value):
    _refused(_run("screen_trtllm_throughput.py", "--kv", value), "--kv")


@pytest.mark.parametrize(("args", "names"), [
    (["/nonexistent"], "repo"),
    ([".", "--gpu", "nope"], "nope"),
    ([".", "--versions", "trtllm"], "--versions"),
    ([".", "--versions", "trtllm="], "--versions"),
    ([".", "--system", "h100_sxm"], "repo"),  # this repository holds no aiconfigurator table
    ([".", "--out", "."], "--out"),
    ([".", "--out", "/nonexistent/folder/t.csv"], "--out"),
])
def test_extract_moe_kernels_refuses_bad_input(args, names):
    _refused(_run("extract_moe_kernels.py", *args), names)


def test_check_moe_kernels_refuses_a_gpu_without_a_table():
    _refused(_run("check_moe_kernels.py", "--gpu", "a100-sxm"), "--gpu")


@pytest.mark.parametrize(("args", "names"), [
    (["/nonexistent"], "repo"),
    ([".", "--tp", "3"], "--tp"),
    ([".", "--tp", "0"], "--tp"),
    ([".", "--versions", "vllm"], "--versions"),
    ([".", "--batch", "x"], "--batch"),
    ([".", "--gpu", "nope"], "--gpu"),
    ([".", "--prompt", "0"], "--prompt"),
    ([".", "--out", "."], "--out"),
    ([".", "--out", "/nonexistent/folder/t.csv"], "--out"),
    ([".", "--versions", "vllm=0.19.0"], "repo"),  # this repository holds no such table
])
def test_check_mla_modules_refuses_bad_input(args, names):
    _refused(_run("check_mla_modules.py", *args), names)
