"""Calibration profiles: a fitted :class:`~napkin.calibration.basis.StepModel` with its provenance.

A profile file (YAML) names the engine it was fitted for (``backend``), its coefficients, every
source it was fitted on (file, rows, engine versions, licence), the domain those rows cover
(GPUs, models and their architecture — attention kinds, routed experts a layer —, TP sizes,
concurrency, lengths, weight formats) and the hold-out residuals of its cross-validation, from
which the error bands come:

    band = [predicted × ratio_low, predicted × ratio_high]

with ``ratio_low``/``ratio_high`` the 10th and 90th percentiles of measured/predicted over the
held-out rows (an 80 % interval). Profiles ship in ``napkin/catalog/profiles`` (one per
backend); ``auto`` picks the one for a scenario's backend.
"""

from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from napkin.calibration.basis import StepModel
from napkin.calibration.protocol import campaigns_of
from napkin.calibration.terms import TERMS, TIED, parse_terms
from napkin.errors import NapkinError
from napkin.specs.files import read_yaml
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec
from napkin.specs.releases import generation, release, releases
from napkin.specs.yaml_text import load_yaml
from napkin.timing.frontend import FRONTEND_FIELDS, Frontend

BAND_COVERAGE = 0.8
"""Share of held-out measurements the error band is built to cover."""


@dataclass(frozen=True)
class Band:
    """Measured/predicted ratio interval of one metric over the hold-out rows."""

    ratio_low: float
    ratio_high: float
    median_abs_error: float
    rows: int

    def of(self, value: float) -> tuple[float, float]:
        """(low, high) bounds around a predicted ``value``."""
        return value * self.ratio_low, value * self.ratio_high


def attention_kinds(model: ModelSpec) -> tuple[str, ...]:
    """The attention kinds of ``model``'s layers (``gqa``, ``mha``, ``mqa``, ``mla``, …), sorted."""
    return tuple(sorted({b.attention.kind for b in model.blocks}))


def routed_experts_per_layer(model: ModelSpec) -> int:
    """Routed experts a MoE layer of ``model`` holds (the most over its layers; 0 if dense)."""
    return max((b.experts.num_experts for b in model.blocks if b.experts), default=0)


