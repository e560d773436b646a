"""``napkin models``, ``napkin gpus``, ``napkin model``."""

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision, forward
from napkin.catalog import MODELS, accelerators, load_model
from napkin.cli.common import Format, FormatOpt, KvOpt, ModelArg, ReadEmbOpt, WeightsOpt, emit
from napkin.report import views


def models(fmt: FormatOpt = Format.table) -> None:
    """List the model catalog."""
    emit(views.models_doc([(m.id, m.hf_repo, load_model(m.id)) for m in MODELS]), fmt)


def gpus(fmt: FormatOpt = Format.table) -> None:
    """List the accelerator catalog (dense rates, with sources in JSON)."""
    emit(views.gpus_doc(list(accelerators().values())), fmt)


def model(ref: ModelArg, weights: WeightsOpt = "bf16", kv_dtype: KvOpt = "bf16",
          read_embedding: ReadEmbOpt = False, fmt: FormatOpt = Format.table) -> None:
    """Parameters (total, embedding, head, active, per layer), KV bytes, weight bytes."""
    spec = load_model(ref)
    precision = Precision.of(weights, kv_dtype, read_embedding)
    step = forward(spec, Batch.decode(1, 1), precision)
    emit(views.model_doc(spec, step, precision), fmt)
