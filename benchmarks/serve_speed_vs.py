"""This tree's simulator speed against another revision's, run interleaved.

The machine's speed moves by a quarter within a session, so figures taken at different hours do
not compare; this script runs both trees side by side, round after round, and prints ratios.
It extracts REV (``git archive``) into a temporary folder, byte-compiles both trees (see
``serve_cold.py``), and for each round:

- ``serve_speed.py``'s workload at each size, on the roofline and the shipped vLLM profile: the
  best of ``--best`` simulations in one fresh interpreter per tree (requests per wall-second);
- a cold ``napkin serve simulate`` of Vidur's workload (``serve_cold.py``'s scenario) at 10 and
  10,000 requests through each tree (whole-process seconds).

Both trees run this tree's scenarios (a revision older than the vLLM profile cannot run that
row). Usage: python benchmarks/serve_speed_vs.py REV [--sizes N ...] [--rounds R] [--best K]
"""

import argparse
import compileall
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from serve_cold import SCENARIO
from serve_speed import whole_number

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent

WORKER = """import json, sys, time
from pathlib import Path
sys.path.insert(0, {bench!r})
from serve_speed import scenario
from napkin.serving.scenario import build
from napkin.serving.simulate import simulate
n, calibration, best = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
walls = []
for _ in range(best):
    built = build(scenario(n, calibration=calibration), Path("."))
    engines = built.engines()
    start = time.perf_counter()
    simulate(engines, built.source)
    walls.append(time.perf_counter() - start)
print(json.dumps(n / min(walls)))
"""


def _extract(rev: str, into: Path) -> Path:
    """REV's tree under ``into``; its ``src`` folder."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True,
                             capture_output=True).stdout
    path = into / "rev.tar"
    path.write_bytes(archive)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _rate(src: Path, n: int, calibration: str, best: int) -> float:
    out = subprocess.run([sys.executable, "-c", WORKER.format(bench=str(BENCH)), str(n),
                          calibration, str(best)], env=dict(os.environ, PYTHONPATH=str(src)),
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out))


def _cold(src: Path, scenario: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from napkin.cli.main import main; main()", "serve",
                    "simulate", str(scenario), "--format", "json"],
                   env=dict(os.environ, PYTHONPATH=str(src)), cwd=ROOT, check=True,
                   capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="a commit, tag or branch of this repository")
    parser.add_argument("--sizes", nargs="+", default=[10_000],
                        type=whole_number, metavar="N",
                        help="request counts of serve_speed's workload (default 10,000)")
    parser.add_argument("--rounds", type=whole_number, default=3)
    parser.add_argument("--best", type=whole_number, default=3)
    args = parser.parse_args()
    check = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                            f"{args.rev}^{{commit}}"], capture_output=True, text=True)
    if check.returncode != 0:
        parser.error(f"argument rev: {args.rev!r} is not a commit of this repository")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {args.rev: _extract(args.rev, Path(tmp)), "this tree": ROOT / "src"}
        for src in trees.values():
            compileall.compile_dir(src / "napkin", quiet=1)
        scenarios = {}
        for n in (10, 10_000):
            scenarios[n] = Path(tmp) / f"vidur-{n}.yaml"
            scenarios[n].write_text(SCENARIO.format(n=n))
        for r in range(1, args.rounds + 1):
            for n in args.sizes:
                for calibration in ("roofline", "vllm"):
                    rates = {name: _rate(src, n, calibration, args.best)
                             for name, src in trees.items()}
                    old, new = rates.values()
                    print(f"round {r}: serve_speed {n:,} requests, {calibration}: {old:,.0f} → "
                          f"{new:,.0f} requests/s ({new / old:.2f}×)", flush=True)
            for n, path in scenarios.items():
                walls = {name: _cold(src, path) for name, src in trees.items()}
                old, new = walls.values()
                print(f"round {r}: cold serve simulate, Vidur's workload, {n:,} requests: "
                      f"{old:.2f} s → {new:.2f} s ({old / new:.2f}×)", flush=True)


if __name__ == "__main__":
    main()
