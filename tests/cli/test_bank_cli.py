"""``napkin tokens | attention-scale | objectives | balance-loss | rounding`` and ``napkin eval
retrieval | rrf``: the question bank's numbers (q3, q6, q12, q17, q20, q44, q45) or hand
derivations, JSON output, ``--help``, and bad input refused in one line naming the field."""

import json
import sys

import pytest


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("command", [["tokens"], ["attention-scale"], ["objectives"],
                                     ["balance-loss"], ["rounding"], ["eval", "retrieval"],
                                     ["eval", "rrf"]])
def test_help(cli, command):
    code, out, _ = cli(*command, "--help")
    assert code == 0 and "Usage" in out


def test_tokens_gpt2_published_ids(cli):
    # Hugging Face's GPT2Tokenizer docs: tokenizer("Hello world")["input_ids"] → [15496, 995]
    doc = _json(cli, "tokens", "Hello world")
    assert doc["tokens"] == 2 and doc["chars"] == 11 and doc["bytes"] == 11
    assert doc["chars_per_token"] == 5.5 and doc["rule_tokens"] == 11 / 4
    assert doc["vocab_size"] == 50257  # GPT-2's vocabulary
    from napkin.catalog.tokenizer_files import tokenizer_path
    from napkin.specs.tokenizer import load_tokenizer

    tok = load_tokenizer(tokenizer_path("gpt2"))
    assert tok.encode("Hello world").ids == [15496, 995]
    assert tok.encode(" Hello world").ids == [18435, 995]


def test_tokens_cyrillic_costs_more(cli, tmp_path):
    # q3: "кириллическая буква — 2 байта"; GPT-2 spends far more tokens on Russian (the bank's
    # paragraph: 303 against 53); hand: "привет" is 6 letters = 12 UTF-8 bytes
    ru = tmp_path / "ru.txt"
    ru.write_text("привет", encoding="utf-8")
    doc = _json(cli, "tokens", "--file", str(ru))
    assert doc["chars"] == 6 and doc["bytes"] == 12 and doc["tokens"] > 6 / 4
    en = _json(cli, "tokens", "The cat sat on the mat and looked out of the window.")
    ru2 = _json(cli, "tokens", "Кошка сидела на коврике и смотрела в окно.")
    assert ru2["tokens"] > 2 * en["tokens"]


