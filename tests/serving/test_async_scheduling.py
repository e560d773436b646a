"""Async scheduling (``engine.async_scheduling``): the scheduler plans step N + 1 while step N
runs, so what a request finishing in step N frees serves step N + 2 (vLLM's AsyncScheduler,
``vllm/v1/core/sched/async_scheduler.py``: the output of step N is handled after N + 1 was
scheduled; SGLang's and TensorRT-LLM's overlap schedulers alike)."""

from dataclasses import replace

import numpy as np
import pytest

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.serving.arrivals import OpenLoop
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.requests import RequestSet
from napkin.serving.simulate import SimRun, simulate
from napkin.timing.efficiency import Efficiency

SPEC = EngineSpec(num_blocks=1000, max_num_seqs=2, max_num_batched_tokens=64)


def _run(spec: EngineSpec) -> SimRun:
    """A (2 outputs), C (10), B (1), 4-token prompts, all at t = 0 in that order."""
    e = Engine(load_model("qwen3-0.6b"), load_accelerator("h100-sxm"), Precision.of(),
               Efficiency(0.5, 0.7, 1e-4), spec)
    return simulate([e], OpenLoop(RequestSet.build([0.0] * 3, [4] * 3, [2, 10, 1]), (0,)))


def _first_token_s(run: SimRun, rid: int) -> float:
    r = run.records
    return float(r.first_token_s[np.flatnonzero(r.rid == rid)[0]])


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_a_freed_slot_serves_the_step_after_next(mode):
    """Two slots. Step 1 prefills A and C; step 2 decodes both and A has its 2 tokens. Without
    async scheduling step 3 decodes C and prefills B (A's slot is free): B's token ends step 3.
    With it, step 3 was planned while step 2 ran, A still in its slot: step 3 decodes C alone
    and step 4 prefills B with C's decode. 10 steps either way (C's last token at step 10 ends
    the run in both: its tokens do not wait)."""
    sync = _run(replace(SPEC, mode=mode))
    lag = _run(replace(SPEC, mode=mode, async_scheduling=True))
    steps = _run(replace(SPEC, mode="exact")).engines[0].series_t
    assert _first_token_s(sync, 2) == pytest.approx(steps[2], rel=1e-12)
    assert _first_token_s(lag, 2) > _first_token_s(sync, 2)
    lag_steps = _run(replace(SPEC, mode="exact", async_scheduling=True)).engines[0].series_t
    assert _first_token_s(lag, 2) == pytest.approx(lag_steps[3], rel=1e-12)
    assert sync.engines[0].num_steps == lag.engines[0].num_steps == 10
    assert _first_token_s(lag, 0) == _first_token_s(sync, 0)


def test_an_idle_scheduler_frees_at_once():
    """One slot: A finishes, nothing else runs, so the scheduler handles A's output before it
    plans again and B starts the next step, as without async scheduling."""
    spec = replace(SPEC, max_num_seqs=1)
    sync, lag = _run(spec), _run(replace(spec, async_scheduling=True))
    np.testing.assert_array_equal(sync.records.first_token_s, lag.records.first_token_s)
    np.testing.assert_array_equal(sync.records.finish_s, lag.records.finish_s)


def test_the_chapters_run_preempts_more_with_it():
    """The chapter's uniform run (a pool that fills): blocks that come back a step later leave
    more steps short of blocks, so async scheduling preempts at least as often (58 → 63 here,
    docs/serving.md), and serves every request."""
    from pathlib import Path

    from napkin.serving.metrics import summarize
    from napkin.serving.scenario import build, load_scenario

    path = Path(__file__).resolve().parents[2] / "examples" / "chapter-3-1-uniform.yaml"
    runs = []
    for on in (False, True):
        built = build(*load_scenario(path, [f"engine.async_scheduling={str(on).lower()}"]))
        runs.append(summarize(built.simulate(), built.slo))
    assert runs[1].preemptions > runs[0].preemptions
    assert runs[0].requests == runs[1].requests == 480


def test_the_compiled_scheduler_runs_it_the_same(monkeypatch):
    """The scheduler compiled for the async switch gives the same records, bit for bit."""
    from napkin.serving import specialise

    runs = []
    for after in (10**18, 0):
        monkeypatch.setattr(specialise, "SPECIALISE_AFTER", after)
        monkeypatch.setattr(specialise, "CACHE", None)
        runs.append(_run(replace(SPEC, async_scheduling=True)).records)
    for name in ("first_token_s", "finish_s"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name))
