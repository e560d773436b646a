"""Measurement sets shipped with napkin (``napkin/catalog/measurements``; sources in its
README): ``h100`` is ai-dynamo/aiconfigurator's silicon sample, H100 SXM rows of dense
models in aggregated serving (TensorRT-LLM, vLLM, SGLang; Apache-2.0)."""

from importlib import resources

from napkin.calibration.measurements import Measurement, read_aiconfigurator_csv
from napkin.errors import NapkinError

SETS: dict[str, str] = {"h100": "aiconfigurator_h100.csv"}


def load_set(name: str) -> list[Measurement]:
    """The rows of shipped set ``name``."""
    if name not in SETS:
        raise NapkinError(f"set: unknown {name!r}; shipped: {', '.join(SETS)}")
    path = resources.files("napkin.catalog").joinpath("measurements", SETS[name])
    return read_aiconfigurator_csv(str(path))
