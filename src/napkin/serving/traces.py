"""Read public LLM-serving traces into a :class:`RequestSet`: :func:`read_trace` checks the
options and hands the file to its format's reader (:mod:`~napkin.serving.trace_csv`,
:mod:`~napkin.serving.trace_mooncake`, :mod:`~napkin.serving.trace_parquet`), which share the
cell parsing of :mod:`~napkin.serving.trace_cells` and the :class:`Trace` of
:mod:`~napkin.serving.trace_rows`.

Formats (``fmt``), as the public datasets write them:

``azure``
    Azure LLM inference traces (Azure/AzurePublicDataset: ``AzureLLMInferenceTrace_code.csv`` /
    ``_conv.csv`` from 2023, ``AzureLLMInferenceTrace_{code,conv}_1week.csv`` from 2024). CSV
    with header ``TIMESTAMP,ContextTokens,GeneratedTokens``. ``TIMESTAMP`` is a wall-clock
    datetime: 2023 files write ``2023-11-16 18:15:46.6805900`` (7 fractional digits, no zone),
    2024 files ``2024-05-10 00:00:00.009930+00:00``. Zone-less times are read as UTC; all
    fractional digits are kept (differences are exact to well below a microsecond).
    ``ContextTokens`` is the input length, ``GeneratedTokens`` the output length.
``burstgpt``
    BurstGPT (HPMLL/BurstGPT: ``BurstGPT_1.csv`` ...). CSV with header
    ``Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type``; ``Timestamp`` is
    seconds from 0:00:00 of the trace's first day, ``Model`` is ``ChatGPT`` or ``GPT-4``.
    Failed requests have ``Response tokens`` 0 and are dropped (and counted). Labels are the
    ``Model`` names; ``model=`` keeps one of them.
``mooncake``
    Mooncake traces (kvcache-ai/Mooncake: ``FAST25-release/traces/conversation_trace.jsonl``,
    ``toolagent_trace.jsonl``, ``synthetic_trace.jsonl``, and the arxiv ``mooncake_trace.jsonl``).
    JSON Lines, one object per request: ``{"timestamp": <ms>, "input_length": <tokens>,
    "output_length": <tokens>, "hash_ids": [<int>, ...]}``; ``timestamp`` is milliseconds since
    the first request and each hash id names one 512-token block of the prompt, so requests
    sharing a leading run of ids share that prefix (``prefix_hashes``, ``hash_block_tokens=512``).
``csv`` / ``parquet``
    Any table: ``arrival_column``, ``input_column`` and ``output_column`` name the columns and
    ``time_unit`` says what the arrival column holds: ``s``, ``ms`` or ``us`` numbers, or
    ``datetime`` (ISO 8601 strings such as ``2024-05-10T00:00:00.25+00:00``, zone-less read as
    UTC; in parquet also a timestamp column). Parquet needs ``pyarrow``.

Every format: arrivals are converted to seconds, sorted (stable) and rebased so the first request
arrives at 0.0 s. Rows whose input or output length is missing or not positive are dropped and
counted in :attr:`Trace.rows_dropped`. Anything else that cannot be read (a missing file or
column, a number or timestamp that does not parse, a token count above
:data:`napkin.serving.requests.MAX_REQUEST_TOKENS`, a zone offset beyond ±14:00, arrivals
spanning more than a float holds) raises :class:`NapkinError` with one line that
names the file, the line or row, and the column.
"""

from pathlib import Path
from typing import Literal

from napkin.errors import NapkinError
from napkin.serving.trace_csv import read_csv_trace
from napkin.serving.trace_mooncake import read_mooncake
from napkin.serving.trace_parquet import read_parquet
from napkin.serving.trace_rows import Trace

TraceFormat = Literal["azure", "burstgpt", "mooncake", "csv", "parquet"]
TimeUnit = Literal["s", "ms", "us", "datetime"]

FORMATS: tuple[str, ...] = ("azure", "burstgpt", "mooncake", "csv", "parquet")
TIME_UNITS: tuple[str, ...] = ("s", "ms", "us", "datetime")


def read_trace(
    path: str | Path,
    fmt: TraceFormat,
    *,
    arrival_column: str | None = None,
    input_column: str | None = None,
    output_column: str | None = None,
    time_unit: TimeUnit = "s",
    model: str | None = None,
    max_rows: int | None = None,
) -> Trace:
    """Read the trace at ``path`` written in format ``fmt`` (see the module docstring).

    ``arrival_column``, ``input_column``, ``output_column`` and ``time_unit`` are for the generic
    ``csv`` and ``parquet`` formats (the three columns are required there); the named formats fix
    their own columns and units. ``model`` keeps only the BurstGPT rows whose ``Model`` equals it
    (e.g. ``'ChatGPT'`` or ``'GPT-4'``). ``max_rows`` stops after that many data rows of the file
    (counted before filtering and dropping).
    """
    if fmt not in FORMATS:
        raise NapkinError(f"trace: format {fmt!r} is not one of {', '.join(FORMATS)}")
    if time_unit not in TIME_UNITS:
        raise NapkinError(f"time_unit: {time_unit!r} is not one of {', '.join(TIME_UNITS)}")
    if max_rows is not None and (isinstance(max_rows, bool) or max_rows < 1):
        raise NapkinError(f"max_rows: must be a whole number >= 1, got {max_rows!r}")
    generic = fmt in ("csv", "parquet")
    columns = {"arrival_column": arrival_column, "input_column": input_column,
               "output_column": output_column}
    if generic:
        missing = [name for name, value in columns.items() if not value]
        if missing:
            raise NapkinError(
                f"trace: format {fmt!r} needs arrival_column, input_column and output_column; "
                f"missing: {', '.join(missing)}"
            )
    else:
        given = [name for name, value in columns.items() if value is not None]
        if given or time_unit != "s":
            option = given[0] if given else "time_unit"
            raise NapkinError(
                f"{option}: only for formats 'csv' and 'parquet'; format {fmt!r} fixes its own "
                "columns and units"
            )
    if model is not None and fmt != "burstgpt":
        raise NapkinError(
            f"model: filters BurstGPT's Model column; format {fmt!r} has no model column"
        )

    p = Path(path)
    if not p.exists():
        raise NapkinError(f"trace: no such file {str(p)!r}")
    if not p.is_file():
        raise NapkinError(f"trace: {str(p)!r} is not a file")

    if fmt == "azure":
        return read_csv_trace(p, fmt, "TIMESTAMP", "ContextTokens", "GeneratedTokens",
                              "datetime", max_rows)
    if fmt == "burstgpt":
        return read_csv_trace(p, fmt, "Timestamp", "Request tokens", "Response tokens", "s",
                              max_rows, model_column="Model", model=model)
    if fmt == "mooncake":
        return read_mooncake(p, max_rows)
    assert arrival_column and input_column and output_column
    if fmt == "csv":
        return read_csv_trace(p, fmt, arrival_column, input_column, output_column, time_unit,
                              max_rows)
    return read_parquet(p, arrival_column, input_column, output_column, time_unit, max_rows)
