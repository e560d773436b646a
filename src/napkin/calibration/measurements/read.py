"""Reading measurement files whatever their format: :func:`read_measurements` picks the
reader a file's content calls for.
"""

from collections.abc import Iterable
from pathlib import Path

from napkin.calibration.measurements.aiconfigurator import read_aiconfigurator_csv
from napkin.calibration.measurements.fields import (
    Overrides,
    csv_rows,
    json_documents,
    json_records,
    measurement_text,
)
from napkin.calibration.measurements.guidellm import guidellm_measurements
from napkin.calibration.measurements.plain_csv import read_plain_csv
from napkin.calibration.measurements.records import Measurement
from napkin.calibration.measurements.splitwise import read_splitwise_csv
from napkin.calibration.measurements.vllm_bench import vllm_record
from napkin.errors import NapkinError


def read_measurements(
    paths: str | Path | Iterable[str | Path],
    *,
    gpu: str | None = None,
    model: str | None = None,
    tensor_parallel: int | None = None,
    weights: str | None = None,
    backend: str | None = None,
) -> list[Measurement]:
    """Measurements from every file of ``paths``, each read by the reader its content calls for.

    ``.csv`` with a ``silicon_ttft_ms`` column → :func:`read_aiconfigurator_csv`; other
    ``.csv`` → :func:`read_plain_csv`; ``.json``/``.jsonl`` (or any other name) holding an
    object with a ``benchmarks`` key →
    :func:`~napkin.calibration.measurements.guidellm.read_guidellm_json`, else
    :func:`~napkin.calibration.measurements.vllm_bench.read_vllm_bench_json`. The keywords
    describe the JSON benchmarks (which do not name GPU, TP or weights; ``None`` = the reader's
    default); CSV files carry their own and ignore them.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    out: list[Measurement] = []
    for p in paths:
        rows = _read_one(Path(p), gpu, model, tensor_parallel, weights, backend)
        if not rows:
            raise NapkinError(f"{p}: no measurements napkin can replay in this file")
        out.extend(rows)
    return out


def _read_one(
    path: Path,
    gpu: str | None,
    model: str | None,
    tensor_parallel: int | None,
    weights: str | None,
    backend: str | None,
) -> list[Measurement]:
    """The measurements of one file, by content."""
    text = measurement_text(path)
    if path.suffix.lower() == ".csv":
        header, _ = csv_rows(path, text)
        if "silicon_ttft_ms" in header:
            return read_aiconfigurator_csv(path)
        if "prompt_time" in header and "token_time" in header:
            return read_splitwise_csv(path)
        return read_plain_csv(path)
    docs = json_documents(path, text)
    engine = backend or "vllm"
    if any(isinstance(d, dict) and "benchmarks" in d for d in docs):
        given = Overrides(engine, gpu, model, tensor_parallel or 1, weights or "bf16")
        return guidellm_measurements(path, docs, given)
    given = Overrides(engine, gpu, model, tensor_parallel, weights)
    return [vllm_record(path, i, r, given)
            for i, r in enumerate(json_records(path, docs), 1)]
