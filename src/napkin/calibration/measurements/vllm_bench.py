"""Reader of ``vllm bench serve --save-result`` JSON (vLLM's ``vllm/benchmarks/serve.py``
``result_json``; also the older ``benchmarks/benchmark_serving.py``): one object, a list of
them, or JSON lines (``--append-result``).
"""

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
    json_records,
    mean_count,
    measurement_text,
    optional_float,
    positive_float,
    positive_int,
    unit_fraction,
)
from napkin.calibration.measurements.records import Harness, Measurement


def read_vllm_bench_json(
    path: str | Path,
    *,
    backend: str = "vllm",
    gpu: str | None = None,
    model: str | None = None,
    tensor_parallel: int | None = None,
    weights: str | None = None,
) -> list[Measurement]:
    """Measurements from ``vllm bench serve --save-result`` JSON (one object, a list, or lines).

    Keys read (vLLM ``vllm/benchmarks/serve.py``, ``result_json``): ``completed``,
    ``total_input_tokens``, ``total_output_tokens``, ``num_prompts``, ``max_concurrency``,
    ``request_rate`` (a number or ``"inf"``), ``burstiness``, ``model_id``, ``mean_ttft_ms``,
    ``median_ttft_ms``, ``mean_tpot_ms``, ``median_tpot_ms``, ``output_throughput``; and the
    ``--metadata KEY=VALUE`` keys ``random_input_len``, ``random_output_len``,
    ``random_range_ratio``, ``gpu``, ``tensor_parallel``, ``weights``, ``kv_dtype``,
    ``backend_version`` where given. ``--append-result`` files are JSON lines.

    Harness: ``max_concurrency`` set → closed loop at it, every client starting at t = 0
    under ``request_rate`` inf (a finite ``request_rate`` is kept in ``extra``); else a finite
    ``request_rate`` → Poisson at that rate (``burstiness`` ≠ 1, gamma arrivals, is kept in
    ``extra``); else burst. Lengths: ``random_input_len`` /
    ``random_output_len`` if present, else ``total_*_tokens / completed`` rounded.

    The file names neither GPU nor parallelism nor weight format: the keywords give them
    (they win over metadata; default TP 1, ``bf16``); ``model`` (a catalog id, a Hugging Face
    id or a config.json path) overrides ``model_id``. ``backend`` is the engine; the file's
    own ``backend`` (the endpoint type, e.g. ``openai-chat``) goes to ``extra``.
    """
    path = Path(path)
    records = json_records(path, json_documents(path, measurement_text(path)))
    defaults = Overrides(backend, gpu, model, tensor_parallel, weights)
    return [vllm_record(path, i, r, defaults) for i, r in enumerate(records, 1)]


def _pick(given: object, record: dict, key: str, default: object) -> object:
    """The caller's value, else the record's ``key``, else ``default``."""
    if given is not None:
        return given
    value = record.get(key)
    return default if value is None or value == "" else value


def _vllm_harness(record: dict, where: str) -> tuple[Harness, dict[str, str]]:
    """The harness of a vllm bench result and the ``extra`` notes on it."""
    extra: dict[str, str] = {}
    rate = record.get("request_rate")
    finite = rate is not None and str(rate).strip().lower() not in ("inf", "infinity")
    num = record.get("num_prompts")
    common = {
        "num_requests": None if num is None else positive_int(num, where, "num_prompts"),
        "range_ratio": unit_fraction(record.get("random_range_ratio"), where, "random_range_ratio"),
    }
    burstiness = record.get("burstiness")
    if finite and burstiness not in (None, 1, 1.0, "1", "1.0"):
        extra["burstiness"] = str(burstiness)
    if record.get("ramp_up_strategy"):
        extra["ramp_up_strategy"] = str(record["ramp_up_strategy"])
    if record.get("max_concurrency") is not None:
        concurrency = positive_int(record["max_concurrency"], where, "max_concurrency")
        if finite:
            extra["request_rate"] = str(rate)
        else:  # every client's first request at t = 0 (the semaphore admits C at once)
            common["ramp_s"] = 0.0
        return Harness("closed_loop", concurrency=concurrency, **common), extra
    if finite:
        rate_per_s = positive_float(rate, where, "request_rate")
        return Harness("poisson", rate_per_s=rate_per_s, **common), extra
    return Harness("burst", **common), extra


def _vllm_lengths(record: dict, where: str) -> tuple[int, int]:
    """Input and output tokens per request of a vllm bench result."""
    completed = positive_int(record.get("completed"), where, "completed")
    if record.get("random_input_len") is not None:
        isl = positive_int(record["random_input_len"], where, "random_input_len")
    else:
        isl = mean_count(record.get("total_input_tokens"), completed, where,
                          "total_input_tokens")
    if record.get("random_output_len") is not None:
        osl = positive_int(record["random_output_len"], where, "random_output_len")
    else:
        osl = mean_count(record.get("total_output_tokens"), completed, where,
                          "total_output_tokens")
    return isl, osl


def vllm_record(path: Path, index: int, record: dict, given: Overrides) -> Measurement:
    """One vllm bench result."""
    where = f"{path} result {index}"
    gpu = _pick(given.gpu, record, "gpu", None)
    if gpu is None:
        fail(where, "gpu", "the file does not name the GPU; give it (--gpu)")
    model = _pick(given.model, record, "model_id", None)
    if model is None:
        fail(where, "model_id", "missing; give the model (--model)")
    harness, extra = _vllm_harness(record, where)
    isl, osl = _vllm_lengths(record, where)
    extra |= {k: str(record[k]) for k in ("backend", "label", "date") if record.get(k)}
    return Measurement(
        source=f"{path.name}:{index}",
        backend=given.backend,
        backend_version=str(record.get("backend_version", "")),
        model=model_ref(str(model), where, "model" if given.model else "model_id"),
        gpu=catalog_gpu_id(str(gpu)),
        weights=weight_format_name(str(_pick(given.weights, record, "weights", "bf16"))),
        tensor_parallel=positive_int(_pick(given.tensor_parallel, record, "tensor_parallel",
                                            1), where, "tensor_parallel"),
        input_tokens=isl,
        output_tokens=osl,
        harness=harness,
        kv_dtype=str(record.get("kv_dtype") or "bf16"),
        mean_ttft_s=optional_float(record.get("mean_ttft_ms"), where, "mean_ttft_ms", MS),
        mean_tpot_s=optional_float(record.get("mean_tpot_ms"), where, "mean_tpot_ms", MS),
        median_ttft_s=optional_float(record.get("median_ttft_ms"), where, "median_ttft_ms",
                                      MS),
        median_tpot_s=optional_float(record.get("median_tpot_ms"), where, "median_tpot_ms",
                                      MS),
        output_tokens_per_s=optional_float(record.get("output_throughput"), where,
                                            "output_throughput"),
        extra=extra,
    )
