"""``napkin models``, ``napkin gpus``, ``napkin model`` (over :mod:`napkin.api.catalog`)."""

from napkin.api import catalog as api
from napkin.cli.common import (
    Format,
    FormatOpt,
    KvOpt,
    ModelArg,
    ReadEmbOpt,
    UnquantizedOpt,
    WeightsOpt,
    emit,
)


def models(fmt: FormatOpt = Format.table) -> None:
    """List the model catalog."""
    emit(api.list_models(), fmt)


def gpus(fmt: FormatOpt = Format.table) -> None:
    """List the accelerator catalog (dense rates, with sources in JSON)."""
    emit(api.list_gpus(), fmt)


def model(ref: ModelArg, weights: WeightsOpt = "bf16", kv_dtype: KvOpt = "bf16",
          read_embedding: ReadEmbOpt = False, unquantized: UnquantizedOpt = None,
          fmt: FormatOpt = Format.table) -> None:
    """Parameters (total, embedding, head, active, per layer), KV bytes, weight bytes."""
    emit(api.describe_model(ref, weights=weights, kv_dtype=kv_dtype,
                            read_embedding=read_embedding, unquantized=unquantized), fmt)
