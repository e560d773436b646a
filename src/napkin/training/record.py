"""Run records: a training or RL run's inputs in one YAML (or JSON) file, replayed by
``napkin train --run FILE`` and ``napkin rl --run FILE``.

A record names its ``kind`` (``train`` or ``rl``) and holds the options of that command under
their Python names (``micro_batch``, ``usd_per_gpu_hour``; bytes, seconds and tokens in base
units): the model, the accelerator and how many, the shape of an update (sequence, micro-batch,
accumulation) or of a cycle (prompt and answer tokens, kept and generated answers), the
parallel layout, the efficiency (``mfu``), the tokens of the run and the price. A record of a
published run also says which stage it covers and where its numbers come from (``stage``,
``source``): GPU-hours of pre-training, context extension and post-training are counted apart,
and the tokens of one stage do not divide another's hours (chapter 3, §3.6.2). Unknown keys
are refused by name; what a value may be is checked by the command it replays, as if given on
the command line, which overrides any value of the file.

Example::

    kind: train
    name: Qwen3-8B full fine-tune, Example 3-3's state
    stage: fine-tuning
    source: chapter 3, Example 3-3
    model: qwen3-8b
    gpu: h100-sxm
    devices: 8
    zero: 3
    seq: 4096
    optimizer: adamw-fp32-grads
    mfu: 0.4
    tokens: 1.0e+9
"""

from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from napkin.errors import NapkinError, require
from napkin.specs.files import InputModel, read_yaml, validation_message

RECORD_KINDS = ("train", "rl")
"""What a run record replays: ``napkin train`` or ``napkin rl``."""


class _Record(InputModel):
    """What every record holds besides a command's options."""

    name: str | None = None
    """A label for the run."""
    stage: str | None = None
    """The stage the run covers (pre-training, context extension, SFT, RL…)."""
    source: str | None = None
    """Where the run's numbers come from (a report and its table, a log)."""
    notes: str | None = None
    """Free text kept with the record (caveats, what the source leaves out); not read."""
    model: str
    """Catalog id or config.json path."""


class TrainRecord(_Record):
    """The inputs of one ``napkin train`` run (:func:`napkin.train`'s keywords)."""

    kind: Literal["train"]
    gpu: str | None = None
    devices: int | None = None
    tp: int | None = None
    pipeline: int | None = None
    virtual_stages: int | None = None
    cp: int | None = None
    ep: int | None = None
    zero: int | None = None
    offload: bool | None = None
    seq: int | None = None
    docs: list[int] | None = None
    micro_batch: int | None = None
    accumulation: int | None = None
    labels: int | None = None
    head: str | None = None
    recompute: str | None = None
    freeze: list[str] | None = None
    lora_rank: int | None = None
    qlora: bool | None = None
    optimizer: str | None = None
    precision: str | None = None
    activations: str | None = None
    mfu: float | None = None
    link_gbs: float | None = None
    inter_node_gbs: float | None = None
    gpus_per_node: int | None = None
    tokens: float | None = None
    epochs: float | None = None
    dataset_tokens: float | None = None
    usd_per_gpu_hour: float | None = None
    eval_share: float | None = None
    checkpoint_s: float | None = None
    checkpoint_interval_s: float | None = None
    failures_per_gpu_hour: float | None = None
    restart_s: float | None = None


class RLRecord(_Record):
    """The inputs of one ``napkin rl`` cycle (:func:`napkin.rl`'s keywords)."""

    kind: Literal["rl"]
    prompt_len: int | None = None
    gen_len: int | None = None
    keep: int | None = None
    keep_rate: float | None = None
    generate: int | None = None
    compare_generate: int | None = None
    reference: bool | None = None
    teacher: str | None = None
    reward_model: str | None = None
    head: str | None = None
    replicas: int | None = None
    method: str | None = None
    optimizer: str | None = None
    gpu: str | None = None
    count: int | None = None
    separate: bool | None = None
    rollout_gpus: int | None = None
    rollout_tp: int | None = None
    mfu: float | None = None
    calibration: str | None = None
    usd_per_gpu_hour: float | None = None


def _describe_options(model: type[TrainRecord] | type[RLRecord], command: str) -> None:
    """A field without a docstring of its own is the command's option of the same name: say
    so in its description (the file-format reference lists every field)."""
    for name, info in model.model_fields.items():
        if not info.description and name not in _Record.model_fields and name != "kind":
            flag = "--" + name.replace("_", "-")
            info.description = (f"`{flag}` of `napkin {command}` (see `napkin {command} "
                                f"--help`); checked as on the command line.")
    model.model_rebuild(force=True)


_describe_options(TrainRecord, "train")
_describe_options(RLRecord, "rl")
_MODELS: dict[str, type[TrainRecord] | type[RLRecord]] = {"train": TrainRecord, "rl": RLRecord}
_META = ("kind", "name", "stage", "source", "notes")


def read_run_record(path: str | Path, kind: str) -> TrainRecord | RLRecord:
    """The record in ``path``, which must be of ``kind``; a bad file is one line naming the
    field."""
    require(kind in RECORD_KINDS, f"kind: must be one of {', '.join(RECORD_KINDS)}, "
                                  f"got {kind!r}")
    data = read_yaml(path, "run")
    if not isinstance(data, dict):
        raise NapkinError(f"{path}: a run record is a mapping of fields (kind, model, …)")
    found = data.get("kind")
    require(found in RECORD_KINDS,
            f"{path}: field kind: must be one of {', '.join(RECORD_KINDS)}, got {found!r}")
    require(found == kind, f"{path}: field kind: this record replays napkin {found}, "
                           f"not napkin {kind}")
    try:
        return _MODELS[kind].model_validate(data)
    except ValidationError as e:
        raise NapkinError(f"{path}: {validation_message(e, data)}") from None


def record_options(record: TrainRecord | RLRecord) -> dict[str, Any]:
    """The command's keywords the record sets (``model`` included), unset ones left out."""
    return {k: v for k, v in record.model_dump(exclude_none=True).items() if k not in _META}
