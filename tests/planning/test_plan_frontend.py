"""A plan's ``frontend`` and ``async_scheduling`` reach every candidate: a frontend whose work
caps a replica below the offered rate makes one replica infeasible."""

from pathlib import Path

from napkin.planning.search import run_plan
from napkin.planning.spec import PlanFile, candidates

HERE = Path(__file__).parent


def _plan(**extra: object) -> PlanFile:
    """Llama-3.1-8B on H100, 1,024 → 128 tokens at 12 requests/s, 1 to 3 replicas."""
    return PlanFile.model_validate({
        "name": "frontend", "model": "llama-3.1-8b",
        "workload": {"seed": 0, "classes": {"chat": {"input_tokens": 1024,
                                                     "output_tokens": 128}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 12, "duration_s": 20}},
        "slo": {"ttft_s": 1.0, "tpot_s": 0.05, "share": 0.9},
        "search": {"gpus": ["h100-sxm"], "tensor_parallel": [1], "replicas": [1, 2, 3],
                   "backends": ["vllm"]},
        "seeds": 1, **extra})


def test_every_candidate_carries_them():
    plan = _plan(frontend={"request_ms": 100}, async_scheduling=True)
    engines = [c.scenario(plan, plan.workload).engine for c in candidates(plan)]
    assert all(e.frontend is not None and e.frontend.request_ms == 100 for e in engines)
    assert all(e.async_scheduling for e in engines)


def test_a_frontend_ceiling_below_the_load_needs_another_replica():
    """One replica serves 12 requests/s of this workload on its own; a 100 ms frontend caps a
    replica at 10/s (< 12: its queue grows), so the cheapest feasible plan has two."""
    alone = run_plan(_plan(), HERE, jobs=1).cheapest
    capped = run_plan(_plan(frontend={"request_ms": 100}), HERE, jobs=1).cheapest
    assert alone is not None and alone.candidate.replicas == 1
    assert capped is not None and capped.candidate.replicas == 2


def test_a_frontend_below_the_load_is_pruned_without_simulating():
    """A 200 ms frontend serves 5 requests/s a replica: 1 and 2 replicas (12 and 6 offered a
    replica) are pruned by the frontend bound (2.4× and 1.2×), not simulated; 3 (0.8×) are."""
    result = run_plan(_plan(frontend={"request_ms": 200}, search={
        "gpus": ["h100-sxm"], "tensor_parallel": [1], "replicas": [1, 2, 3],
        "backends": ["vllm"]}), HERE, jobs=1)
    by = {e.candidate.replicas: e for e in result.evaluations}
    assert by[1].status == by[2].status == "pruned"
    assert by[1].reason.startswith("frontend bound") and by[2].reason.startswith("frontend bound")
    assert by[3].status != "pruned" or not by[3].reason.startswith("frontend bound")
