"""Wall time of a cold `napkin model qwen3-8b` (a fresh interpreter each run).

Usage: python benchmarks/cli_startup.py [runs]. Prints min / median / max over the runs, for the
table and the JSON output (JSON skips importing rich). Aim: under 0.3 s.
"""

import shutil
import statistics
import subprocess
import sys
import time


def wall_times(cmd: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    exe = shutil.which("napkin") or sys.exit("napkin is not on PATH: pip install -e . first")
    for label, extra in (("table", []), ("json", ["--format", "json"])):
        t = wall_times([exe, "model", "qwen3-8b", *extra], runs)
        print(f"napkin model qwen3-8b ({label}): min {min(t):.3f} s, "
              f"median {statistics.median(t):.3f} s, max {max(t):.3f} s over {runs} runs")


if __name__ == "__main__":
    main()
