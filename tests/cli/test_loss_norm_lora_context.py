"""Issue 38's formula commands: ``napkin loss-norm`` (q24), ``napkin lora`` (q27) and
``napkin flops MODEL --context T`` (q18's attention share of 6ND, past max_position_embeddings
with a warning). Expected values are the question bank's printed numbers or hand derivations
written out below."""

import json

import pytest

# --- loss-norm ------------------------------------------------------------------------------


def test_loss_norm_by_hand(cli):
    """Two micro-batches: 100 labelled tokens of mean loss 1.0 (sum 100 nats), 900 of mean 2.0
    (sum 1,800). Per-token mean (100 + 1,800)/1,000 = 1.9; mean of means (1.0 + 2.0)/2 = 1.5.
    Every token weighs 1/1,000 in the first; in the second a short-batch token weighs
    1/(2·100) = 0.005 (5× its right weight) and a long-batch one 1/(2·900) (0.556×). The
    question bank, q24: "Делить надо сумму loss на общее число токенов батча"."""
    code, out, _ = cli("loss-norm", "--tokens", "100,900", "--mean-losses", "1.0,2.0",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["token_mean"] == pytest.approx(1.9)
    assert doc["mean_of_means"] == pytest.approx(1.5)
    short, long = doc["micro_batches"]
    assert short["weight_per_token"] == long["weight_per_token"] == pytest.approx(1e-3)
    assert short["weight_mean_of_means"] == pytest.approx(0.005)
    assert long["weight_mean_of_means"] == pytest.approx(1 / 1800)
    assert (short["weight_ratio"], long["weight_ratio"]) == pytest.approx((5.0, 1000 / 1800))
    assert (short["loss_sum"], long["loss_sum"]) == pytest.approx((100.0, 1800.0))


def test_loss_norm_from_sums_matches_means(cli):
    """Sums 100 and 1,800 nats are the same batch as means 1.0 and 2.0."""
    _, by_sums, _ = cli("loss-norm", "--tokens", "100,900", "--loss-sums", "100,1800",
                        "--format", "json")
    _, by_means, _ = cli("loss-norm", "--tokens", "100,900", "--mean-losses", "1,2",
                         "--format", "json")
    a, b = json.loads(by_sums), json.loads(by_means)
    assert a["token_mean"] == pytest.approx(b["token_mean"])
    assert a["mean_of_means"] == pytest.approx(b["mean_of_means"])


def test_loss_norm_equal_micro_batches_agree(cli):
    """With equal token counts the two means coincide: (2·300 + 4·300)/600 = 3 = (2 + 4)/2."""
    code, out, _ = cli("loss-norm", "--tokens", "300,300", "--mean-losses", "2,4",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["token_mean"] == pytest.approx(3.0) == doc["mean_of_means"]


def test_loss_norm_table(cli):
    code, out, _ = cli("loss-norm", "--tokens", "100,900", "--mean-losses", "1,2")
    assert code == 0 and "1.9" in out and "1.5" in out and "5×" in out


@pytest.mark.parametrize(("args", "field"), [
    (["--tokens", "100,900", "--mean-losses", "1"], "mean-losses"),
    (["--tokens", "100,900"], "mean-losses"),
    (["--tokens", "100", "--mean-losses", "1", "--loss-sums", "100"], "mean-losses"),
    (["--tokens", "0,900", "--mean-losses", "1,2"], "tokens"),
    (["--tokens", "1.5", "--mean-losses", "1"], "tokens"),
    (["--tokens", "x", "--mean-losses", "1"], "tokens"),
    (["--tokens", "100", "--mean-losses", "nan"], "mean-losses"),
    (["--tokens", "100", "--mean-losses", "-1"], "mean-losses"),
    (["--tokens", "100", "--loss-sums", "inf"], "loss-sums"),
    (["--tokens", "1e13", "--mean-losses", "1"], "tokens"),
])
def test_loss_norm_bad_input_is_one_line(cli, args, field):
    code, out, err = cli("loss-norm", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


# --- lora -----------------------------------------------------------------------------------


def test_lora_bank_q27(cli):
    """Question bank, q27: "Для матрицы 4096 × 4096 при r = 8 — 65 536 параметров вместо
    16.8 млн"; share 65,536/16,777,216 = 0.390625%."""
    code, out, _ = cli("lora", "--rank", "8", "--d-in", "4096", "--d-out", "4096",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["adapter_params"] == 65_536
    assert doc["matrix_params"] == pytest.approx(16.8e6, rel=0.002)
    assert doc["share"] == pytest.approx(0.00390625)


def test_lora_bank_quiz_6(cli):
    """Question bank, quiz 6: "LoRA с рангом r = 16 на матрице 4096 × 4096. Сколько обучаемых
    параметров?" 16·(4,096 + 4,096) = 131,072."""
    code, out, _ = cli("lora", "--rank", "16", "--d-in", "4096", "--d-out", "4096")
    assert code == 0 and "131,072" in out


def test_lora_on_a_model_projection(cli):
    """Qwen3-8B's mlp/down is 12,288 → 4,096: r = 16 gives 16·(12,288 + 4,096) = 262,144 per
    layer, ×36 layers = 9,437,184; share 262,144/(12,288·4,096) = 0.5208%."""
    code, out, _ = cli("lora", "qwen3-8b", "--rank", "16", "--proj", "mlp/down",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert (doc["d_in"], doc["d_out"], doc["layers"]) == (12_288, 4_096, 36)
    assert doc["adapter_params"] == 262_144
    assert doc["adapter_params_all_layers"] == 9_437_184
    assert doc["share"] == pytest.approx(262_144 / (12_288 * 4_096))


@pytest.mark.parametrize(("args", "field"), [
    (["--rank", "0", "--d-in", "8", "--d-out", "8"], "rank"),
    (["--d-in", "4096"], "d-in"),
    (["--d-in", "0", "--d-out", "8"], "d-in"),
    (["--d-in", "8", "--d-out", "-1"], "d-out"),
    (["qwen3-8b", "--proj", "attn/x"], "proj"),
    (["qwen3-8b", "--d-in", "8", "--d-out", "8"], "d-in"),
    (["no-such-model"], "model"),
])
def test_lora_bad_input_is_one_line(cli, args, field):
    code, out, err = cli("lora", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


# --- flops --context ------------------------------------------------------------------------


def _llama_2_7b_share(context: int) -> float:
    """Llama 2 7B: L = 32 layers, 32 heads × 128 = d = 4,096, SwiGLU width 11,008, untied.
    Causal attention of T tokens: T(T+1)/2 pairs, QKᵀ and AV 2·pairs·d FLOPs each per layer,
    ×3 for forward + backward: 6·T(T+1)·d·L. N without embedding and head:
    L·(4d² + 3·d·11,008 + 2d) + d = 32·202,383,360 + 4,096 = 6,476,271,616. Share over 6·N·T:
    (T+1)·d·L/N."""
    d, layers = 4096, 32
    n = layers * (4 * d * d + 3 * d * 11_008 + 2 * d) + d
    assert n == 6_476_271_616
    return (context + 1) * d * layers / n


@pytest.mark.parametrize("context", [4096, 32768])
def test_flops_context_share_by_hand(cli, context):
    """Question bank, q18: "при контексте 4096 и d = 4096 это около +8%, на 32K — уже +67%"
    (for an idealized 12·L·d² model; Llama 2 7B's gives 8.3% and 66.3%)."""
    code, out, _ = cli("flops", "llama-2-7b", "--context", str(context), "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["attention_share_of_6nt"] == pytest.approx(_llama_2_7b_share(context), rel=1e-9)
    assert doc["attention_flops_per_sequence"] == pytest.approx(
        6 * context * (context + 1) * 4096 * 32, rel=1e-9)
    published = {4096: 0.08, 32768: 0.67}[context]
    assert doc["attention_share_of_6nt"] == pytest.approx(published, abs=0.01)


def test_flops_context_past_max_positions_warns(cli):
    """Llama 2 7B's max_position_embeddings is 4,096: 32,768 is counted, with one warning."""
    code, out, _ = cli("flops", "llama-2-7b", "--context", "32768", "--format", "json")
    warnings = json.loads(out)["warnings"]
    assert code == 0 and len(warnings) == 1
    assert "max_position_embeddings" in warnings[0] and "4,096" in warnings[0]
    code, out, _ = cli("flops", "llama-2-7b", "--context", "4096", "--format", "json")
    assert code == 0 and json.loads(out)["warnings"] == []
    code, table, _ = cli("flops", "llama-2-7b", "--context", "32768")
    assert code == 0 and "warning: context" in table and "66.3%" in table


@pytest.mark.parametrize(("args", "field"), [
    (["--params", "7e9", "--context", "4096"], "context"),
    (["llama-2-7b", "--context", "0"], "context"),
    (["llama-2-7b", "--context", "20000000"], "context"),
])
def test_flops_context_bad_input_is_one_line(cli, args, field):
    code, out, err = cli("flops", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


@pytest.mark.parametrize("command", [["loss-norm"], ["lora"], ["flops"]])
def test_help(cli, command):
    code, out, _ = cli(*command, "--help")
    assert code == 0 and "Usage" in out
