"""The compiled core (``napkin.serving.compiled_core``) cold and warm, against the scheduler.

Each figure is one fresh interpreter simulating Vidur's workload (``serve_cold.py``'s
scenario: Llama-2-7B on one H100, 512 → 128 tokens, Poisson 5/s) in-process, timing
``Built.simulate`` (imports and the workload's draw not counted; numba's import and the
compiled code's load are, as they happen inside the run):

- ``cold``: the core with an empty on-disk cache (a fresh ``NUMBA_CACHE_DIR``): it compiles,
  as the first run after an install does;
- ``warm``: the core again with that cache filled;
- ``scheduler``: ``NAPKIN_COMPILED=0``, the pure-Python reference.

The three runs' records are checked equal (a digest of every column). With ``--replicas K``
the workload runs on K such engines behind least-outstanding routing (``--least-kv``:
least-KV) at K times the rate (the core runs them side by side:
``napkin.serving.compiled_routing``).

Usage: python benchmarks/compiled_speed.py [requests ...] [--replicas K] [--least-kv]
(default 1,000,000)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from arguments import whole_number
from serve_cold import SCENARIO

WORKER = """import hashlib, json, sys, time
from pathlib import Path
import numpy as np
import yaml
from napkin.serving.scenario import Scenario, build
built = build(Scenario.model_validate(yaml.safe_load(sys.stdin.read())), Path("."))
start = time.perf_counter()
run = built.simulate()
wall = time.perf_counter() - start
h = hashlib.sha256()
for name, values in vars(run.records).items():
    if values is not None:
        h.update(name.encode() + np.ascontiguousarray(values).tobytes())
print(json.dumps([wall, h.hexdigest()]))
"""


def _scenario(n: int, replicas: int, router: str = "least_outstanding") -> str:
    """Vidur's workload of ``n`` requests, on ``replicas`` engines behind ``router`` at
    ``replicas`` times the rate (one engine: as ``serve_cold.py`` has it)."""
    doc = yaml.safe_load(SCENARIO.format(n=n))
    if replicas > 1:
        doc["engine"] |= {"replicas": replicas, "router": router}
        doc["workload"]["arrivals"]["rate_per_s"] *= replicas
    return yaml.safe_dump(doc)


def _run(n: int, replicas: int, router: str, env: dict[str, str]) -> tuple[float, str]:
    done = subprocess.run([sys.executable, "-c", WORKER], input=_scenario(n, replicas, router),
                          text=True, capture_output=True, env={**os.environ, **env}, check=True)
    wall, digest = json.loads(done.stdout)
    return wall, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", nargs="*", type=whole_number, default=[1_000_000],
                        help="request counts (default 1,000,000)")
    parser.add_argument("--replicas", type=whole_number, default=1,
                        help="engines behind least-outstanding routing (default 1)")
    parser.add_argument("--least-kv", action="store_true",
                        help="route the replicas by least KV in use instead")
    args = parser.parse_args()
    k = args.replicas
    router = "least_kv" if args.least_kv else "least_outstanding"
    for n in args.requests:
        with tempfile.TemporaryDirectory() as cache:
            core = {"NUMBA_CACHE_DIR": str(Path(cache)), "NAPKIN_COMPILED": "1"}
            cold = _run(n, k, router, core)
            warm = _run(n, k, router, core)
        scheduler = _run(n, k, router, {"NAPKIN_COMPILED": "0"})
        same = len({cold[1], warm[1], scheduler[1]}) == 1
        where = f" on {k} replicas ({router})" if k > 1 else ""
        print(f"{n:,} requests{where}: scheduler {scheduler[0]:.2f} s "
              f"({n / scheduler[0]:,.0f} req/s); "
              f"core cold {cold[0]:.2f} s ({scheduler[0] / cold[0]:.2f}×), warm "
              f"{warm[0]:.2f} s ({scheduler[0] / warm[0]:.2f}×); records "
              f"{'identical' if same else 'DIFFER'}", flush=True)


if __name__ == "__main__":
    main()
