"""vLLM V1's preemption and admission rules, step by step on tiny pools (block size 16).

Read from vLLM's ``vllm/v1/core/sched/scheduler.py`` (``Scheduler.schedule``) in the released
wheels 0.8.5–0.19.1: a running request short of blocks preempts ``running[-1]`` (the most
recently admitted), which for a partial prefill is usually itself; nothing is admitted in a step
that preempted; from 0.19.0 a waiting request is admitted only when blocks for its whole
sequence are free (``scheduler_reserve_full_isl``, ``KVCacheManager.can_fit_full_sequence``)."""

import pytest
from stepping import Stepper

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.request import Request
from napkin.specs.releases import reserves_full_prompt
from napkin.timing.efficiency import Efficiency


def _run(num_blocks: int, reqs: list[Request], full_prompt: bool, backend: str = "vllm",
         mode: str = "exact") -> tuple[Engine, int, list[int]]:
    """Step an engine (token budget 48, 4 sequences) until done: the engine, its steps and the
    step each request finished in."""
    e = Engine(load_model("qwen3-0.6b"), load_accelerator("l4"), Precision.of(),
               Efficiency(0.4, 0.5, 0.0),
               EngineSpec(num_blocks=num_blocks, max_num_batched_tokens=48, max_num_seqs=4,
                          mode=mode, backend=backend, reserve_full_prompt=full_prompt))
    stepper = Stepper(e)
    for r in reqs:
        stepper.add(r, 0.0)
    stepper.step()  # (woken: plans the first step)
    steps, done = 0, {}
    while not stepper.idle and steps < 100:
        for r in stepper.step():
            done[r.rid] = steps
        steps += 1
    return e, steps, [done[r.rid] for r in reqs]


def test_a_partial_prefill_short_of_blocks_preempts_itself():
    """5 blocks; A: 16-token prompt, 20 out; B: 64-token prompt, 2 out. Step 0: A's 16 tokens (1
    block) and B's first 32 (2 blocks), 2 free. Step 1: A's decode takes a block (1 free), B's
    next 32 tokens need 2: B is running[-1], so vLLM preempts B itself (#1, 3 free after its 2,
    nothing admitted). Before 0.19 B comes back at once (47 tokens, 3 blocks, 0 free), and every
    other step its last 17 tokens need a block it cannot have: preempted on steps 1, 3, …, 15
    (8); at step 17 A's decode needs a block and pops B (#9); A's 20th token is at step 19; B
    runs 48 + 16 tokens (steps 20, 21) and its second token at step 22: 23 steps, 9
    preemptions, all of B."""
    e, steps, done = _run(5, [Request(0, 0.0, 16, 20), Request(1, 0.0, 64, 2)], False)
    assert (e.preemptions, steps, done) == (9, 23, [19, 22])


def test_from_0_19_a_waiting_request_needs_blocks_for_its_whole_sequence():
    """The same two requests under vLLM 0.19: B is preempted once at step 1 (as above); its whole
    sequence then needs ⌈64/16⌉ = 4 blocks against 3 free (2 after A's block at step 17), so it
    waits until A finishes at step 19: 1 preemption, 23 steps. napkin before this rule (B kept
    its 2 blocks and waited): 0 preemptions, 22 steps."""
    e, steps, done = _run(5, [Request(0, 0.0, 16, 20), Request(1, 0.0, 64, 2)], True)
    assert (e.preemptions, steps, done) == (1, 23, [19, 22])


@pytest.mark.parametrize(("full_prompt", "steps", "b_done"), [(False, 3, 2), (True, 5, 4)])
def test_the_full_sequence_gate_delays_a_long_prompt(full_prompt, steps, b_done):
    """7 blocks; A: 15-token prompt, 2 out; B: 97-token prompt, 1 out. Before 0.19: step 0 runs
    A's 15 tokens (1 block) and B's first 33 (3 blocks); step 1 A's decode (A done) and B's next
    47 (+2 blocks); step 2 B's last 17 (+2, its one token): 3 steps. From 0.19: B's ⌈97/16⌉ = 7
    blocks do not fit beside A's 1 until A is done after step 1; B then runs 48, 48 and 1
    tokens in steps 2–4: 5 steps. No preemption either way."""
    e, n, done = _run(7, [Request(0, 0.0, 15, 2), Request(1, 0.0, 97, 1)], full_prompt)
    assert (e.preemptions, n, done[1]) == (0, steps, b_done)


def test_the_rules_are_vllms_only():
    """TensorRT-LLM's policy (blocks of the whole length reserved at admission) neither
    preempts nor gates: the first trace above runs without a preemption."""
    e, _, _ = _run(5, [Request(0, 0.0, 16, 20), Request(1, 0.0, 64, 2)], True, backend="trtllm")
    assert e.preemptions == 0


def test_the_full_sequence_gate_is_vllm_0_19_and_later():
    assert reserves_full_prompt("vllm", "0.19.0") and reserves_full_prompt("vllm", "0.23.1")
    assert reserves_full_prompt("vllm", "")  # an unknown release is the current one
    assert not reserves_full_prompt("vllm", "0.18.0")
    assert not reserves_full_prompt("sglang", "0.5.8") and not reserves_full_prompt("trtllm", "")
