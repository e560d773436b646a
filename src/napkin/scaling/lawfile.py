"""Scaling laws as the user names them: presets, ``E,A,B,alpha,beta``, or a JSON file written by
``napkin scaling fit --out``, with the data range a fitted law is good for.

A fitted law carries the span of the runs it saw (min/max N in parameters, min/max D in tokens,
how many runs, which file). Predicting outside that box extrapolates: :func:`range_warnings`
says so, one line per coordinate. The presets (Hoffmann, Epoch) carry no range here.
"""

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from napkin.errors import NapkinError, require
from napkin.scaling.law import CHINCHILLA_APPROACH3, EPOCH_REPLICATION, FitResult, ScalingLaw
from napkin.specs.files import read_text
from napkin.specs.yaml_text import load_json

LAW_FIELDS = ("E", "A", "B", "alpha", "beta")
PRESETS = {"chinchilla": CHINCHILLA_APPROACH3, "epoch": EPOCH_REPLICATION}
ALLOWED = "chinchilla, epoch, c4, PATH.json, or E,A,B,alpha,beta (5 numbers)"


@dataclass(frozen=True)
class DataRange:
    """The box of runs a law was fitted on: N in parameters, D in tokens."""

    n_min: float
    n_max: float
    d_min: float
    d_max: float
    points: int
    source: str

    def __post_init__(self) -> None:
        values = (self.n_min, self.n_max, self.d_min, self.d_max)
        require(all(math.isfinite(v) and v > 0 for v in values),
                f"data_range: N and D bounds must be finite and > 0, got {values}")
        require(self.n_min <= self.n_max and self.d_min <= self.d_max,
                f"data_range: min above max in {values}")
        require(self.points >= 1, f"data_range: points must be >= 1, got {self.points}")


@dataclass(frozen=True)
class NamedLaw:
    """A law, what the user called it, and (for fitted laws) the range of its data."""

    law: ScalingLaw
    name: str
    data_range: DataRange | None = None


def data_range_of(result: FitResult, source: str) -> DataRange:
    """Min/max N and D over the runs ``result`` was fitted on."""
    n = [o.N for o in result.observations]
    d = [o.D for o in result.observations]
    return DataRange(min(n), max(n), min(d), max(d), len(n), source)


