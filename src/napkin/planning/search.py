"""``napkin plan``: evaluate every candidate of a plan, rank the feasible ones by cost.

Candidates that differ only in their replica count form a group, evaluated in increasing
replica count (:func:`napkin.planning.evaluate.evaluate`) until one meets the SLO with
P(SLO met) ≥ ``slo.confidence``; the larger counts of that group cost more and are recorded as
dominated, not simulated (more replicas of the same engine behind the same router do not serve
worse). Groups run on a local process pool (``jobs``: 0 = one per core, 1 = in this process)
or as Ray tasks; results come back in the search space's order whatever the pool, so a plan
with given seeds always gives the same answer. Feasible configurations (sure enough) are
ranked by $/hour, then by $/M output tokens; the cheapest carries the load.
"""

import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from napkin.errors import NapkinError, require
from napkin.planning.compare import GpuPoint, best_per_gpu, gpu_point, single_replicas
from napkin.planning.evaluate import Evaluation, evaluate
from napkin.planning.spec import Candidate, PlanFile, candidates
from napkin.serving import compiled
from napkin.serving.workload import Workload, expected_requests, load_workload


@dataclass(frozen=True)
class PlanResult:
    plan: PlanFile
    evaluations: tuple[Evaluation, ...]
    """Every candidate, in the search space's order."""
    wall_s: float
    jobs: int
    max_rates: dict[Candidate, float | None]
    """Maximum sustainable offered rate (requests/s, one seed, within 10 %) of the cheapest
    feasible configuration of each GPU type."""
    gpu_points: tuple[GpuPoint, ...] = ()
    """One replica of every aggregated configuration that met the SLO, at its maximum
    sustainable rate (:mod:`napkin.planning.compare`)."""

    def gpu_best(self) -> dict[str, GpuPoint]:
        """Per GPU type, the settings with the most requests/s per GPU."""
        return best_per_gpu(list(self.gpu_points))

    def pareto_by_gpu(self) -> dict[str, list[Evaluation]]:
        """:attr:`pareto` within each GPU type's feasible configurations."""
        out: dict[str, list[Evaluation]] = {}
        for gpu in sorted({e.candidate.gpu for e in self.evaluations}):
            mine = replace(self, evaluations=tuple(e for e in self.evaluations
                                                   if e.candidate.gpu == gpu))
            if front := mine.pareto:
                out[gpu] = front
        return out

    @property
    def feasible(self) -> list[Evaluation]:
        """Feasible configurations, cheapest first."""
        ok = [e for e in self.evaluations if e.status == "feasible"]
        return sorted(ok, key=lambda e: (e.usd_per_hour, e.usd_per_m_output_tokens or 0.0,
                                         e.candidate.label()))

    @property
    def knife_edge(self) -> list[Evaluation]:
        """Configurations that meet the SLO at the predicted times but with P(SLO met) below
        ``slo.confidence``, cheapest first."""
        edge = [e for e in self.evaluations if e.status == "knife-edge"]
        return sorted(edge, key=lambda e: (e.usd_per_hour, e.candidate.label()))

    @property
    def cheapest(self) -> Evaluation | None:
        f = self.feasible
        return f[0] if f else None

    @property
    def pareto(self) -> list[Evaluation]:
        """The feasible simulated configurations on the throughput frontier, fastest per user
        first: each kept when its output tokens/s per GPU exceeds that of every configuration
        faster per user (no other feasible one is better on both axes)."""
        ok = sorted((e for e in self.evaluations if e.status == "feasible"
                     and e.tokens_per_s_per_user is not None
                     and e.tokens_per_s_per_gpu is not None),
                    key=lambda e: -(e.tokens_per_s_per_user or 0.0))
        front: list[Evaluation] = []
        best = -1.0
        for e in ok:
            if (e.tokens_per_s_per_gpu or 0.0) > best:
                front.append(e)
                best = e.tokens_per_s_per_gpu or 0.0
        return front

    def count(self, status: str) -> int:
        return sum(e.status == status for e in self.evaluations)

    @property
    def simulations(self) -> int:
        return sum(e.seeds_run for e in self.evaluations)

    def cheapest_by_gpu(self) -> dict[str, Evaluation]:
        out: dict[str, Evaluation] = {}
        for e in self.feasible:
            out.setdefault(e.candidate.gpu, e)
        return out


def _resolved(plan: PlanFile, base_dir: Path) -> tuple[Workload, Path]:
    if isinstance(plan.workload, str):
        return load_workload(base_dir / plan.workload)
    return plan.workload, base_dir


def _group(args: tuple[list[Candidate], PlanFile, Workload, Path]) -> list[Evaluation]:
    """Evaluations of one group (same but for replicas), replicas ascending, stopping at the
    first feasible one (a knife-edge one does not stop it: more replicas may be sure)."""
    group, plan, workload, base_dir = args
    out: list[Evaluation] = []
    enough = None
    for c in sorted(group, key=lambda c: c.replicas):
        if enough is not None:
            usd = out[-1].usd_per_hour / out[-1].gpus * c.gpus if out else 0.0
            out.append(Evaluation(c, "pruned", f"dominated: {enough} replicas already meet "
                                  "the SLO for less", usd))
            continue
        e = evaluate(c, plan, workload, base_dir)
        out.append(e)
        if e.status == "feasible":
            enough = c.replicas
    return out


