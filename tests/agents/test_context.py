"""Multi-turn prefix reuse, context edits and agent input growth (§3.2.1, question 46)."""

import pytest

from napkin.accounting import Precision
from napkin.agents.context import (
    Edit,
    Round,
    agent_input_tokens,
    agent_rounds,
    apply_edit,
    round_costs,
    rounds_after_edits,
)
from napkin.errors import NapkinError

# Qwen3-8B by hand: per layer q 4096×4096, k and v 4096×1024, o 4096×4096, MLP 3×4096×12288.
LINEAR_MACS = 36 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12288)
PAIR_FLOPS = 36 * 4 * 32 * 128  # QKᵀ and AV: 2 FLOPs each per pair per head dimension


def test_cache_saves_the_prefix_linears_and_its_own_pairs(qwen3_8b):
    i, k = 1443, 1392
    (cost,) = round_costs(qwen3_8b, [Round(i, k)], Precision.of())
    saved = 2 * LINEAR_MACS * k + PAIR_FLOPS * k * (k + 1) // 2
    assert cost.flops_uncached - cost.flops_cached == pytest.approx(saved)
    assert cost.kv_read_bytes == k * 36 * 2 * 8 * 128 * 2


def test_fully_cached_round_still_prefills_one_token(qwen3_8b):
    (full,) = round_costs(qwen3_8b, [Round(100, 100)], Precision.of())
    (almost,) = round_costs(qwen3_8b, [Round(100, 99)], Precision.of())
    assert full.flops_cached == almost.flops_cached


def test_chapter_edits():
    append = apply_edit(2000, Edit("append", 100))
    assert (append.context_tokens, append.reusable_tokens, append.prefill_tokens) == (
        2100, 2000, 100)
    change = apply_edit(2000, Edit("replace", 1, position=501, removed_tokens=1))
    assert (change.reusable_tokens, change.prefill_tokens) == (500, 1500)
    summary = apply_edit(2000, Edit("summarize", 50, position=201, removed_tokens=1000))
    assert (summary.context_tokens, summary.reusable_tokens, summary.prefill_tokens) == (
        1050, 200, 850)


def test_rounds_after_edits_chain():
    rounds = rounds_after_edits(1000, [Edit("append", 200), Edit("replace", 10, 1, 5)])
    assert rounds == [Round(1000, 0), Round(1200, 1000), Round(1205, 0)]


def test_question_46_growth_and_cache():
    assert agent_input_tokens(1000, 300, 10) == 23_500
    rounds = agent_rounds(1000, 300, 10)
    assert sum(r.input_tokens for r in rounds) == 23_500
    assert sum(r.new_tokens for r in rounds) == 1000 + 300 * 9
    for s, d, n in ((1, 0, 1), (500, 17, 7), (64, 1000, 30)):
        assert agent_input_tokens(s, d, n) == sum(s + d * i for i in range(n))


@pytest.mark.parametrize(("make", "match"), [
    (lambda: Round(0), "input"),
    (lambda: Round(10, 11), "cached"),
    (lambda: Edit("rewrite", 1), "kind"),
    (lambda: Edit("replace", 1, position=0, removed_tokens=1), "position"),
    (lambda: Edit("append", -1), "added"),
    (lambda: apply_edit(100, Edit("replace", 1, position=100, removed_tokens=2)), "runs past"),
    (lambda: agent_input_tokens(0, 1, 1), "system"),
    (lambda: agent_rounds(1, 1, 0), "steps"),
])
def test_bad_context_input(make, match):
    with pytest.raises(NapkinError, match=match):
        make()


def test_round_past_model_context(qwen3_8b):
    with pytest.raises(NapkinError, match="input"):
        round_costs(qwen3_8b, [Round(10_000_000)], Precision.of())