def law_document(law: ScalingLaw, data_range: DataRange | None,
                 fit_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object ``--out`` writes: the five coefficients (loss in nats/token, N in
    parameters, D in tokens), the data range and how the law was fitted."""
    doc: dict[str, Any] = {"form": "L(N, D) = E + A/N^alpha + B/D^beta",
                           "units": {"loss": "nats/token", "N": "parameters", "D": "tokens"},
                           **{k: float(getattr(law, k)) for k in LAW_FIELDS}}
    if data_range is not None:
        doc["data_range"] = {"n_min": data_range.n_min, "n_max": data_range.n_max,
                             "d_min": data_range.d_min, "d_max": data_range.d_max,
                             "points": data_range.points, "source": data_range.source}
    if fit_info:
        doc["fit"] = fit_info
    return doc


def write_law(path: str | Path, law: ScalingLaw, data_range: DataRange | None,
              fit_info: dict[str, Any] | None = None) -> Path:
    """Write :func:`law_document` to ``path`` as JSON; returns the path."""
    path = Path(path)
    require(not path.is_dir(), f"out: {path} is a directory; give a file name such as law.json")
    try:
        path.write_text(json.dumps(law_document(law, data_range, fit_info), indent=2) + "\n")
    except OSError as err:
        raise NapkinError(f"out: cannot write {path}: {err.strerror}") from None
    return path


def _law_from_values(values: list[float], where: str) -> ScalingLaw:
    require(all(math.isfinite(v) for v in values),
            f"law: {where}: E, A, B, alpha, beta must be finite numbers, got {values}")
    try:
        return ScalingLaw(*values)
    except NapkinError as err:
        raise NapkinError(f"law: {where}: {err}") from None


def parse_numbers(text: str) -> ScalingLaw:
    """``"E,A,B,alpha,beta"`` (5 comma-separated numbers) → :class:`ScalingLaw`."""
    parts = [p.strip() for p in text.split(",")]
    require(len(parts) == len(LAW_FIELDS),
            f"law: {text!r} must be 5 comma-separated numbers E,A,B,alpha,beta; "
            f"got {len(parts)}")
    values = []
    for field, part in zip(LAW_FIELDS, parts, strict=True):
        try:
            values.append(float(part))
        except ValueError:
            raise NapkinError(f"law: {field} = {part!r} in {text!r} is not a number") from None
    return _law_from_values(values, text)


def _number(doc: dict[str, Any], key: str, where: str) -> float:
    value = doc.get(key)
    require(isinstance(value, int | float) and not isinstance(value, bool),
            f"law: {where}: {key!r} must be a number, got {value!r}")
    return float(value)


def read_law(path: str | Path) -> NamedLaw:
    """A law file written by ``napkin scaling fit --out`` (or by hand: the five coefficients,
    ``data_range`` optional)."""
    path = Path(path)
    require(path.exists(), f"law: no such file {str(path)!r}; allowed: {ALLOWED}")
    require(not path.is_dir(), f"law: {str(path)!r} is a directory, not a law file (.json)")
    try:
        doc = load_json(read_text(path, "law"), "law")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NapkinError(f"law: {path.name} is not a readable JSON file: "
                          f"{' '.join(str(err).split())}") from None
    require(isinstance(doc, dict), f"law: {path.name} must hold a JSON object")
    law = _law_from_values([_number(doc, k, path.name) for k in LAW_FIELDS], path.name)
    rng = doc.get("data_range")
    if rng is None:
        return NamedLaw(law, str(path))
    require(isinstance(rng, dict), f"law: {path.name}: data_range must be an object")
    bounds = [_number(rng, k, f"{path.name} data_range") for k in ("n_min", "n_max", "d_min",
                                                                    "d_max")]
    points = _number(rng, "points", f"{path.name} data_range")
    try:
        data_range = DataRange(*bounds, int(points), str(rng.get("source", path.name)))
    except NapkinError as err:
        raise NapkinError(f"law: {path.name}: {err}") from None
    return NamedLaw(law, str(path), data_range)


def resolve(text: str,
            fitted: Mapping[str, Callable[[], NamedLaw]] | None = None) -> NamedLaw:
    """``--law``: a preset name, a name in ``fitted`` (computed on demand, e.g. ``c4``),
    ``E,A,B,alpha,beta``, or a path to a law file (a name ending in .json, holding a /, or
    naming an existing path)."""
    name = text.strip()
    if name in PRESETS:
        return NamedLaw(PRESETS[name], name)
    if fitted and name in fitted:
        return fitted[name]()
    if name == "kaplan":
        raise NapkinError("law: kaplan is an allocation (N ∝ C^0.73, Kaplan et al. 2020), not a "
                          "loss law L(N, D); only 'napkin scaling optimum' takes it; allowed "
                          f"here: {ALLOWED}")
    if "," in name:
        return NamedLaw(parse_numbers(name), name)
    if name.endswith(".json") or Path(name).exists() or "/" in name:
        return read_law(name)
    raise NapkinError(f"law: unknown law {text!r}; allowed: {ALLOWED}")


def range_warnings(named: NamedLaw, points: list[tuple[str, float, float]]) -> list[str]:
    """One line per (label, N, D) coordinate outside the law's data range (none without one):
    the law is extrapolated there."""
    rng = named.data_range
    if rng is None:
        return []
    out = []
    for label, n, d in points:
        for what, value, lo, hi, unit in (("N", n, rng.n_min, rng.n_max, "parameters"),
                                          ("D", d, rng.d_min, rng.d_max, "tokens")):
            if not lo <= value <= hi:
                out.append(f"{label}: {what} = {value:.4g} {unit} is outside the law's data "
                           f"range {lo:.4g}–{hi:.4g} ({rng.points} runs of {rng.source}); "
                           "extrapolated")
    return out
