"""Speed of ``napkin plan`` on the shipped 70B question (examples/plan-llama-70b-fp8.yaml):
configurations/s and simulations/s with 1 and 2 workers on the local process pool.

Usage: python benchmarks/plan_speed.py
"""

from napkin.catalog import scenario_file
from napkin.planning.search import run_plan
from napkin.planning.spec import load_plan


def main() -> None:
    plan, base = load_plan(scenario_file("plan-llama-70b-fp8.yaml"))
    walls = {}
    for jobs in (1, 2):
        r = run_plan(plan, base, jobs=jobs)
        walls[jobs] = r.wall_s
        n = len(r.evaluations)
        print(f"{jobs} worker(s): {n} configurations, {r.simulations} simulations in "
              f"{r.wall_s:.1f} s: {n / r.wall_s:.1f} configurations/s, "
              f"{r.simulations / r.wall_s:.1f} simulations/s; {r.count('feasible')} feasible, "
              f"cheapest {r.cheapest.candidate.label() if r.cheapest else 'none'}")
    print(f"speed-up 1 → 2 workers: {walls[1] / walls[2]:.2f}×")


if __name__ == "__main__":
    main()
