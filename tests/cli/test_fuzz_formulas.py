"""Fuzz of the formula commands added with issue 10 (eval, flops, speculative,
attention-matrix, loss-mask, gpu-hours, decision's new options, train --tokens/--tp/offload,
rl --gpu): any number in any option either gives finite JSON (exit 0) or one line naming the
option (exit 2), never a traceback."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite

from napkin.catalog import scaling_data

ODD = ["nan", "inf", "-inf", "-1", "0", "1e400", "5e-324", "1e308", "x", "",
       "99999999999999999999", "0.5", "3", "1e9"]

CASES = [
    (["rl", "qwen3-0.6b", "--keep", "4", "--generate", "8"], ["--compare-generate"]),
    (["eval", "passk"], ["--n", "--c", "--k"]),
    (["eval", "ci"], ["--p", "--n", "--p2"]),
    (["eval", "bpb"], ["--loss", "--tokens", "--bytes"]),
    (["eval", "dpo"], ["--chosen", "--rejected", "--beta"]),
    (["eval", "grpo"], ["--p"]),
    (["eval", "grpo", "--p", "0.3"], ["--group", "--p"]),
    (["rl", "qwen3-0.6b", "--prompt-len", "64", "--gen-len", "16", "--keep", "4"],
     ["--generate", "--keep-rate", "--keep"]),
    (["flops"], ["--params", "--tokens"]),
    (["flops", "llama-2-7b"], ["--context", "--tokens"]),
    (["loss-norm", "--tokens", "100,900"], ["--mean-losses", "--loss-sums"]),
    (["loss-norm", "--mean-losses", "1"], ["--tokens"]),
    (["lora", "--d-in", "64", "--d-out", "64"], ["--rank", "--d-in", "--d-out"]),
    (["scaling", "fit", str(scaling_data("datablations_c4_runs.csv")), "--loss-col",
      "c4_val_loss", "--holdout-min-n", "2e9"], ["--fix-E"]),
    (["scaling", "optimum", "--law", "kaplan"], ["--flops"]),
    (["speculative"], ["--alpha", "--k", "--draft-cost"]),
    (["attention-matrix", "qwen3-0.6b"], ["--seq", "--batch"]),
    (["loss-mask"], ["--prompt", "--answer"]),
    (["gpu-hours", "100"], ["--devices"]),
    (["attention-scale"], ["--d-k"]),
    (["attention-scale", "--d-k", "64"], ["--var-q", "--var-k"]),
    (["objectives"], ["--seq", "--mask-rate"]),
    (["balance-loss", "--f", "0.5,0.5"], ["--alpha", "--p"]),
    (["rounding", "1"], ["--add"]),
    (["eval", "retrieval", "--ranked", "a,b", "--relevant", "b"], ["--k"]),
    (["eval", "rrf", "--list", "a,b", "--list", "b"], ["--k", "--top"]),
    (["decision", "qwen3-0.6b"], ["--decode-batch", "--usd-per-gpu-hour"]),
    (["decision", "qwen3-0.6b", "--ced"], ["--encoder-layers", "--replay",
                                           "--usd-per-million-input"]),
    (["decision", "qwen3-0.6b", "--request-usd", "0.000081", "--usd-per-million-input",
      "0.042"], ["--llm-usd"]),
    (["train", "qwen3-0.6b", "--seq", "512"], ["--tokens", "--tp", "--inter-node-gbs",
                                                "--gpus-per-node", "--pipeline",
                                                "--usd-per-gpu-hour"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--pipeline", "4", "--sequence-parallel"],
     ["--virtual-stages", "--accumulation"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--offload"], ["--host-link-gbs",
                                                             "--cpu-mem-gbs"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--offload-activations"], ["--host-link-gbs"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--zero", "3", "--devices", "2",
      "--offload-params"], ["--host-link-gbs", "--cpu-mem-gbs", "--accumulation"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--optimizer-in-backward"],
     ["--accumulation", "--zero"]),
    (["train", "qwen3-30b-a3b", "--seq", "512", "--devices", "8", "--zero", "3",
      "--overlap-ep"], ["--ep", "--tp"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--dataset-tokens", "1e9"], ["--epochs"]),
    (["serve", "little", "--rate-per-s", "2", "--wait-s", "10", "--state-gib", "1"],
     ["--rate-per-s", "--wait-s", "--state-gib"]),
    (["serve", "little", "--rate-per-s", "2", "--wait-s", "10", "--model", "qwen3-0.6b",
      "--context", "8"], ["--context"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--tokens", "1e9"],
     ["--eval-share", "--checkpoint-s", "--checkpoint-interval-s", "--failures-per-gpu-hour",
      "--restart-s"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--devices", "2", "--zero", "3"],
     ["--cp", "--precision", "--allocator-overhead", "--mfu", "--recompute", "--ep"]),
    (["train", "qwen3-0.6b", "--seq", "512", "--tp", "2", "--async-tp", "--compile"],
     ["--cp", "--tp", "--precision"]),
    (["call", "qwen3-0.6b", "--new", "64", "--gen", "8", "--gpu", "h100-sxm"],
     ["--usd-per-kwh", "--pue", "--prefill-power-frac", "--decode-power-frac"]),
    (["rl", "qwen3-0.6b", "--prompt-len", "64", "--gen-len", "16", "--keep", "4",
      "--gpu", "h100-sxm", "--count", "2", "--calibration", "roofline"],
     ["--count", "--rollout-tp", "--mfu", "--usd-per-gpu-hour"]),
]

MIXES = ["512:128:1", "512:128", "512:128:0", "512:128:nan", "512:128:inf", "0:1:1",
         "99999999999999999999:1:1", "1:1:1e308,1:1:1e308", ":::", ",,", "a:b:c", ""]
RESULTS = ["problem,correct\n1,1\n", "problem,correct\n1,nan\n", "problem,correct\n,1\n",
           "correct\n1\n", "problem,correct,answer\n1,1,\n1,0,x\n",
           "problem,correct,model\n1,1,a\n1,0,b\n", "\ufeffproblem,correct\n1,1\n",
           "problem,correct\n" + "1,1\n" * 3]




def _check(result: tuple[int, str, str], option: str) -> None:
    code, out, err = result
    assert "Traceback" not in err, err
    if code == 0:
        assert_finite(json.loads(out))
    else:
        assert code == 2 and out == "" and err.count("\n") == 1, (code, err)


@pytest.mark.parametrize(("base", "options"), CASES)
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_formula_options(cli, base, options, data):
    option = data.draw(st.sampled_from(options))
    value = data.draw(st.sampled_from(ODD))
    _check(cli(*base, option, value, "--format", "json"), option)


def test_decision_gen_range_and_bill(cli):
    for extra in (["--gen-range", "1,100001"], ["--gen-range", "0"],
                  ["--request-usd", "1e300", "--usd-per-million-input", "1e-300"],
                  ["--request-usd", "5e-324", "--usd-per-million-input", "1"]):
        _check(cli("decision", "qwen3-0.6b", *extra, "--format", "json"), extra[0])


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(MIXES))
def test_lifecycle_mix(cli, mix):
    _check(cli("lifecycle", "--target-loss", "2.5", "--sizes", "1e9,4e9", "--mix", mix,
               "--format", "json"), "--mix")


@pytest.mark.parametrize("text", RESULTS)
@pytest.mark.parametrize("command", ["results", "bootstrap"])
def test_results_files(cli, tmp_path, text, command):
    path = tmp_path / "r.csv"
    path.write_text(text)
    _check(cli("eval", command, str(path), "--format", "json"), command)


@pytest.mark.parametrize("text", ["{", "[1, 2]", "{\"problem\": 1}", "[" * 100_000,
                                  "{\"problem\": 1, \"correct\": \"maybe\"}"])
def test_results_jsonl_files(cli, tmp_path, text):
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    _check(cli("eval", "results", str(path), "--format", "json"), "results")


@pytest.mark.parametrize("value", ["dispatch_intervals=nan", "dispatch_intervals=inf",
                                   "dispatch_intervals=-1", "dispatch_intervals=11",
                                   "dispatch_intervals=x"])
def test_calibrate_dispatch_intervals(cli, tmp_path, value):
    plain = tmp_path / "m.csv"
    plain.write_text("backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,"
                     "mean_ttft_ms,mean_tpot_ms\n"
                     "vllm,llama-3.1-8b,h100-sxm,bf16,1,512,32,closed_loop,2,60,7.5\n")
    code, out, err = cli("calibrate", str(plain), "--backend", "vllm", "--harness", value,
                         "--out", str(tmp_path / "p.yaml"))
    assert code == 2 and out == "" and "dispatch_intervals" in err and err.count("\n") == 1, err
    assert not (tmp_path / "p.yaml").exists()
