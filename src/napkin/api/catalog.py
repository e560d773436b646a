"""The catalog: ``napkin models``, ``napkin gpus``, ``napkin model``."""

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision, forward
from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import ModelRef, load_model
from napkin.catalog import MODELS, accelerators
from napkin.catalog.checkpoints import resolve_unquantized
from napkin.report import views


@checked
def list_models() -> Result:
    """The model catalog: id, Hugging Face repository, parameters, KV bytes per token.
    ``value``: tuple of (id, repository, ModelSpec)."""
    entries = tuple((m.id, m.hf_repo, load_model(m.id)) for m in MODELS)
    return Result(views.models_doc(list(entries)), entries)


@checked
def list_gpus() -> Result:
    """The accelerator catalog (dense rates per format, memory, bandwidth; sources in the
    JSON). ``value``: tuple of Accelerator."""
    accs = tuple(accelerators().values())
    return Result(views.gpus_doc(list(accs)), accs)


@checked
def describe_model(model: ModelRef, *, weights: str = "bf16", kv_dtype: str = "bf16",
                   read_embedding: bool = False, unquantized: str | None = None) -> Result:
    """Parameters (total, embedding, head, active, per layer), KV bytes per token and weight
    bytes at a precision (``unquantized``: parts kept in BF16, or ``checkpoint``). ``value``:
    the ModelSpec."""
    spec = load_model(model)
    precision = Precision.of(weights, kv_dtype, read_embedding,
                             resolve_unquantized(unquantized, spec.name, weights))
    step = forward(spec, Batch.decode(1, 1), precision)
    return Result(views.model_doc(spec, step, precision), spec)
