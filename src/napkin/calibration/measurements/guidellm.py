"""Reader of guidellm's benchmark report JSON (``guidellm benchmark --output-path
report.json``; vllm-project/guidellm's ``GenerativeBenchmarksReport``, releases 0.3 to 0.7).
"""

from dataclasses import replace
from pathlib import Path

from napkin.calibration.measurements.catalog_ids import (
    catalog_gpu_id,
    model_ref,
    weight_format_name,
)
from napkin.calibration.measurements.fields import (
    MS,
    Overrides,
    fail,
    json_documents,
    measurement_text,
    optional_float,
    positive_float,
    positive_int,
)
from napkin.calibration.measurements.records import Harness, Measurement


def read_guidellm_json(
    path: str | Path,
    *,
    gpu: str | None = None,
    model: str | None = None,
    tensor_parallel: int = 1,
    weights: str = "bf16",
    backend: str = "vllm",
) -> list[Measurement]:
    """Measurements from a guidellm report (``guidellm benchmark --output-path report.json``).

    Follows ``GenerativeBenchmarksReport`` of guidellm 0.4-0.7 (``benchmarks[i].config.strategy``,
    ``benchmarks[i].config.backend.model``) and accepts 0.3 (``benchmarks[i].args.strategy``,
    ``benchmarks[i].worker.backend_model``); ``metrics`` are alike in both:
    ``time_to_first_token_ms``, ``inter_token_latency_ms``, ``prompt_token_count``,
    ``output_token_count``, ``output_tokens_per_second``, each ``successful.mean`` /
    ``successful.median``, and ``request_totals.successful``. TPOT is guidellm's
    ``inter_token_latency_ms`` (first token excluded, as vLLM's TPOT; guidellm weights its mean
    by output tokens − 1); guidellm's ``time_per_output_token_ms`` counts the first token too
    and is only kept in ``extra``.

    One Measurement per benchmark. Strategy ``type_``: ``synchronous`` → closed loop at 1;
    ``concurrent`` → closed loop at ``streams`` (a positive ``rampup_duration`` → ``ramp_s``);
    ``poisson`` and ``constant`` → Poisson at ``rate`` (``constant`` noted in ``extra``);
    ``throughput`` → burst, or a closed loop at its ``max_concurrency`` when one is set.
    Lengths are the rounded successful means. The report names no GPU, parallelism or weight
    format: the keywords give them; ``model`` overrides the backend's model name.
    """
    path = Path(path)
    docs = json_documents(path, measurement_text(path))
    given = Overrides(backend, gpu, model, tensor_parallel, weights)
    return guidellm_measurements(path, docs, given)


def guidellm_measurements(path: Path, docs: list[object], given: Overrides) -> list[Measurement]:
    """Every benchmark of the guidellm reports in ``docs``."""
    benchmarks: list[object] = []
    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            fail(str(path), "benchmarks", "expected a report object with a benchmarks list")
        benchmarks.extend(doc["benchmarks"])
    if given.gpu is None:
        fail(str(path), "gpu", "a guidellm report does not name the GPU; give it (--gpu)")
    return [_guidellm_benchmark(path, i, b, given) for i, b in enumerate(benchmarks)]


def _dig(obj: object, *keys: str) -> object:
    """``obj[k1][k2]…``, or None where a level is missing or not an object."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _guidellm_stat(metrics: object, name: str, stat: str) -> object:
    """``metrics[name].successful[stat]`` (None where absent)."""
    return _dig(metrics, name, "successful", stat)


def _guidellm_harness(
    strategy: object, where: str, field_: str
) -> tuple[Harness, dict[str, str]]:
    """The harness of a guidellm scheduling strategy (at ``field_``) and ``extra`` notes."""
    kind = _dig(strategy, "type_")
    if not isinstance(strategy, dict) or not isinstance(kind, str):
        fail(where, f"{field_}.type_", "missing")
    extra = {"strategy": kind}
    ramp: dict[str, float] = {}  # no ramp given: the Harness default
    if strategy.get("rampup_duration"):
        ramp["ramp_s"] = positive_float(strategy["rampup_duration"], where,
                                         f"{field_}.rampup_duration")
    if kind == "synchronous":
        return Harness("closed_loop", concurrency=1), extra
    if kind == "concurrent":
        streams = positive_int(strategy.get("streams"), where, f"{field_}.streams")
        return Harness("closed_loop", concurrency=streams, **ramp), extra
    if kind in ("poisson", "constant"):
        rate = positive_float(strategy.get("rate"), where, f"{field_}.rate")
        return Harness("poisson", rate_per_s=rate), extra
    if kind == "throughput":
        cap = strategy.get("max_concurrency")
        if cap is None:
            return Harness("burst"), extra
        limit = positive_int(cap, where, f"{field_}.max_concurrency")
        return Harness("closed_loop", concurrency=limit, **ramp), extra
    fail(where, f"{field_}.type_", f"{kind!r} is not one of synchronous, concurrent, "
          "throughput, constant, poisson")


def _guidellm_model(bench: dict, given: Overrides, where: str) -> str:
    """The catalog model of a guidellm benchmark (the caller's ``model`` wins)."""
    if given.model:
        return model_ref(given.model, where, "model")
    for keys in (("config", "backend", "model"), ("worker", "backend_model")):
        name = _dig(bench, *keys)
        if isinstance(name, str) and name:
            return model_ref(name, where, ".".join(keys))
    fail(where, "config.backend.model", "missing; give the model (--model)")


def _guidellm_benchmark(path: Path, index: int, bench: object, given: Overrides) -> Measurement:
    """One benchmark of a guidellm report."""
    where = f"{path} benchmarks[{index}]"
    if not isinstance(bench, dict):
        fail(where, "benchmark", "expected a JSON object")
    field_ = "args.strategy" if "args" in bench and "config" not in bench else "config.strategy"
    harness, extra = _guidellm_harness(_dig(bench, *field_.split(".")), where, field_)
    metrics = bench.get("metrics")
    totals = _dig(metrics, "request_totals", "successful")
    tpot_incl_first = _guidellm_stat(metrics, "time_per_output_token_ms", "mean")
    if tpot_incl_first is not None:
        extra["time_per_output_token_ms"] = str(tpot_incl_first)
    if totals is not None:
        harness = replace(harness, num_requests=positive_int(
            totals, where, "metrics.request_totals.successful"))

    def stat(name: str, which: str = "mean", scale: float = 1.0) -> float | None:
        return optional_float(_guidellm_stat(metrics, name, which), where,
                               f"metrics.{name}.successful.{which}", scale)

    def tokens(name: str) -> int:
        mean = _guidellm_stat(metrics, name, "mean")
        return max(1, round(positive_float(mean, where, f"metrics.{name}.successful.mean")))

    return Measurement(
        source=f"{path.name}:{index}",
        backend=given.backend,
        backend_version="",
        model=_guidellm_model(bench, given, where),
        gpu=catalog_gpu_id(str(given.gpu)),
        weights=weight_format_name(str(given.weights)),
        tensor_parallel=positive_int(given.tensor_parallel, where, "tensor_parallel"),
        input_tokens=tokens("prompt_token_count"),
        output_tokens=tokens("output_token_count"),
        harness=harness,
        mean_ttft_s=stat("time_to_first_token_ms", scale=MS),
        mean_tpot_s=stat("inter_token_latency_ms", scale=MS),
        median_ttft_s=stat("time_to_first_token_ms", "median", MS),
        median_tpot_s=stat("inter_token_latency_ms", "median", MS),
        output_tokens_per_s=stat("output_tokens_per_second"),
        extra=extra,
    )
