"""``napkin eval``: each formula against the question bank's printed values or a hand
derivation, JSON output, and one-line refusals of bad input."""

import json
import math

import pytest


def _json(cli, *args: str) -> dict:
    code, out, err = cli("eval", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _refused(result, field: str) -> None:
    code, out, err = result
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and err.count("\n") == 1 and field in err, err
    assert out == ""


def test_passk_question_bank(cli):
    doc = _json(cli, "passk", "--n", "10", "--c", "2", "--k", "5")
    assert doc["pass_at_k"] == pytest.approx(0.778, abs=5e-4)  # q50: n=10, c=2, k=5
    assert doc["pass_hat_k"] == 0.0  # C(2, 5) = 0: fewer correct samples than attempts
    # pass^k by hand: C(6, 2)/C(10, 2) = 15/45
    assert _json(cli, "passk", "--n", "10", "--c", "6", "--k", "2")["pass_hat_k"] == \
        pytest.approx(15 / 45)


def test_ci_and_difference(cli):
    doc = _json(cli, "ci", "--p", "0.6", "--n", "500", "--p2", "0.57")
    se = math.sqrt(0.6 * 0.4 / 500)  # 0.02191
    assert doc["standard_error"] == pytest.approx(se)
    assert doc["low"] == pytest.approx(0.6 - 1.96 * se)
    assert doc["difference_standard_error"] == pytest.approx(
        math.sqrt(0.24 / 500 + 0.57 * 0.43 / 500))
    assert doc["difference"] / doc["difference_standard_error"] < 1.96  # not distinguishable


def test_bpb_self_check(cli):
    doc = _json(cli, "bpb", "--loss", "2.0", "--tokens", "250", "--bytes", "1000")
    assert doc["total_loss_nats"] == 500.0  # self-check 12: 2.0 × 250
    assert doc["bits_per_byte"] == pytest.approx(500 / (math.log(2) * 1000))


def test_dpo_step_zero_is_ln2(cli):
    assert _json(cli, "dpo")["dpo_loss"] == pytest.approx(math.log(2))  # q31
    # margin 0.1·(2 − 0) = 0.2: −log σ(0.2) = log(1 + e^−0.2)
    assert _json(cli, "dpo", "--chosen", "2", "--beta", "0.1")["dpo_loss"] == pytest.approx(
        math.log1p(math.exp(-0.2)))


def test_grpo_self_check_and_signal(cli):
    doc = _json(cli, "grpo", "--rewards", "1,0,0,0")
    assert doc["advantages"][0] == pytest.approx(0.75 / math.sqrt(0.1875))  # 1.73, q33
    doc = _json(cli, "grpo", "--rewards", "1,0,0,0,0,0,0,0", "--p", "0.1")
    assert doc["signal_probability"] == pytest.approx(0.57, abs=0.005)  # q34: p=0.1, G=8
    assert doc["generations_per_useful_group"] == pytest.approx(14.0, abs=0.05)
    assert _json(cli, "grpo", "--rewards", "1,1,1")["advantages"] == [0.0, 0.0, 0.0]


RESULTS = ("problem,correct,answer,model\n"
           "1,1,4,a\n1,0,5,a\n2,1,7,a\n2,1,7,a\n"
           "1,0,5,b\n1,0,5,b\n2,1,7,b\n2,0,8,b\n")


def test_results_file(cli, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(RESULTS)
    s = _json(cli, "results", str(path), "--k", "2", "--model", "a")["scores"]
    # problem 1: n=2, c=1; problem 2: n=2, c=2
    assert s["pass_at_1"] == pytest.approx((0.5 + 1.0) / 2)
    assert s["pass_at_k"] == 1.0  # both problems have a right answer in 2 of 2
    assert s["pass_hat_k"] == pytest.approx((0.0 + 1.0) / 2)
    assert s["maj_at_k"] == pytest.approx((0.5 + 1.0) / 2)  # problem 1: a 4/5 tie, half
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("\n".join(json.dumps({"problem": p, "correct": c})
                               for p, c in [(1, True), (1, False), (2, False), (2, False)]))
    s = _json(cli, "results", str(jsonl))["scores"]
    assert s["pass_at_1"] == 0.25 and s["maj_at_k"] is None


def test_bootstrap_file(cli, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(RESULTS)
    c = _json(cli, "bootstrap", str(path), "--resamples", "2000")["comparison"]
    # first samples: a = [1, 1], b = [0, 1]: difference +0.5
    assert c["accuracy_a"] == 1.0 and c["accuracy_b"] == 0.5
    assert c["bootstrap"]["mean_difference"] == 0.5
    # the resampled difference is +0.5·(items of the "+1" kind drawn): P(none drawn) = 1/4
    assert c["bootstrap"]["share_a_not_better"] == pytest.approx(0.25, abs=0.03)


@pytest.mark.parametrize(("args", "field"), [
    (["passk", "--n", "3", "--c", "5"], "c"),
    (["passk", "--k", "0"], "k"),
    (["ci", "--p", "nan"], "p"),
    (["ci", "--p", "1.5"], "p"),
    (["ci", "--n", "0"], "n"),
    (["bpb", "--loss", "inf"], "--loss"),
    (["bpb", "--bytes", "0"], "n_bytes"),
    (["dpo", "--beta", "0"], "beta"),
    (["dpo", "--chosen", "nan"], "--chosen"),
    (["grpo", "--rewards", "1,x"], "rewards"),
    (["grpo", "--rewards", "1,inf"], "rewards"),
    (["grpo", "--std", "median"], "std"),
    (["grpo", "--p", "2"], "p"),
])
def test_bad_numbers_refused(cli, args, field):
    _refused(cli("eval", *args), field)


@pytest.mark.parametrize(("text", "field"), [
    ("problem,correct\n1,maybe\n", "correct"),
    ("problem,answer\n1,4\n", "correct"),
    ("problem,correct\n", "no samples"),
    ("problem,correct,model\n1,1,a\n1,1,b\n", "model"),
])
def test_bad_results_refused(cli, tmp_path, text, field):
    path = tmp_path / "r.csv"
    path.write_text(text)
    _refused(cli("eval", "results", str(path)), field)


def test_bad_results_paths(cli, tmp_path):
    _refused(cli("eval", "results", str(tmp_path / "missing.csv")), "results")
    _refused(cli("eval", "results", str(tmp_path)), "results")
    bad = tmp_path / "b.csv"
    bad.write_bytes(b"\xff\xfe\x00")
    _refused(cli("eval", "results", str(bad)), "UTF-8")
    one = tmp_path / "one.csv"
    one.write_text("problem,correct,model\n1,1,a\n")
    _refused(cli("eval", "bootstrap", str(one)), "model")
    _refused(cli("eval", "results", str(one), "--k", "2"), "k")