@dataclass(frozen=True)
class Domain:
    """What the fitted rows span; queries outside it are extrapolation.

    ``attention`` (the fitted models' attention kinds) and ``routed_experts`` (the span of their
    routed experts a layer, 0 for a dense model) describe the architectures behind ``models``,
    so that a model the profile never saw is placed against what it did see: the step terms
    were fitted on those layers' kernels (a profile without them skips the check)."""

    gpus: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    tensor_parallel: tuple[int, int] = (1, 1)
    concurrency: tuple[int, int] = (1, 1)
    input_tokens: tuple[int, int] = (1, 1)
    output_tokens: tuple[int, int] = (1, 1)
    weights: tuple[str, ...] = ()
    attention: tuple[str, ...] = ()
    routed_experts: tuple[int, int] | None = None
    layouts: tuple[str, ...] = ()
    """The fitted rows' layout kinds (:attr:`ParallelLayout.kind`: ``tp``, ``tp ep``, ``dp``,
    ``dp ep``); empty (a profile fitted before layouts were recorded): ``tp`` only."""
    versions: tuple[str, ...] = ()
    """The engine releases of the fitted rows (a profile file without them: those its sources
    list); empty: not recorded, not checked."""
    attention_dp: tuple[int, int] | None = None
    """The span of the fitted rows' attention data-parallel groups (1: none): the fixed time of
    the all-to-alls behind it was fitted there; None (a profile fitted before it was recorded):
    not checked."""

    @classmethod
    def architectures(cls, models: list[ModelSpec]) -> dict[str, Any]:
        """``attention`` and ``routed_experts`` of the fitted ``models`` (keyword arguments)."""
        if not models:
            return {}
        experts = [routed_experts_per_layer(m) for m in models]
        return {"attention": tuple(sorted({k for m in models for k in attention_kinds(m)})),
                "routed_experts": (min(experts), max(experts))}

    def outside(self, gpu: str, model: str, tensor_parallel: int, weights: str,
                input_tokens: int | None = None, output_tokens: int | None = None,
                concurrency: int | None = None, spec: ModelSpec | None = None,
                layout: ParallelLayout | None = None,
                version: tuple[str, str] | None = None) -> list[str]:
        """Reasons a query lies outside the domain (empty: inside); ``spec``, the query's model,
        is placed against the fitted architectures, ``layout`` against the fitted layouts,
        ``version`` (backend, release) against the fitted releases."""
        out = self.version_outside(*version) if version else []
        fitted = self.layouts or ("tp",)
        if layout is not None and layout.kind not in fitted:
            out.append(f"layout {layout.label()} (fitted on {', '.join(fitted)} layouts: the "
                       "busiest rank's work timed with the coefficients, the all-to-alls with "
                       "the all-reduce terms)")
        elif (layout is not None and self.attention_dp is not None
              and not self.attention_dp[0] <= layout.attention_dp <= self.attention_dp[1]):
            lo, hi = self.attention_dp
            out.append(f"attention data parallel {layout.attention_dp} (fitted on {lo}–{hi})")
        if self.gpus and gpu not in self.gpus:
            out.append(f"GPU {gpu} (fitted on {', '.join(self.gpus)}; carried through its specs)")
        if self.models and model not in self.models:
            out.append(f"model {model} (fitted on {', '.join(self.models)})")
        if spec is not None:
            out += self.architecture_outside(spec)
        if self.weights and weights not in self.weights:
            out.append(f"weights {weights} (fitted on {', '.join(self.weights)})")
        for name, value, (lo, hi) in (("tensor_parallel", tensor_parallel, self.tensor_parallel),
                                      ("input tokens", input_tokens, self.input_tokens),
                                      ("output tokens", output_tokens, self.output_tokens),
                                      ("concurrency", concurrency, self.concurrency)):
            if value is not None and not lo <= value <= hi:
                out.append(f"{name} {value} (fitted on {lo}–{hi})")
        return out

    def version_outside(self, backend: str, version: str) -> list[str]:
        """Reasons ``backend`` ``version`` lies outside the fitted releases (empty: inside, or
        nothing to compare): another execution generation
        (:func:`napkin.specs.releases.generation`), or a minor release before the oldest or
        after the newest fitted one (patch releases and release candidates of a fitted minor
        release are inside)."""
        def minor(r: tuple[int, ...]) -> tuple[int, int]:
            return (r[0], r[1] if len(r) > 1 else 0)
        fitted = sorted((minor(r), v) for v in self.versions if (r := release(v)) is not None)
        mine = release(version)
        if not fitted or mine is None:
            return []
        span = fitted[0][1] if len(fitted) == 1 else f"{fitted[0][1]}–{fitted[-1][1]}"
        gen, seen = generation(backend, version), {generation(backend, v) for _, v in fitted}
        if gen is not None and gen not in seen:
            return [f"engine version {version}: {gen} (fitted on {span}: "
                    f"{', '.join(sorted(g for g in seen if g))})"]
        if not fitted[0][0] <= minor(mine) <= fitted[-1][0]:
            return [f"engine version {version} (fitted on {span})"]
        return []

    def architecture_outside(self, spec: ModelSpec) -> list[str]:
        """Reasons ``spec``'s architecture lies outside the fitted ones (empty: inside)."""
        out = []
        new = [k for k in attention_kinds(spec) if k not in self.attention]
        if self.attention and new:
            out.append(f"attention {', '.join(k.upper() for k in new)} (fitted on "
                       f"{', '.join(k.upper() for k in self.attention)} models only)")
        if self.routed_experts is not None:
            lo, hi = self.routed_experts
            n = routed_experts_per_layer(spec)
            if n == 0 and lo > 0:
                out.append(f"a dense model (fitted on {lo}–{hi} routed experts a layer)")
            elif not lo <= n <= hi:
                fitted = "dense models only" if hi == 0 else f"{lo}–{hi}"
                out.append(f"{n} routed experts a layer (fitted on {fitted})")
        return out


