"""Multi-turn context: what each round prefills, what the prefix cache saves, what edits cost.

Round i sends ``I_i`` input tokens of which a prefix of ``K_i`` is reused from the cache, so it
prefills ``P_i = I_i − K_i`` new tokens on ``S_i = K_i`` cached ones (chapter 3.2.1): projections
and MLP see only the new tokens, attention still reaches the whole prefix. Costs come from
:func:`napkin.accounting.forward`, with the cache (``Segment(K, P)``) and without (``Segment(0,
I)``).

An edit leaves reusable only the tokens before its first changed position: appending n tokens
to L keeps all L and prefills n; changing token 501 of 2,000 keeps 500 and prefills the 1,500
after it, because every later representation depends on the change. An agent that resends its
history grows its input as ``S, S + d, …``: ``n·S + d·n(n − 1)/2`` tokens over n steps (question
46: 23,500 for S = 1,000, d = 300, n = 10), of which a prefix cache leaves ``S + d·(n − 1)`` to
prefill.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from napkin.accounting import Batch, Precision, Segment, forward
from napkin.errors import require
from napkin.specs.model import ModelSpec


@dataclass(frozen=True)
class Round:
    """One round's input: ``input_tokens`` (I), of which ``cached_tokens`` (K) hit the cache."""

    input_tokens: int
    cached_tokens: int = 0

    def __post_init__(self) -> None:
        require(self.input_tokens >= 1, f"input: must be >= 1 token, got {self.input_tokens}")
        require(0 <= self.cached_tokens <= self.input_tokens,
                f"cached: must be between 0 and the {self.input_tokens} input tokens, "
                f"got {self.cached_tokens}")

    @property
    def new_tokens(self) -> int:
        """``P = I − K``."""
        return self.input_tokens - self.cached_tokens


@dataclass(frozen=True)
class RoundCost:
    round: Round
    flops_cached: float
    """Prefill FLOPs of P new tokens on K cached ones."""
    flops_uncached: float
    """Prefill FLOPs of all I tokens from scratch."""
    kv_read_bytes: float
    """KV of the cached prefix the prefill reads (what the cache must keep)."""


def round_costs(model: ModelSpec, rounds: Sequence[Round], precision: Precision) -> list[RoundCost]:
    """Each round's prefill with and without the prefix cache (one read-out per call). A fully
    cached input still prefills its last token (engines recompute it to read out)."""
    out = []
    for r in rounds:
        model.check_context(r.input_tokens, "input")
        cached = min(r.cached_tokens, r.input_tokens - 1)
        with_cache = forward(model, Batch((Segment(cached, r.input_tokens - cached),)), precision)
        scratch = forward(model, Batch((Segment(0, r.input_tokens),)), precision)
        out.append(RoundCost(r, with_cache.flops, scratch.flops, with_cache.kv_read_bytes))
    return out


EditKind = Literal["append", "replace", "summarize"]


@dataclass(frozen=True)
class Edit:
    """A change to a context of L tokens.

    ``append``: ``added_tokens`` at the end. ``replace``: ``removed_tokens`` from the 1-based
    token ``position`` on are replaced by ``added_tokens`` (editing one token: 1 and 1).
    ``summarize``: the span ``position … position + removed_tokens − 1`` becomes an
    ``added_tokens``-token
    summary (a replace, named for what agents do with old tool output).
    """

    kind: EditKind
    added_tokens: int
    position: int = 0
    removed_tokens: int = 0

    def __post_init__(self) -> None:
        require(self.kind in ("append", "replace", "summarize"),
                f"edit: kind must be append, replace or summarize, got {self.kind!r}")
        require(self.added_tokens >= 0, f"edit: added must be >= 0 tokens, got {self.added_tokens}")
        require(self.removed_tokens >= 0,
                f"edit: removed must be >= 0 tokens, got {self.removed_tokens}")
        if self.kind != "append":
            require(self.position >= 1, f"edit: position must be >= 1 (1-based), got "
                                        f"{self.position}")


@dataclass(frozen=True)
class EditEffect:
    context_tokens: int
    """Length after the edit."""
    reusable_tokens: int
    """Longest prefix whose cached K/V stay valid."""

    @property
    def prefill_tokens(self) -> int:
        """New rows the next round prefills: everything after the reusable prefix."""
        return self.context_tokens - self.reusable_tokens


def apply_edit(context_tokens: int, edit: Edit) -> EditEffect:
    """Length and reusable prefix after ``edit`` on a ``context_tokens``-token context."""
    require(context_tokens >= 0, f"context: must be >= 0 tokens, got {context_tokens}")
    if edit.kind == "append":
        return EditEffect(context_tokens + edit.added_tokens, context_tokens)
    end = edit.position - 1 + edit.removed_tokens
    require(end <= context_tokens,
            f"edit: span {edit.position}…{end} runs past the {context_tokens}-token context")
    return EditEffect(context_tokens - edit.removed_tokens + edit.added_tokens,
                      edit.position - 1)


def rounds_after_edits(context_tokens: int, edits: Sequence[Edit]) -> list[Round]:
    """The rounds a sequence of edits produces: round i sends the edited context and reuses
    what the edit left of the previous one (the first round sends ``context_tokens`` cold)."""
    rounds = [Round(context_tokens, 0)]
    for e in edits:
        effect = apply_edit(rounds[-1].input_tokens, e)
        rounds.append(Round(effect.context_tokens, effect.reusable_tokens))
    return rounds


MAX_AGENT_STEPS = 10_000
"""Most agent steps laid out as rounds (each round is costed on its own: ~0.2 ms)."""


def agent_input_tokens(system_tokens: int, step_tokens: int, steps: int) -> int:
    """Input tokens an agent sends over ``n`` steps when step i resends ``S + d·(i − 1)``:
    ``n·S + d·n(n − 1)/2``."""
    _check_agent(system_tokens, step_tokens, steps)
    return steps * system_tokens + step_tokens * steps * (steps - 1) // 2


def agent_rounds(system_tokens: int, step_tokens: int, steps: int) -> list[Round]:
    """Those steps as rounds with a prefix cache: step i reuses step i − 1's whole input, so it
    prefills only its ``d`` new tokens (the first prefills ``S``)."""
    _check_agent(system_tokens, step_tokens, steps)
    return [Round(system_tokens + step_tokens * i,
                  system_tokens + step_tokens * (i - 1) if i else 0) for i in range(steps)]


def _check_agent(system_tokens: int, step_tokens: int, steps: int) -> None:
    require(system_tokens >= 1, f"system: S must be >= 1 token, got {system_tokens}")
    require(step_tokens >= 0, f"step: d must be >= 0 tokens, got {step_tokens}")
    require(1 <= steps <= MAX_AGENT_STEPS,
            f"steps: n must be in [1, {MAX_AGENT_STEPS:,}], got {steps}")
