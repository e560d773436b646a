"""The simulator's speed in two trees, every scenario kind, run interleaved.

The machine's speed moves by a quarter within a session, so figures taken at different hours do
not compare; this script runs both trees side by side, round after round, and prints ratios.
It extracts REV (and ``--tree REV2``, else it uses this working tree) with ``git archive`` into
a temporary folder, byte-compiles both trees (see ``serve_cold.py``), and for each round:

- each row of each kind in ``--kinds`` (``serve_kinds.py``: ``vllm`` — ``serve_speed.py``'s
  workload on the roofline and the shipped vLLM profile, at ``--sizes`` — ``trtllm``,
  ``sglang``, ``prefix-caching``, ``windows``, ``disaggregated``, ``multi-replica``,
  ``closed-loop``, ``speculative``, ``static``; all by default): the best of ``--best``
  simulations in one fresh interpreter per tree, in requests per wall-second of
  ``Built.simulate`` (the engines' construction, well under a millisecond, included; the
  workload's draw not);
- with ``--million``: one simulation of 1,000,000 requests of Vidur's workload
  (``serve_cold.py``'s scenario: Llama-2-7B on one H100, 512 → 128 tokens, Poisson 5/s) in
  each tree, in-process (over a minute a tree on the 2-core machine);
- a cold ``napkin serve simulate`` of Vidur's workload at each ``--cold`` count (10, 1,000
  and 10,000 requests) through each tree's own console script (its ``pyproject.toml``'s
  ``napkin`` entry: how the command starts and ends there; whole-process seconds), and the
  floor the issue measures start-up against, ``python -c "import numpy, pydantic"``.

With ``--cpu`` every figure is CPU seconds (user + system: the worker's ``process_time``, a
cold run's from ``getrusage``) instead of wall seconds: steadier where other work shares the
machine, as on a 2-core machine other sessions run tests on. With ``--instructions`` every
figure is machine instructions counted by valgrind's callgrind (it must be on the path), the
same to ~0.1 % from run to run whatever else the machine does: a cold run's whole process, a
row's one simulation (its worker with one ``simulate()`` less the same worker with none; the
workload's draw and the engines' construction cancel), with ``PYTHONHASHSEED=0`` and
``OPENBLAS_NUM_THREADS=1`` for both trees (an older tree's idle BLAS threads spin otherwise).
Valgrind runs Python about 50× slower: give small ``--sizes`` or ``--scale`` (every row's
default count times a fraction, e.g. 0.1), one round (``--rounds 1 --best 1``; the counts do
not move between rounds); ``--million`` is refused.

Each line reads REV → the other tree, with the ratio of the other tree to REV (above 1: faster
than REV); the trees swap turns every round, and a summary gives each row's range over the
rounds. Both trees validate the same scenario mappings (``serve_kinds.py``; none of either
tree's catalog scenarios), and the models and profiles they name are the catalog's: the script
notes any of those files that differ between the trees. A row a tree cannot run (an older
revision without the feature) prints its error's last line instead of a figure.

Usage: python benchmarks/serve_speed_vs.py REV [--tree REV2] [--kinds KIND ...] [--sizes N ...]
[--scale F] [--cold N ...] [--million] [--cpu | --instructions] [--rounds R] [--best K].
Check the script itself with the same revision twice (``REV --tree REV``, ratios about 1: the
noise floor); figures in docs/serving.md, "How fast the simulator runs".
"""

import argparse
import compileall
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml

from arguments import fraction, whole_number
from serve_cold import SCENARIO
from serve_kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
CATALOG = Path("napkin") / "catalog"

WORKER = """import json, sys, time
from pathlib import Path
from napkin.serving.scenario import Scenario, build
data, n, best, cpu = json.loads(sys.stdin.read())
clock = time.process_time if cpu else time.perf_counter
walls = []
for _ in range(best):
    built = build(Scenario.model_validate(data), Path("."))
    start = clock()
    built.simulate()
    walls.append(clock() - start)
print(json.dumps(n / min(walls)))
"""

COUNTING = """import json, sys
from pathlib import Path
from napkin.serving.scenario import Scenario, build
data, runs = json.loads(sys.stdin.read())
built = build(Scenario.model_validate(data), Path("."))
for _ in range(runs):
    built.simulate()
"""
"""The worker under ``--instructions``: one simulation, or none (the baseline)."""

Clock = Literal["wall", "cpu", "instructions"]
"""What a figure counts: wall seconds, CPU seconds, or millions of machine instructions."""

Tree = tuple[str, Path]
"""A tree's label and its ``src`` folder."""


def _commit(parser: argparse.ArgumentParser, name: str, rev: str) -> None:
    """Refuse (one usage line) a ``rev`` that is not a commit of this repository."""
    check = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                            f"{rev}^{{commit}}"], capture_output=True, text=True)
    if check.returncode != 0:
        parser.error(f"argument {name}: {rev!r} is not a commit of this repository")


