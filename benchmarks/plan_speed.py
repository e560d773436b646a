"""Speed of ``napkin plan`` on the shipped 70B question (examples/plan-llama-70b-fp8.yaml):
configurations/s and simulations/s with 1 and 2 workers on the local process pool and on a
local Ray (when the ray extra is installed).

Usage: python benchmarks/plan_speed.py
"""

from napkin.catalog import scenario_file
from napkin.planning.search import run_plan
from napkin.planning.spec import load_plan


def main() -> None:
    plan, base = load_plan(scenario_file("plan-llama-70b-fp8.yaml"))
    import importlib.util

    executors = ["process"] + (["ray"] if importlib.util.find_spec("ray") else [])
    for executor in executors:
        walls = {}
        for jobs in (1, 2):
            r = run_plan(plan, base, jobs=jobs, executor=executor)
            walls[jobs] = r.wall_s
            n = len(r.evaluations)
            print(f"{executor}, {jobs} worker(s): {n} configurations, {r.simulations} "
                  f"simulations in {r.wall_s:.1f} s: {n / r.wall_s:.1f} configurations/s, "
                  f"{r.simulations / r.wall_s:.1f} simulations/s; {r.count('feasible')} "
                  f"feasible, cheapest "
                  f"{r.cheapest.candidate.label() if r.cheapest else 'none'}")
        print(f"{executor}: speed-up 1 → 2 workers: {walls[1] / walls[2]:.2f}×")


if __name__ == "__main__":
    main()
