"""Fuzz of the formula commands added with issue 10 (eval, flops, speculative,
attention-matrix, loss-mask, gpu-hours, decision's new options, train --tokens/--tp/offload,
rl --gpu): any number in any option either gives finite JSON (exit 0) or one line naming the
option (exit 2), never a traceback."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite

ODD = ["nan", "inf", "-inf", "-1", "0", "1e400", "5e-324", "1e308", "x", "",
       "99999999999999999999", "0.5", "3", "1e9"]

CASES = [
    (["eval", "passk"], ["--n", "--c", "--k"]),
    (["eval", "ci"], ["--p", "--n", "--p2"]),
    (["eval", "bpb"], ["--loss", "--tokens", "--bytes"]),
    (["eval", "dpo"], ["--chosen", "--rejected", "--beta"]),
    (["eval", "grpo"], ["--p"]),
    (["flops"], ["--params", "--tokens"]),
    (["speculative"], ["--alpha", "--k", "--draft-cost"]),
    (["attention-matrix", "qwen3-0.6b"], ["--seq", "--batch"]),
    (["loss-mask"], ["--prompt", "--answer"]),
    (["gpu-hours", "100"], ["--devices"]),
    (["decision", "qwen3-0.6b"], ["--decode-batch", "--usd-per-gpu-hour"]),
    (["train", "qwen3-0.6b", "--seq", "512"], ["--tokens", "--tp", "--inter-node-gbs",
                                                "--gpus-per-node"]),
]




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
