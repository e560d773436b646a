"""Capacity planning: ``napkin plan``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.errors import NapkinError, require

if TYPE_CHECKING:
    from typing import Annotated

    from pydantic import Field

    from napkin.planning.spec import PlanFile

    PlanRef = str | Path | Mapping[str, Any] | PlanFile
    """A plan file, its mapping, or a loaded :class:`~napkin.planning.spec.PlanFile`."""

MAX_JOBS = 256
"""Most worker processes a plan starts (``jobs``; the CLI's ``--jobs`` takes the same)."""
MAX_TOP = 10_000
"""Most feasible configurations a plan lists (``top``; ``--top`` likewise)."""

EXPORT_SUFFIXES = (".csv", ".parquet", ".json")
"""Formats of :func:`plan`'s ``export`` (by the file's suffix)."""


def _plan(plan: PlanRef) -> tuple[PlanFile, Path]:
    """The plan and the folder its relative workload path resolves against."""
    from pydantic import ValidationError

    from napkin.planning.spec import PlanFile, load_plan
    from napkin.specs.files import validation_message

    if isinstance(plan, str | Path):
        return load_plan(plan)
    if isinstance(plan, PlanFile):
        return plan, Path.cwd()
    if not isinstance(plan, Mapping):
        raise NapkinError(f"plan: must be a file path, a mapping or a PlanFile, got "
                          f"{type(plan).__name__}")
    data = dict(plan)
    try:
        return PlanFile.model_validate(data), Path.cwd()
    except ValidationError as e:
        raise NapkinError(f"plan: {validation_message(e, data)}") from None


@checked
def plan(plan: PlanRef, *, jobs: Annotated[int, Field(ge=0, le=MAX_JOBS)] = 0,
         top: Annotated[int, Field(ge=1, le=MAX_TOP)] = 15, export: str | Path | None = None,
         executor: Literal["process", "ray"] = "process", ray_address: str | None = None,
         progress: Callable[[int, int], None] | None = None) -> Result:
    """The cheapest deployment that meets an SLO: search GPUs, tensor parallelism, replicas and
    engine settings for the plan's model and workload.

    Every candidate of the plan's search space is pruned analytically (weights or the longest
    request do not fit; the capacity bound is below the offered load) or simulated over the
    plan's seeds; it is feasible when in every seed at least ``slo.share`` of the requests meet
    TTFT ≤ ``slo.ttft_s`` and TPOT ≤ ``slo.tpot_s``. Candidates differing only in replicas are
    tried in increasing count, and the larger counts after the first feasible one are recorded
    as dominated. Feasible configurations are ranked by cost, $/hour = GPUs × $/GPU-hour, then
    by $/M output tokens; for the cheapest of each GPU type the maximum sustainable offered
    rate (requests/s, one seed, within 10 %) is found. The report lists the ``top`` feasible
    ones and the cheapest one's launch commands.

    ``jobs``: worker processes (0: one per core, 1: in this process); ``executor``: ``process``
    (a local pool) or ``ray`` (Ray tasks, on the cluster at ``ray_address`` or a local Ray);
    ``progress(done, total)`` after each group of candidates. ``export``: every evaluated
    configuration to a ``.csv``, ``.parquet`` or ``.json`` file (checked before the search,
    written after it).
    ``value``: the PlanResult (every Evaluation in search order, cheapest, max rates).
    """
    from napkin.planning.search import run_plan
    from napkin.report.plan_views import evaluation_columns, plan_doc
    from napkin.specs.files import atomic_write, check_output

    require(top >= 1, f"top: must be >= 1, got {top}")
    if export is not None:
        check_output(export, EXPORT_SUFFIXES, "export")
    spec, base = _plan(plan)
    if executor not in ("process", "ray"):
        raise NapkinError(f"executor: must be process or ray, got {executor!r}")
    if ray_address is not None and executor != "ray":
        raise NapkinError("ray-address: applies with --executor ray only")
    result = run_plan(spec, base, jobs, progress, executor, ray_address)
    doc = plan_doc(result, top)
    if export is not None:
        path = Path(export)
        if path.suffix.lower() == ".json":
            import json

            from napkin.report.document import jsonable

            with atomic_write(path, "export") as tmp:
                tmp.write_text(json.dumps(jsonable(doc.data["evaluations"]), indent=1))
        else:
            from napkin.report.export import write_table

            write_table(evaluation_columns(result), path)

    def plotter(path: Path) -> None:
        from napkin.report.plots import plot_pareto

        plot_pareto(result, path)

    return Result(doc, result, plotter)
