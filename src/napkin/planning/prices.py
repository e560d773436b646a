"""GPU rental prices: the shipped catalog (``catalog/prices.yaml``, each with source and date)
under a plan's overrides."""

from dataclasses import dataclass
from functools import cache

from napkin.catalog import CATALOG_DIR
from napkin.errors import NapkinError
from napkin.specs.yaml_text import load_yaml


@dataclass(frozen=True)
class Price:
    gpu: str
    usd_per_gpu_hour: float
    source: str
    date: str


@cache
def price_catalog() -> dict[str, Price]:
    text = CATALOG_DIR.joinpath("prices.yaml").read_text(encoding="utf-8")
    return {e["gpu"]: Price(e["gpu"], float(e["usd_per_gpu_hour"]), e["source"], str(e["date"]))
            for e in load_yaml(text)}


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


def hourly_price(gpu: str, given: float | None) -> tuple[float, str]:
    """``(usd_per_gpu_hour, source)``: ``given`` (``--usd-per-gpu-hour``) if set, else the
    catalog's price for ``gpu`` with its source and date."""
    if given is not None:
        return given, "--usd-per-gpu-hour"
    price = price_catalog().get(gpu)
    if price is None:
        raise NapkinError(f"usd-per-gpu-hour: the price catalog has no {gpu}; give "
                          "--usd-per-gpu-hour")
    return price.usd_per_gpu_hour, f"{price.source} ({price.date})"