@dataclass(frozen=True)
class Profile:
    """A fitted step-time model for one engine, with where it comes from and how sure it is."""

    name: str
    backend: str
    model: StepModel
    domain: Domain = Domain()
    bands: dict[str, Band] = field(default_factory=dict)
    sources: tuple[dict[str, Any], ...] = ()
    harness: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    terms: tuple[str, ...] = TERMS
    """The terms the fit was free to use (the others held at 0); cross-validation refits of
    the profile use the same."""

    @property
    def harness_latencies_s(self) -> tuple[float, ...]:
        """The fixed harness latencies (s) the profile's benchmark campaigns carried in their
        TTFTs on top of ``request_s`` (fitted or given): what a prediction does not include."""
        return tuple(c.protocol.latency_s for c in campaigns_of(self.harness)
                     if c.protocol.latency_s > 0)

    def to_dict(self) -> dict[str, Any]:
        d = self.domain
        return {
            "name": self.name, "backend": self.backend, "notes": self.notes,
            "coefficients": {k: float(f"{v:.6g}") for k, v in self.model.as_dict().items()},
            "request_s": float(f"{self.model.request_s:.6g}"),
            **({"request_token_s": float(f"{self.model.request_token_s:.6g}")}
               if self.model.request_token_s else {}),
            **({"frontend": {k: float(f"{getattr(self.model.frontend, k):.6g}")
                             for k in FRONTEND_FIELDS}}
               if self.model.frontend is not None else {}),
            **({"architecture_scales": {arch: {t: float(f"{v:.6g}") for t, v in scales}
                                        for arch, scales in self.model.architecture_scales}}
               if self.model.architecture_scales else {}),
            "fitted_terms": list(self.terms),
            "domain": {"gpus": list(d.gpus), "models": list(d.models),
                       "tensor_parallel": list(d.tensor_parallel),
                       "concurrency": list(d.concurrency), "input_tokens": list(d.input_tokens),
                       "output_tokens": list(d.output_tokens), "weights": list(d.weights),
                       **({"attention": list(d.attention)} if d.attention else {}),
                       **({"routed_experts": list(d.routed_experts)}
                          if d.routed_experts is not None else {}),
                       **({"layouts": list(d.layouts)} if d.layouts else {}),
                       **({"versions": list(d.versions)} if d.versions else {}),
                       **({"attention_dp": list(d.attention_dp)}
                          if d.attention_dp is not None else {})},
            "bands": {k: {"ratio_low": round(b.ratio_low, 4), "ratio_high": round(b.ratio_high, 4),
                          "median_abs_error": round(b.median_abs_error, 4), "rows": b.rows,
                          "coverage": BAND_COVERAGE} for k, b in self.bands.items()},
            "harness": self.harness,
            "sources": list(self.sources),
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True))

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "Profile":
        if not isinstance(data, dict):
            raise NapkinError(f"{where}: a profile must be a YAML mapping")
        try:
            coefficients = {k: float(v) for k, v in data["coefficients"].items()}
            fitted = data.get("fitted_terms") or TERMS
            # a tied term a file predates takes its parent's coefficient if that was fitted
            coefficients = {**{t: coefficients[of] for t, of in TIED.items()
                               if of in fitted and of in coefficients}, **coefficients}
            model = replace(StepModel.of(coefficients, _seconds(data, "request_s"),
                                         _seconds(data, "request_token_s")),
                            frontend=_frontend(data.get("frontend")),
                            architecture_scales=_scales(data.get("architecture_scales")))
            dom = data.get("domain") or {}
            domain = Domain(tuple(dom.get("gpus", ())), tuple(dom.get("models", ())),
                            tuple(dom.get("tensor_parallel", (1, 1))),
                            tuple(dom.get("concurrency", (1, 1))),
                            tuple(dom.get("input_tokens", (1, 1))),
                            tuple(dom.get("output_tokens", (1, 1))),
                            tuple(dom.get("weights", ())), _kinds(dom.get("attention")),
                            _span(dom.get("routed_experts"), "routed_experts"),
                            _layouts(dom.get("layouts")),
                            _versions(dom.get("versions"), data.get("sources")),
                            _span(dom.get("attention_dp"), "attention_dp", low=1))
            bands = {k: Band(float(b["ratio_low"]), float(b["ratio_high"]),
                             float(b["median_abs_error"]), int(b["rows"]))
                     for k, b in (data.get("bands") or {}).items()}
            terms = parse_terms(",".join(data.get("fitted_terms") or TERMS))
            harness = dict(data.get("harness") or {})
            campaigns_of(harness)  # a bad protocol or campaign fails here, in one line
            return cls(str(data.get("name", where)), str(data["backend"]), model, domain, bands,
                       tuple(data.get("sources") or ()), harness, str(data.get("notes", "")),
                       terms)
        except KeyError as e:
            raise NapkinError(f"{where}: profile field {e.args[0]} is missing") from None
        except (_FieldError, NapkinError) as e:  # a field's own check names the field
            raise NapkinError(f"{where}: {e}") from None
        except (TypeError, ValueError, AttributeError) as e:
            raise NapkinError(f"{where}: not a valid profile ({e}); coefficients are "
                              f"{', '.join(TERMS)}") from None


class _FieldError(ValueError):
    """A profile field outside the coefficients with a bad value (its message names it)."""


def _frontend(value: Any) -> Frontend | None:
    """A profile's ``frontend:`` mapping (seconds per request, prompt token, output token and
    response; a missing one is 0) as a :class:`Frontend`; None without one."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - set(FRONTEND_FIELDS):
        raise _FieldError(f"frontend: must map {', '.join(FRONTEND_FIELDS)} to seconds")
    try:
        return Frontend(**{k: _seconds(value, k) for k in value})
    except _FieldError as e:
        raise _FieldError(f"frontend.{e}") from None
    except NapkinError as e:
        raise _FieldError(str(e)) from None


def _scales(value: Any) -> tuple[tuple[str, tuple[tuple[str, float], ...]], ...]:
    """A profile's ``architecture_scales:`` mapping (architecture → term → factor), as
    :attr:`StepModel.architecture_scales` holds it; absent: none. The factors themselves are
    checked by :class:`StepModel`."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(
            isinstance(a, str) and isinstance(m, dict) and m for a, m in value.items()):
        raise _FieldError("architecture_scales: must map an architecture (blackwell, …) to "
                          "a mapping of terms to factors")
    try:
        return tuple((a, tuple((str(t), float(f)) for t, f in m.items()))
                     for a, m in value.items())
    except (TypeError, ValueError):
        raise _FieldError("architecture_scales: every factor must be a number") from None


