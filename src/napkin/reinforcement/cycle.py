"""One RL cycle from its roles (chapter 3.5.3, Example 3-4).

To keep ``keep`` samples at keep rate ``a`` the policy generates ``n = keep/a`` answers (or a
given n): each a prefill of P prompt tokens and G − 1 decode steps — ``n·P`` prompt tokens and
``n·G`` generated tokens a cycle; the update reads ``keep·(P + G − 1)`` input tokens with
``keep·G`` labelled. Every answer is read once, teacher-forced
(P + G − 1 input tokens, the LM head on every position unless ``head="labelled"``: the G answer
positions), by the reference model, and optionally by a teacher and a reward model. The policy
update runs forward and backward on the kept samples only. So
``F_cycle(n) = n·(f_g + f_r) + F_u``: generation and reading grow with n, the update does not.
After the update, BF16 weights go to r generation replicas: ``r·M_W`` bytes.
All FLOPs come from the accounting layer (``forward``, ``decode_runs``, training ``backward``).
"""

import math
from dataclasses import dataclass

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision, forward, weight_bytes
from napkin.accounting.series import decode_runs
from napkin.errors import require
from napkin.specs.model import ModelSpec
from napkin.training.flops import TrainShape, train_flops


@dataclass(frozen=True)
class RLCycle:
    """FLOPs per role of one cycle, and the weight-sync bytes."""

    generated: int
    kept: int
    prefill_flops: float
    decode_flops: float
    reference_flops: float
    teacher_flops: float
    reward_flops: float
    update_flops: float
    sync_bytes: float
    weight_bytes: float = 0.0
    """``M_W``: one copy of the policy's weights (what each replica receives)."""
    prompt_tokens: int = 0
    """P: tokens of each prompt."""
    gen_tokens: int = 0
    """G: tokens of each answer."""

    @property
    def prompt_tokens_total(self) -> int:
        """Prompt tokens prefilled a cycle: ``n·P``."""
        return self.generated * self.prompt_tokens

    @property
    def generated_tokens(self) -> int:
        """Answer tokens generated a cycle: ``n·G``."""
        return self.generated * self.gen_tokens

    @property
    def update_input_tokens(self) -> int:
        """Input tokens of the update, teacher-forced: ``keep·(P + G − 1)``."""
        return self.kept * (self.prompt_tokens + self.gen_tokens - 1)

    @property
    def kept_tokens(self) -> int:
        """Labelled (kept answer) tokens of the update: ``keep·G``."""
        return self.kept * self.gen_tokens

    @property
    def per_answer_flops(self) -> float:
        """``f_g + f_r`` (+ teacher, reward model): what each extra generated answer costs."""
        return (self.prefill_flops + self.decode_flops + self.reference_flops
                + self.teacher_flops + self.reward_flops) / self.generated

    @property
    def total_flops(self) -> float:
        """``n·(f_g + f_r) + F_u``."""
        return (self.prefill_flops + self.decode_flops + self.reference_flops
                + self.teacher_flops + self.reward_flops + self.update_flops)

    @property
    def per_kept_flops(self) -> float:
        return self.total_flops / self.kept


MIN_KEEP_RATE = 1e-6
"""Smallest share of answers kept: below one in a million a cycle is all rejection."""
MAX_ANSWERS = 100_000
"""Most answers one cycle generates (a few seconds of simulated rollout with ``--gpu``;
published RL recipes generate thousands per step)."""


RATE_TOLERANCE = 1e-6
"""Relative distance from a whole number within which ``keep / keep_rate`` is that number: a
rate typed to ten digits (0.3333333333) is the fraction it rounds (⅓), not one answer more."""


def generated_for(keep: int, keep_rate: float) -> int:
    """Answers to generate to keep ``keep`` at ``keep_rate``: ``⌈n_keep / a⌉`` (16 at ½: 32;
    at 0.3333333333: 48, within :data:`RATE_TOLERANCE` of a whole number), at most
    :data:`MAX_ANSWERS`."""
    require(1 <= keep <= MAX_ANSWERS, f"keep: must be in [1, {MAX_ANSWERS:,}], got {keep}")
    require(MIN_KEEP_RATE <= keep_rate <= 1,
            f"keep-rate: must be in [{MIN_KEEP_RATE:g}, 1], got {keep_rate}")
    exact = keep / keep_rate
    whole = round(exact)
    n = whole if math.isclose(exact, whole, rel_tol=RATE_TOLERANCE) else math.ceil(exact)
    require(n <= MAX_ANSWERS, f"keep-rate: keeping {keep} at {keep_rate:g} generates {n:,} "
                              f"answers; at most {MAX_ANSWERS:,} per cycle (raise --keep-rate "
                              "or lower --keep)")
    return n


def _read_flops(model: ModelSpec, prompt: int, gen: int, head: str,
                precision: Precision) -> float:
    """A teacher-forced forward over an answer: P + G − 1 inputs, head on all or G positions."""
    tokens = prompt + gen - 1
    readout = tokens if head == "all" else gen
    return forward(model, Batch.uniform(0, tokens, 1, readout), precision).flops


def rl_cycle(policy: ModelSpec, prompt_tokens: int, gen_tokens: int, keep: int,
             keep_rate: float, reference: bool = True, teacher: ModelSpec | None = None,
             reward_model: ModelSpec | None = None, head: str = "all", replicas: int = 0,
             precision: Precision | None = None, generate: int | None = None) -> RLCycle:
    """FLOPs of one cycle of ``policy`` on P-token prompts with G-token answers: ``generate``
    answers, or (None) enough to keep ``keep`` at ``keep_rate``."""
    require(prompt_tokens >= 1, f"prompt-len: must be >= 1, got {prompt_tokens}")
    require(gen_tokens >= 1, f"gen-len: must be >= 1, got {gen_tokens}")
    require(replicas >= 0, f"replicas: must be >= 0, got {replicas}")
    require(head in ("all", "labelled"), f"head: must be all or labelled, got {head!r}")
    precision = precision or Precision.of()
    if generate is None:
        n = generated_for(keep, keep_rate)
    else:
        require(1 <= keep <= MAX_ANSWERS, f"keep: must be in [1, {MAX_ANSWERS:,}], got {keep}")
        require(keep <= generate <= MAX_ANSWERS,
                f"generate: must be in [--keep ({keep}), {MAX_ANSWERS:,}], got {generate}")
        n = generate
    prefill = forward(policy, Batch.uniform(0, prompt_tokens, 1, 1), precision).flops
    decode = sum(run.flops for run in decode_runs(policy, precision, 1, prompt_tokens,
                                                  gen_tokens - 1))
    reads = {m: _read_flops(m, prompt_tokens, gen_tokens, head, precision)
             for m in {policy, *(x for x in (teacher, reward_model) if x is not None)}}
    seq = prompt_tokens + gen_tokens - 1
    update = train_flops(policy, TrainShape((seq,), micro_batch=keep, labels=gen_tokens,
                                            head=head), precision=precision)
    return RLCycle(
        generated=n,
        kept=keep,
        prefill_flops=n * prefill,
        decode_flops=n * decode,
        reference_flops=n * reads[policy] if reference else 0.0,
        teacher_flops=n * reads[teacher] if teacher is not None else 0.0,
        reward_flops=n * reads[reward_model] if reward_model is not None else 0.0,
        update_flops=update.update_flops,
        sync_bytes=replicas * weight_bytes(policy, precision),
        weight_bytes=weight_bytes(policy, precision),
        prompt_tokens=prompt_tokens,
        gen_tokens=gen_tokens,
    )
