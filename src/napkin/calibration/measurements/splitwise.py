"""Reader of splitwise-sim's perf model CSV (Mutinifni/splitwise-sim, MIT:
``data/perf_model.csv``, prompt and per-token times of batches of identical requests).
"""

from pathlib import Path

from napkin.calibration.measurements.fields import (
    csv_rows,
    measurement_text,
    positive_float,
    positive_int,
    require_columns,
)
from napkin.calibration.measurements.records import Harness, Launch, Measurement

SPLITWISE_GPUS = {"a100-80gb": "a100-80gb-sxm", "h100-80gb": "h100-sxm"}
"""splitwise-sim hardware names napkin replays (``h100-80gb-pcap``, power-capped, is not)."""
SPLITWISE_MODELS = {"llama2-70b": "llama-2-70b"}
SPLITWISE_VERSION = "0.2"
"""The vLLM release splitwise-sim's perf model is read as (:func:`read_splitwise_csv`)."""


def read_splitwise_csv(path: str | Path) -> list[Measurement]:
    """splitwise-sim's ``data/perf_model.csv`` (Mutinifni/splitwise-sim, MIT): prompt (prefill)
    and per-token (decode) times in ms of a batch of ``batch_size`` identical requests
    (``prompt_size`` in, ``token_size`` out) at ``tensor_parallel``, repeated five times.

    Repeats are averaged into one measurement, replayed as a burst of ``batch_size``
    requests whose prompts run in one iteration (the simulator's perf model times a batch's
    prompt phase as one: the launch holds the whole batch, no chunking): ``prompt_time`` is its
    mean TTFT and ``token_time`` its mean TPOT. FP16 weights (the BF16 rate). The engine is
    vLLM as of late 2023 (Splitwise's prototype ran "on top of an internal vLLM branch",
    vllm-project/vllm#2472, January 2024, when the public releases were 0.2.x: no CUDA graphs
    before 0.2.2, NCCL all-reduces before 0.3's custom all-reduce), recorded as
    :data:`SPLITWISE_VERSION`. Rows of models or hardware not in :data:`SPLITWISE_MODELS` and
    :data:`SPLITWISE_GPUS` (BLOOM-176B, power-capped H100), and rows longer than the model's
    context (Llama-2-70B: 4,096 tokens; the file has 8,192-token prompts), are skipped."""
    path = Path(path)
    header, rows = csv_rows(path, measurement_text(path))
    require_columns(path, header, ("model", "hardware", "prompt_size", "batch_size",
                                    "token_size", "prompt_time", "token_time",
                                    "tensor_parallel"))
    groups: dict[tuple[str, str, int, int, int, int], list[tuple[float, float]]] = {}
    for line, row in rows:
        where = f"{path} line {line}"
        if row["model"] not in SPLITWISE_MODELS or row["hardware"] not in SPLITWISE_GPUS:
            continue
        key = (row["model"], row["hardware"],
               *(positive_int(row[c], where, c) for c in ("prompt_size", "batch_size",
                                                           "token_size", "tensor_parallel")))
        groups.setdefault(key, []).append(
            (positive_float(row["prompt_time"], where, "prompt_time") / 1e3,
             positive_float(row["token_time"], where, "token_time") / 1e3))
    out = []
    for (model, hw, prompt, batch, tokens, tp), times in groups.items():
        from napkin.catalog import load_model

        limit = load_model(SPLITWISE_MODELS[model]).max_position_embeddings
        if limit and prompt + tokens > limit:
            continue
        out.append(Measurement(
            f"{path.name}:{model}-{hw}-p{prompt}-b{batch}-t{tokens}-tp{tp}", "vllm",
            SPLITWISE_VERSION, SPLITWISE_MODELS[model], SPLITWISE_GPUS[hw], "bf16", tp,
            prompt, tokens, Harness("burst", num_requests=batch),
            launch=Launch(max_num_seqs=batch, max_num_batched_tokens=batch * prompt,
                          chunked_prefill=False,
                          source="splitwise-sim perf model: a batch's prompts in one iteration"),
            mean_ttft_s=sum(t for t, _ in times) / len(times),
            mean_tpot_s=sum(t for _, t in times) / len(times),
            extra={"repeats": str(len(times))}))
    return out