def _versions(value: Any, sources: Any) -> tuple[str, ...]:
    """The fitted engine releases: the domain's list, else those the sources list (a profile
    written before the domain recorded them); names that are not releases left out."""
    if value is None:
        value = [v for src in sources or () if isinstance(src, dict)
                 for v in src.get("engine_versions") or ()]
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise _FieldError(f"domain.versions: must be a list of release strings, got {value!r}")
    return releases(str(v) for v in value)


def _seconds(data: dict, field: str) -> float:
    """A latency field of a profile file (absent: 0), a number of seconds."""
    value = data.get(field, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _FieldError(f"{field}: must be a number of seconds, got {value!r}")
    return float(value)


def _kinds(value: Any) -> tuple[str, ...]:
    """Attention kinds from a profile file: a list of names (absent: none recorded)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(k, str) and k for k in value):
        raise _FieldError(f"domain.attention must be a list of attention kinds (gqa, mha, mqa, "
                          f"mla, …), got {value!r}")
    return tuple(value)


LAYOUT_KINDS = ("tp", "tp ep", "dp", "dp ep")


def _layouts(value: Any) -> tuple[str, ...]:
    """Layout kinds from a profile file: a list of :data:`LAYOUT_KINDS` (absent: none
    recorded)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(k in LAYOUT_KINDS for k in value):
        raise _FieldError(f"domain.layouts must be a list of layout kinds "
                          f"({', '.join(LAYOUT_KINDS)}), got {value!r}")
    return tuple(value)


def _span(value: Any, name: str, low: int = 0) -> tuple[int, int] | None:
    """A ``[low, high]`` pair of integers, ``low`` <= low <= high, from a profile file's
    ``domain.<name>``, or None if absent."""
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            and low <= value[0] <= value[1]):
        raise _FieldError(f"domain.{name} must be [low, high] integers with "
                          f"{low} <= low <= high, got {value!r}")
    return value[0], value[1]


def shipped_profiles() -> list[str]:
    """Names of the profiles shipped with napkin."""
    return list(_shipped_names())


@cache
def _shipped_names() -> tuple[str, ...]:
    folder = resources.files("napkin.catalog").joinpath("profiles")
    return tuple(sorted(p.name.removesuffix(".yaml") for p in folder.iterdir()
                        if p.name.endswith(".yaml")))


@cache
def _shipped(name: str) -> Profile:
    """A shipped profile, read once per process (package data does not change; a planner
    builds hundreds of scenarios on the same profile)."""
    text = resources.files("napkin.catalog").joinpath("profiles", f"{name}.yaml")
    return Profile.from_dict(load_yaml(text.read_text()), name)


RELEASE_PROFILES: dict[str, tuple[tuple[tuple[int, ...], str], ...]] = {
    "trtllm": (((1, 0), "trtllm-compiled"),),
    "vllm": (((0, 3), "vllm-0.2"),),
}
"""Per backend, (first release not covered, shipped profile) of its older releases, oldest
bound first: TensorRT-LLM's compiled engines before 1.0 (``trtllm-compiled``, fitted on
v0.17's published throughput), vLLM before 0.3 (``vllm-0.2``: eager steps without CUDA graphs,
NCCL's ring all-reduces; fitted on splitwise-sim's late-2023 A100 and H100 times), which
``calibration: auto`` picks for such a release (:func:`auto_profile`)."""


def auto_profile(backend: str, version: str | None) -> str:
    """The shipped profile ``calibration: auto`` picks for ``backend`` at ``version`` (None or
    not a release: current): the first of :data:`RELEASE_PROFILES` whose bound the release is
    below, else the backend's own."""
    r = release(version) if version else None
    if r is not None:
        for bound, name in RELEASE_PROFILES.get(backend, ()):
            if r < bound:
                return name
    return backend


def load_profile(name_or_path: str) -> Profile:
    """A shipped profile by name (``vllm``) or a profile YAML file by path (read each time:
    the file may change between calls of a long-lived process such as ``napkin web``)."""
    if name_or_path in _shipped_names():
        return _shipped(name_or_path)
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return Profile.from_dict(read_yaml(path, "calibration"), str(path))
    raise NapkinError(f"calibration: unknown profile {name_or_path!r}; shipped: "
                      f"{', '.join(shipped_profiles())}, or roofline, auto, or a profile file")
