"""GPU rental prices: the shipped catalog (``catalog/prices.yaml``, each with source and date)
under a plan's overrides."""

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from napkin.errors import NapkinError


@dataclass(frozen=True)
class Price:
    gpu: str
    usd_per_gpu_hour: float
    source: str
    date: str


@cache
def price_catalog() -> dict[str, Price]:
    text = resources.files("napkin.catalog").joinpath("prices.yaml").read_text()
    return {e["gpu"]: Price(e["gpu"], float(e["usd_per_gpu_hour"]), e["source"], str(e["date"]))
            for e in yaml.safe_load(text)}


def price_of(gpu: str, overrides: dict[str, float]) -> Price:
    """The plan's price for ``gpu`` if it gives one, else the catalog's."""
    if gpu in overrides:
        return Price(gpu, overrides[gpu], "plan file (prices:)", "")
    try:
        return price_catalog()[gpu]
    except KeyError:
        known = ", ".join(sorted(price_catalog()))
        raise NapkinError(f"prices: no price for {gpu!r} in the catalog ({known}); give "
                          f"prices: {{{gpu}: USD_PER_GPU_HOUR}} in the plan") from None