def test_tokens_user_tokenizer_json(cli, tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"a": 0, "b": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    # hand: whitespace split of "a b a c" → 4 words → 4 tokens (c unknown), 7 characters
    doc = _json(cli, "tokens", "a b a c", "--tokenizer", str(path))
    assert doc["tokens"] == 4 and doc["chars"] == 7 and doc["vocab_size"] == 3


def test_tokens_without_library(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import fails as if not installed
    code, out, err = cli("tokens", "hi")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "tokenizer" in err and "napkin[tokenize]" in err


def test_attention_scale_q6(cli):
    # q6: "При d_k = 128 стандартное отклонение оценок около 11"; Var = d_k, scaled 1
    doc = _json(cli, "attention-scale", "--d-k", "128")
    assert doc["score_var"] == 128 and round(doc["score_std"]) == 11
    assert doc["scaled_score_var"] == 1
    assert _json(cli, "attention-scale", "qwen3-8b")["d_k"] == 128  # head_dim of its config
    # DeepSeek-V3's MLA: qk_nope_head_dim 128 + qk_rope_head_dim 64 = 192
    assert _json(cli, "attention-scale", "deepseek-v3")["score_var"] == 192


def test_objectives_q12(cli):
    # q12: "из 1000 токенов decoder-only получает 999 примеров, BERT — около 150"
    doc = _json(cli, "objectives", "--seq", "1000")
    assert doc["causal_targets"] == 999 and doc["masked_targets"] == pytest.approx(150)
    assert _json(cli, "objectives", "--seq", "1000", "--bos")["causal_targets"] == 1000


def test_balance_loss_q17(cli):
    # q17's α·N·Σ f_i·P_i; hand: uniform → α, collapsed onto one of 8 → 8α
    assert _json(cli, "balance-loss", "--f", "0.25,0.25,0.25,0.25")["loss"] == pytest.approx(
        0.01)
    doc = _json(cli, "balance-loss", "--f", "1,0,0,0,0,0,0,0", "--alpha", "0.001")
    assert doc["loss"] == pytest.approx(0.008) and doc["loss_over_alpha"] == 8
    # hand: f (0.5, 0.3, 0.2), P (0.4, 0.4, 0.2): 3·(0.20 + 0.12 + 0.04) = 1.08
    doc = _json(cli, "balance-loss", "--f", "0.5,0.3,0.2", "--p", "0.4,0.4,0.2", "--alpha", "1")
    assert doc["loss"] == pytest.approx(1.08)


def test_rounding_q20(cli):
    # q20: "у BF16 всего 7 бит мантиссы: 1 + 0.001 = 1"
    doc = _json(cli, "rounding", "1", "--add", "0.001")["formats"]
    assert doc["bf16"]["sum"] == 1.0 and doc["bf16"]["ulp"] == 2**-7
    assert doc["fp16"]["sum"] == 1 + 2**-10  # hand: 1.001 is 1.024 ulps (2^-10) above 1
    assert doc["fp32"]["sum"] == pytest.approx(1.001, abs=2**-24)
    # BF16 keeps FP32's range, FP16 overflows past 65504
    doc = _json(cli, "rounding", "1e5")["formats"]
    # hand: BF16's ulp at 1e5 is 2^(16−7) = 512; 1e5/512 = 195.3 → 195·512 = 99840
    assert doc["fp16"]["rounded"] is None and doc["bf16"]["rounded"] == 99840


def test_eval_retrieval(cli, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "a", "ranked": ["d3", "d1", "d2"], "relevant": ["d1"]}\n'
                    '{"query": "b", "ranked": [7, 8], "relevant": [7]}\n'
                    '{"query": "c", "ranked": ["d9"], "relevant": []}\n')
    # hand: a: RR ½, recall@1 0; b: RR 1, recall@1 1; c has no relevant document
    doc = _json(cli, "eval", "retrieval", str(path), "--k", "1")
    assert doc["mrr"] == 0.75 and doc["recall_at_k"] == 0.5 and doc["unanswerable"] == 1
    doc = _json(cli, "eval", "retrieval", "--ranked", "d3,d1,d2", "--relevant", "d1", "--k", "2")
    assert doc["recall_at_k"] == 1 and doc["mrr"] == 0.5


def test_eval_rrf_q44(cli):
    # q44: RRF Σ 1/(60 + rank): d1 at ranks 1 and 2 → 1/61 + 1/62
    doc = _json(cli, "eval", "rrf", "--list", "d1,d2,d3", "--list", "d3,d1")
    fused = {row["doc"]: row["score"] for row in doc["fused"]}
    assert fused["d1"] == pytest.approx(1 / 61 + 1 / 62)
    assert [row["doc"] for row in doc["fused"]] == ["d1", "d3", "d2"]
    doc = _json(cli, "eval", "rrf", "--list", "a,b", "--k", "0")
    assert [row["score"] for row in doc["fused"]] == [1.0, 0.5]


@pytest.mark.parametrize(("args", "field"), [
    (["tokens"], "text"),
    (["tokens", "x", "--file", "y"], "text"),
    (["tokens", "--file", "/nonexistent/t.txt"], "file"),
    (["tokens", "x", "--tokenizer", "gpt9"], "tokenizer"),
    (["tokens", "x", "--tokenizer", "pyproject.toml"], "tokenizer"),
    (["attention-scale"], "d-k"),
    (["attention-scale", "--d-k", "0"], "d-k"),
    (["attention-scale", "qwen3-8b", "--d-k", "64"], "d-k"),
    (["attention-scale", "--d-k", "8", "--var-q", "-1"], "var-q"),
    (["objectives", "--seq", "1"], "seq"),
    (["objectives", "--mask-rate", "0"], "mask-rate"),
    (["objectives", "--mask-rate", "nan"], "mask-rate"),
    (["balance-loss"], "--f"),
    (["balance-loss", "--f", "0.5,x"], "f"),
    (["balance-loss", "--f", "0.5,0.6"], "f"),
    (["balance-loss", "--f", "0.5,0.5", "--p", "1"], "p"),
    (["balance-loss", "--f", "1", "--alpha", "-1"], "alpha"),
    (["rounding", "nan"], "VALUE"),
    (["rounding", "1", "--add", "inf"], "add"),
    (["eval", "retrieval"], "ranked"),
    (["eval", "retrieval", "--ranked", "a"], "relevant"),
    (["eval", "retrieval", "--ranked", "a", "--relevant", "a", "--k", "0"], "k"),
    (["eval", "retrieval", "/nonexistent/q.jsonl"], "queries"),
    (["eval", "rrf"], "--list"),
    (["eval", "rrf", "--list", ","], "list"),
    (["eval", "rrf", "--list", "a", "--k", "-1"], "k"),
    (["eval", "rrf", "--list", "a", "--top", "0"], "top"),
])
def test_refused(cli, args, field):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and field in err, err


@pytest.mark.parametrize("text", ["{", "[1]", '{"ranked": "d1", "relevant": ["d1"]}',
                                  '{"ranked": ["d1"]}', '{"ranked": [true], "relevant": []}',
                                  "", '{"ranked": ["a"], "relevant": ["a"], "extra": 1}'])
def test_retrieval_bad_files(cli, tmp_path, text):
    path = tmp_path / "q.jsonl"
    path.write_text(text)
    code, out, err = cli("eval", "retrieval", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "queries" in err, err
