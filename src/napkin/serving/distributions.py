"""Length and duration distributions of workload files (validated at the boundary).

A length is a fixed integer or one of: ``uniform`` (low..high inclusive), ``lognormal`` (``median``
and ``sigma`` of the underlying normal, or ``mean`` and ``sigma``), ``normal`` (``mean``,
``std``), ``empirical`` (``values`` drawn uniformly). Samples are rounded to integers and clipped
to ``[min, max]`` (min defaults to 1, max to
:data:`napkin.serving.requests.MAX_REQUEST_TOKENS`, the most a fixed length may be).
Durations (think times) use the same forms in seconds, without rounding, clipped at 0.
"""

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from napkin.serving.requests import MAX_REQUEST_TOKENS
from napkin.specs.files import InputModel, tagged


class _Dist(InputModel):
    min: float | None = None
    """Lower clip bound: samples below it are raised to it (tokens for a length, seconds for a
    duration, rounds for ``rounds``). None, or anything lower: 1 for lengths, 0 for durations."""
    max: float | None = None
    """Upper clip bound: samples above it are lowered to it. None: lengths are clipped at
    ``MAX_REQUEST_TOKENS`` (10^8 tokens, also the cap on a larger max); durations unbounded."""


class Uniform(_Dist):
    """Uniform on [low, high]."""

    dist: Literal["uniform"]
    low: float = Field(ge=0)
    """Lower end of the range, in the unit of the field it sizes (lengths are then rounded to
    whole tokens)."""
    high: float = Field(ge=0)
    """Upper end of the range (≥ ``low``); ``low == high`` draws one value."""

    @model_validator(mode="after")
    def _ordered(self) -> "Uniform":
        if self.high < self.low:
            raise ValueError("high must be >= low")
        return self

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.low, self.high, n)


class Lognormal(_Dist):
    """exp(N(μ, σ²)) with μ = ln(median), or μ = ln(mean) − σ²/2 when ``mean`` is given."""

    dist: Literal["lognormal"]
    sigma: float = Field(ge=0)
    """σ: standard deviation of ln(x), the underlying normal (0 draws the centre exactly)."""
    median: float | None = Field(default=None, gt=0)
    """Median of the samples, e^μ; give this or ``mean``."""
    mean: float | None = Field(default=None, gt=0)
    """Mean of the samples (μ = ln(mean) − σ²/2); give this or ``median``."""

    @model_validator(mode="after")
    def _one_center(self) -> "Lognormal":
        if (self.median is None) == (self.mean is None):
            raise ValueError("give exactly one of median or mean")
        return self

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        mu = (np.log(self.median) if self.median is not None
              else np.log(self.mean) - self.sigma**2 / 2)  # type: ignore[arg-type]
        return rng.lognormal(mu, self.sigma, n)


class Normal(_Dist):
    dist: Literal["normal"]
    mean: float
    """Mean of the normal, in the unit of the field it sizes."""
    std: float = Field(ge=0)
    """Standard deviation of the normal; draws outside ``[min, max]`` are clipped to them."""

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.normal(self.mean, self.std, n)


class Empirical(_Dist):
    dist: Literal["empirical"]
    values: list[float] = Field(min_length=1)
    """Values drawn uniformly with replacement, each entry equally likely (repeat one to weight
    it), in the unit of the field it sizes."""

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.choice(np.asarray(self.values, dtype=np.float64), n)


Dist = tagged("dist", Uniform, Lognormal, Normal, Empirical)
Length = Annotated[int, Field(ge=1, le=MAX_REQUEST_TOKENS)] | Dist
Duration = Annotated[float, Field(ge=0)] | Dist


def sample_lengths(spec: Length, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` integer token counts ≥ 1 (or ≥ ``min``), ≤ ``max`` if given."""
    if isinstance(spec, int):
        return np.full(n, spec, dtype=np.int64)
    values = np.rint(spec.draw(rng, n))
    low = 1 if spec.min is None else min(max(1, spec.min), MAX_REQUEST_TOKENS)
    high = MAX_REQUEST_TOKENS if spec.max is None else min(spec.max, MAX_REQUEST_TOKENS)
    return np.clip(values, low, max(low, high)).astype(np.int64)


def sample_durations(spec: Duration, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` durations in seconds ≥ 0 (or ≥ ``min``), ≤ ``max`` if given."""
    if isinstance(spec, int | float):
        return np.full(n, float(spec))
    low = 0.0 if spec.min is None else max(0.0, spec.min)
    return np.clip(spec.draw(rng, n), low, spec.max if spec.max is not None else None)