def _extract(rev: str, into: Path) -> Path:
    """REV's tree under ``into``; its ``src`` folder (its ``pyproject.toml`` beside)."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "pyproject.toml"],
                             check=True, capture_output=True).stdout
    path = into / "rev.tar"
    path.write_bytes(archive)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _console(src: Path) -> str:
    """``python -c`` code that runs the tree's own ``napkin`` console script (its
    ``pyproject.toml`` entry, ``module:function``): how ``napkin`` starts and ends in that
    revision."""
    entry = tomllib.loads((src.parent / "pyproject.toml").read_text())["project"]["scripts"]
    module, function = entry["napkin"].split(":")
    return f"from {module} import {function}; {function}()"


def _run(src: Path | None, args: list[str], stdin: str = "", counted: bool = False
         ) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with ``src`` (if any) first on the path, from the repository root
    (``counted``: under callgrind, with hashing and BLAS threads fixed)."""
    env = dict(os.environ, PYTHONPATH=str(src)) if src else dict(os.environ)
    command = [sys.executable, *args]
    if counted:
        env.update(PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    return subprocess.run(command, input=stdin, text=True, capture_output=True, env=env,
                          cwd=ROOT)


def _failure(done: subprocess.CompletedProcess[str]) -> str:
    """The last line of a failed run's errors."""
    return (done.stderr.strip().splitlines() or ["failed"])[-1]


def collected_millions(stderr: str) -> float:
    """Millions of instructions callgrind reports (its ``Collected : N`` line)."""
    found = re.search(r"Collected : (\d+)", stderr)
    if found is None:
        raise ValueError("no 'Collected :' line in valgrind's output")
    return int(found.group(1)) / 1e6


def _rate(src: Path, scenario: dict[str, Any], n: int, best: int, clock: Clock
          ) -> float | str:
    """Simulated requests per wall-second (``cpu``: per CPU-second), the best of ``best`` runs
    in one interpreter; ``instructions``: millions of instructions of one simulation. The
    error's last line where the tree cannot run the scenario."""
    if clock == "instructions":
        runs = [_run(src, ["-c", COUNTING], json.dumps([scenario, k]), counted=True)
                for k in (1, 0)]
        failed = next((done for done in runs if done.returncode), None)
        if failed:
            return _failure(failed)
        one, none = (collected_millions(done.stderr) for done in runs)
        return one - none
    done = _run(src, ["-c", WORKER], json.dumps([scenario, n, best, clock == "cpu"]))
    if done.returncode:
        return _failure(done)
    return float(json.loads(done.stdout))


def _whole_process(args: list[str], clock: Clock, src: Path | None = None) -> float | str:
    """``python ARGS`` whole (``src`` first on the path): its wall seconds, (``cpu``) its user
    and system CPU seconds, or (``instructions``) its millions of instructions; the error's
    last line where it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = _run(src, args, counted=clock == "instructions")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        return _failure(done)
    if clock == "instructions":
        return collected_millions(done.stderr)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            if clock == "cpu" else wall)


def _differing(trees: list[Tree], scenarios: list[dict[str, Any]]) -> list[str]:
    """The catalog files (models, profiles) the scenarios name that differ between the
    trees."""
    names = {CATALOG / "models" / f"{s['model']}.json" for s in scenarios}
    names |= {CATALOG / "profiles" / f"{s['calibration']}.yaml" for s in scenarios
              if s.get("calibration", "auto") not in ("auto", "roofline")}
    (_, a), (_, b) = trees
    return sorted(str(p) for p in names
                  if not ((a / p).exists() and (b / p).exists()
                          and (a / p).read_bytes() == (b / p).read_bytes()))


def _figure(v: float | str, unit: str) -> str:
    """A rate (requests a second), a time in seconds, millions of instructions, or a tree's
    failure."""
    if isinstance(v, str):
        return f"failed ({v})"
    return (f"{v:,.0f} {unit}" if unit.startswith(("requests", "M ")) else f"{v:.2f} {unit}")


def _span(values: list[float], unit: str) -> str:
    """The range of a row's figures over the rounds."""
    low, high = _figure(min(values), unit), _figure(max(values), unit)
    return low if low == high else f"{low.removesuffix(' ' + unit)}–{high}"


def _ratio(old: float, new: float, unit: str) -> float:
    """The second tree's speed over the first's (above 1: faster)."""
    return new / old if unit.startswith("requests") else old / new


Seen = dict[tuple[str, str], list[tuple[float, float]]]
"""Each row's (both trees') figures over the rounds, by the row and its unit."""


def _compare(seen: Seen, r: int, what: str,
             old: float | str, new: float | str, unit: str) -> None:
    """Print one comparison and keep its figures for the summary (not where a tree failed)."""
    both = not isinstance(old, str) and not isinstance(new, str)
    tail = f" ({_ratio(old, new, unit):.2f}×)" if both else ""
    print(f"round {r}: {what}: {_figure(old, unit)} → {_figure(new, unit)}{tail}", flush=True)
    if both:
        seen.setdefault((what, unit), []).append((old, new))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the commit, tag or branch of this repository to compare "
                                    "against")
    parser.add_argument("--tree", metavar="REV2",
                        help="the revision to compare with REV (default: this working tree)")
    parser.add_argument("--kinds", nargs="+", choices=list(KINDS), default=list(KINDS),
                        metavar="KIND", help=f"scenario kinds (default all: {', '.join(KINDS)})")
    parser.add_argument("--sizes", nargs="+", type=whole_number, metavar="N",
                        help="request counts of the vllm kind's rows (default 50,000)")
    parser.add_argument("--scale", type=fraction, default=1.0, metavar="F",
                        help="every row's default request count times F (at least 100; "
                             "--sizes still sets the vllm rows'): all kinds in minutes under "
                             "--instructions")
    parser.add_argument("--cold", nargs="*", type=whole_number, default=[10, 1_000, 10_000],
                        metavar="N", help="request counts of the cold serve simulate runs of "
                                          "Vidur's workload (default 10 1000 10000; none: skip)")
    parser.add_argument("--million", action="store_true",
                        help="also 1,000,000 requests of Vidur's workload in-process (slow)")
    counting = parser.add_mutually_exclusive_group()
    counting.add_argument("--cpu", action="store_true",
                          help="time by CPU seconds (user + system) instead of wall seconds: "
                               "steadier where other work shares the machine")
    counting.add_argument("--instructions", action="store_true",
                          help="count machine instructions under valgrind's callgrind: "
                               "deterministic, ~50x slower (small --sizes, one round)")
    parser.add_argument("--rounds", type=whole_number, default=3)
    parser.add_argument("--best", type=whole_number, default=3)
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("argument --instructions: valgrind is not on the path")
    if args.instructions and args.million:
        parser.error("argument --million: not allowed with --instructions (hours under "
                     "valgrind)")
    clock: Clock = "instructions" if args.instructions else "cpu" if args.cpu else "wall"
    _commit(parser, "rev", args.rev)
    if args.tree is not None:
        _commit(parser, "--tree", args.tree)
    rows = [(label if len(args.sizes or ()) < 2 else f"{label}, {n:,}", n, make(n), args.best)
            for kind in args.kinds for label, default, make in KINDS[kind]
            for n in (args.sizes if kind == "vllm" and args.sizes
                      else [max(100, round(default * args.scale))])]
    if args.million:
        rows.append(("Vidur's workload", 1_000_000,
                     yaml.safe_load(SCENARIO.format(n=1_000_000)), 1))
    seen: Seen = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees: list[Tree] = [(args.rev, _extract(args.rev, Path(tmp) / "rev")),
                             (args.tree, _extract(args.tree, Path(tmp) / "tree"))
                             if args.tree else ("this tree", ROOT / "src")]
        for _, src in trees:
            compileall.compile_dir(src / "napkin", quiet=1)
        named = [scenario for _, _, scenario, _ in rows]
        if args.cold:
            named.append(yaml.safe_load(SCENARIO.format(n=10)))
        for path in _differing(trees, named):
            print(f"note: {path} differs between the trees (or one lacks it): the rows "
                  "naming it compare different inputs", flush=True)
        cold = {}
        for n in args.cold:
            cold[n] = Path(tmp) / f"vidur-{n}.yaml"
            cold[n].write_text(SCENARIO.format(n=n))
        rate, seconds = {"wall": ("requests/s", "s"), "cpu": ("requests/CPU-s", "CPU s"),
                         "instructions": ("M instructions", "M instructions")}[clock]
        for r in range(1, args.rounds + 1):
            turn = (0, 1) if r % 2 else (1, 0)  # which tree goes first alternates
            for label, n, scenario, best in rows:
                got = {i: _rate(trees[i][1], scenario, n, best, clock) for i in turn}
                _compare(seen, r, f"{label}, {n:,} requests", got[0], got[1], rate)
            for n, path in cold.items():
                got = {i: _whole_process(["-c", _console(trees[i][1]), "serve", "simulate",
                                          str(path), "--format", "json"], clock, trees[i][1])
                       for i in turn}
                _compare(seen, r, f"cold serve simulate, Vidur's workload, {n:,} requests",
                         got[0], got[1], seconds)
            if cold:
                floor = _whole_process(["-c", "import numpy, pydantic"], clock)
                print(f"round {r}: python -c \"import numpy, pydantic\": "
                      f"{_figure(floor, seconds)}", flush=True)
    print(f"\n{args.rev} → {trees[1][0]} over {args.rounds} round(s), ranges (the ratio: how "
          "many times as fast the second tree runs):")
    for (what, unit), pairs in seen.items():
        ratios = [f"{_ratio(old, new, unit):.2f}" for old, new in pairs]
        low, high = min(ratios, key=float), max(ratios, key=float)
        print(f"  {what}: {_span([p[0] for p in pairs], unit)} → "
              f"{_span([p[1] for p in pairs], unit)} ({low if low == high else low + '–' + high}×)")


if __name__ == "__main__":
    main()
