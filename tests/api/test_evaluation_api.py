"""The public API of ``napkin eval``: the CLI's JSON, typed values, the question bank's
printed numbers and hand derivations."""

import json
import math

import pytest

from napkin.api.evaluation import (
    eval_bootstrap,
    eval_bpb,
    eval_ci,
    eval_dpo,
    eval_grpo,
    eval_passk,
    eval_results,
)
from napkin.errors import NapkinError
from napkin.results_files import ModelComparison, Sample, SampleScores

RESULTS = ("problem,correct,answer,model\n"
           "1,1,4,a\n1,0,5,a\n2,1,7,a\n2,1,7,a\n"
           "1,0,5,b\n1,0,5,b\n2,1,7,b\n2,0,8,b\n")


def _cli_json(cli, *args: str) -> dict:
    code, out, err = cli("eval", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_passk_and_ci_match_cli(cli):
    r = eval_passk(n=10, c=2, k=5)
    assert r.data == _cli_json(cli, "passk", "--n", "10", "--c", "2", "--k", "5")
    assert r.value["pass_at_k"] == pytest.approx(0.778, abs=5e-4)  # q50
    assert r.value["pass_hat_k"] == 0.0  # C(2, 5) = 0
    # pass^k by hand: C(6, 2)/C(10, 2) = 15/45
    assert eval_passk(n=10, c=6, k=2).value["pass_hat_k"] == pytest.approx(15 / 45)
    r = eval_ci(p=0.6, n=500, p2=0.57)
    assert r.data == _cli_json(cli, "ci", "--p", "0.6", "--n", "500", "--p2", "0.57")
    se = math.sqrt(0.6 * 0.4 / 500)
    assert r.value["standard_error"] == pytest.approx(se)
    assert (r.value["low"], r.value["high"]) == pytest.approx((0.6 - 1.96 * se, 0.6 + 1.96 * se))
    assert r.value["difference_standard_error"] == pytest.approx(
        math.sqrt(0.24 / 500 + 0.57 * 0.43 / 500))
    assert "not distinguishable" in r.to_table()


def test_results_from_a_file_or_the_samples(cli, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(RESULTS)
    r = eval_results(path, k=2, model="a")
    assert r.data == _cli_json(cli, "results", str(path), "--k", "2", "--model", "a")
    s = r.value
    assert isinstance(s, SampleScores)
    # problem 1: n=2, c=1; problem 2: n=2, c=2
    assert s.pass_at_1 == pytest.approx((0.5 + 1.0) / 2)
    assert s.pass_hat_k == pytest.approx((0.0 + 1.0) / 2)
    assert s.maj_at_k == pytest.approx((0.5 + 1.0) / 2)  # problem 1: a 4/5 tie, half
    assert eval_results(str(path), k=2, model="a").data == r.data  # a str path as well
    rows = [Sample("1", True, "4", "a"), Sample("1", False, "5", "a"),
            Sample("2", True, "7", "a"), Sample("2", True, "7", "a")]
    direct = eval_results(rows, k=2)
    assert direct.value == s
    assert direct.title == "Results of 4 samples" and direct.data["inputs"]["results"] is None


def test_bootstrap_matches_cli(cli, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(RESULTS)
    r = eval_bootstrap(path, resamples=2000)
    assert r.data == _cli_json(cli, "bootstrap", str(path), "--resamples", "2000")
    c = r.value
    assert isinstance(c, ModelComparison)
    # first samples: a = [1, 1], b = [0, 1]: difference +0.5; A ≤ B only when the "+1" item
    # is never drawn in 2 draws: (1/2)² = 1/4
    assert (c.accuracy_a, c.accuracy_b, c.bootstrap.mean_difference) == (1.0, 0.5, 0.5)
    assert c.bootstrap.share_a_not_better == pytest.approx(0.25, abs=0.03)


def test_bpb_dpo_grpo_match_cli(cli):
    r = eval_bpb(loss=2.0, tokens=250, n_bytes=1000)
    assert r.data == _cli_json(cli, "bpb", "--loss", "2.0", "--tokens", "250", "--bytes", "1000")
    assert r.value["total_loss_nats"] == 500.0  # self-check 12: 2.0 × 250
    assert r.value["bits_per_byte"] == pytest.approx(500 / (math.log(2) * 1000))
    r = eval_dpo(chosen=2, beta=0.1)
    assert r.data == _cli_json(cli, "dpo", "--chosen", "2", "--beta", "0.1")
    assert r.value["dpo_loss"] == pytest.approx(math.log1p(math.exp(-0.2)))  # −log σ(0.2)
    assert eval_dpo().value["dpo_loss"] == pytest.approx(math.log(2))  # q31: step 0
    r = eval_grpo(rewards=[1, 0, 0, 0, 0, 0, 0, 0], p=0.1)
    assert r.data == _cli_json(cli, "grpo", "--rewards", "1,0,0,0,0,0,0,0", "--p", "0.1")
    assert r.value["signal_probability"] == pytest.approx(1 - 0.1**8 - 0.9**8)  # q34: 0.57
    assert r.value["generations_per_useful_group"] == pytest.approx(14.0, abs=0.05)
    # q33: rewards [1, 0, 0, 0]: (1 − 0.25)/√0.1875 = 1.73
    assert eval_grpo().value["advantages"][0] == pytest.approx(0.75 / math.sqrt(0.1875))


def test_errors_name_the_field(tmp_path):
    with pytest.raises(NapkinError, match=r"^pass_at_k: c"):
        eval_passk(n=3, c=5)
    with pytest.raises(NapkinError, match=r"^std:"):
        eval_grpo(std="median")
    with pytest.raises(NapkinError, match=r"^rewards:"):
        eval_grpo(rewards="1,0")  # type: ignore[arg-type]
    with pytest.raises(NapkinError, match=r"^results:"):
        eval_results(tmp_path / "missing.csv")
    with pytest.raises(NapkinError, match=r"^results:"):
        eval_results([])
    with pytest.raises(NapkinError, match=r"^resamples:"):
        eval_bootstrap([Sample("1", True, model="a")], resamples=0)
    with pytest.raises(NapkinError, match=r"^seed:"):
        eval_bootstrap([Sample("1", True, model="a")], seed=-1)
