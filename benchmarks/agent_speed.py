"""How fast napkin analyses logged agent trajectories (schedule, critical path, state curve).

Usage: python benchmarks/agent_speed.py. Builds synthetic logs of N steps (a chain of model
calls, each followed by two parallel tools holding the round's context; every state a branch of a
shared prefix) and prints the wall time of ``analyze`` and of a speedup reschedule.
"""

import time

from napkin.agents.analysis import analyze
from napkin.agents.timeline import speed_up
from napkin.agents.trajectory import parse_trajectory


def synthetic(rounds: int) -> dict:
    steps, states = [], {"prefix": {"tokens": 2000}}
    prev: list[str] = []
    for r in range(rounds):
        states[f"ctx{r}"] = {"tokens": 300, "parent": "prefix"}
        steps.append({"id": f"m{r}", "kind": "model", "after": prev, "duration_s": 2.0,
                      "input_tokens": 2000 + 300 * r, "cached_tokens": 2000 + 300 * (r - 1)
                      if r else 0, "output_tokens": 200})
        steps += [{"id": f"t{r}{x}", "kind": "tool", "after": [f"m{r}"], "duration_s": d,
                   "holds": [f"ctx{r}"]} for x, d in (("a", 1.0), ("b", 3.0))]
        prev = [f"t{r}a", f"t{r}b"]
    return {"model": "qwen3-8b", "states": states, "steps": steps}


def main() -> None:
    for rounds in (30, 300, 3000):
        data = synthetic(rounds)
        start = time.perf_counter()
        traj = parse_trajectory(data)
        parsed = time.perf_counter()
        a = analyze(traj)
        analysed = time.perf_counter()
        speed_up(traj, a.durations, [("m*", 2.0)])
        done = time.perf_counter()
        print(f"{len(traj.steps):>4} steps: parse {parsed - start:.3f} s, analyze "
              f"{analysed - parsed:.3f} s, speedup {done - analysed:.3f} s "
              f"(critical path {a.dag.makespan_s:,.0f} s, {a.dag_state.gib_seconds:,.2f} GiB·s)")


if __name__ == "__main__":
    main()