def _max_rate(args: tuple[Candidate, PlanFile, Workload, Path]) -> float | None:
    """Maximum sustainable offered rate of one configuration (one seed, 10 % bracket)."""
    from napkin.serving.sweep import sweep

    c, plan, workload, base_dir = args
    scenario = c.scenario(plan, workload)
    base = sweep(scenario, base_dir, loads=None, seeds=(0,), rel_tol=0.1, extra_points=False)
    return base.max_sustainable


def check(plan: PlanFile) -> None:
    """Refuse, before searching, what no candidate could use: an unknown model, GPU, weight or
    KV format, part kept in BF16, calibration profile, or a GPU without a price."""
    from napkin.accounting.forward import Precision
    from napkin.calibration.profile import load_profile
    from napkin.catalog import load_accelerator, load_model
    from napkin.catalog.checkpoints import resolve_unquantized
    from napkin.planning.prices import price_of

    model = load_model(plan.model)
    knobs = [k for k in ("mfu", "mbu", "step_overhead_ms") if getattr(plan, k) is not None]
    require(not knobs or plan.calibration == "roofline",
            f"{knobs[0] if knobs else ''}: applies with calibration: roofline only")
    for gpu in plan.search.gpus:
        load_accelerator(gpu)
        price_of(gpu, plan.prices)
    for w in plan.search.weights or [plan.weights]:
        for kv in plan.search.kv_dtypes or [plan.kv_dtype]:
            Precision.of(w, kv, unquantized=resolve_unquantized(plan.unquantized, model.name, w))
    if plan.calibration not in ("auto", "roofline"):
        load_profile(plan.calibration)
    elif plan.calibration == "auto":
        for backend in plan.search.backends:
            load_profile(backend)


class _RayPool:
    """The process pool's ``map`` over Ray tasks on a cluster (``address``) or a local Ray."""

    def __init__(self, address: str | None, workers: int) -> None:
        try:
            import ray
        except ImportError:
            raise NapkinError("executor: ray needs the ray extra (pip install "
                              "'napkin[ray]')") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            kwargs: dict[str, Any] = {"address": address} if address else {"num_cpus": workers}
            ray.init(include_dashboard=False, log_to_driver=False, **kwargs)

    def map(self, fn: Callable, tasks: list, chunksize: int = 1) -> list:
        remote = self.ray.remote(fn)
        return self.ray.get([remote.remote(t) for t in tasks])

    def shutdown(self) -> None:
        if self.started:
            self.ray.shutdown()


def run_plan(plan: PlanFile, base_dir: Path, jobs: int = 0,
             progress: Callable[[int, int], None] | None = None,
             executor: Literal["process", "ray"] = "process",
             ray_address: str | None = None) -> PlanResult:
    """Evaluate every candidate of ``plan`` (see the module docstring) on a local process pool
    of ``jobs`` workers, or as Ray tasks (``executor="ray"``: on the cluster at
    ``ray_address``, else on a local Ray with ``jobs`` CPUs)."""
    require(jobs >= 0, f"jobs: must be >= 0, got {jobs}")
    require(executor in ("process", "ray"),
            f"executor: must be process or ray, got {executor!r}")
    check(plan)
    workload, wl_dir = _resolved(plan, base_dir)
    cands = candidates(plan)
    require(len(cands) > 0, "search: no candidate within max_gpus")
    workers = jobs or os.cpu_count() or 1
    groups: dict[Candidate, list[Candidate]] = {}
    for c in cands:  # a disaggregated layout is a group of its own
        key = c if c.prefill_replicas else replace(c, replicas=0)
        groups.setdefault(key, []).append(c)
    tasks = [(g, plan, workload, wl_dir) for g in groups.values()]
    start = time.perf_counter()
    done: dict[Candidate, Evaluation] = {}
    pool: Any = None
    # the simulations ahead, each worker's share counted up front: a plan past the compiled
    # core's threshold takes it from its first run, not after 200,000 requests of the reference
    volume = len(cands) * plan.seeds * (expected_requests(workload.arrivals) or 0.0)
    if executor == "ray":
        pool = _RayPool(ray_address, workers)
    elif workers > 1:
        procs = min(workers, len(tasks))
        pool = ProcessPoolExecutor(procs, initializer=compiled.expect,
                                   initargs=(volume / procs,))
    else:
        compiled.expect(volume)
    try:
        results = map(_group, tasks) if pool is None else pool.map(_group, tasks, chunksize=1)
        for i, evals in enumerate(results):
            done.update((e.candidate, e) for e in evals)
            if progress:
                progress(i + 1, len(tasks))
        partial = PlanResult(plan, tuple(done[c] for c in cands), 0.0, workers, {})
        best = [e.candidate for e in partial.cheapest_by_gpu().values()]
        rate_tasks = [(c, plan, workload, wl_dir) for c in best]
        rates = list(map(_max_rate, rate_tasks) if pool is None else
                     pool.map(_max_rate, rate_tasks, chunksize=1))
        point_tasks = [(c, plan, workload, wl_dir)
                       for c in single_replicas(partial.evaluations)]
        points = list(map(gpu_point, point_tasks) if pool is None else
                      pool.map(gpu_point, point_tasks, chunksize=1))
    finally:
        if pool is not None:
            pool.shutdown()
    return PlanResult(plan, partial.evaluations, time.perf_counter() - start, workers,
                      dict(zip(best, rates, strict=True)), tuple(points))

