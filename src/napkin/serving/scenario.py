"""Scenario files: a workload on an engine, model and accelerator (YAML, every field
overridable), and a scenario built into specs, engine replicas and a workload source
(:func:`build`). The ``engine`` section's models are :mod:`napkin.serving.engine_config`'s;
a replica's layout and KV pool, :mod:`napkin.serving.replica`'s.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import Field, ValidationError

from napkin.accounting.collectives import stage_boundary_bytes_per_token
from napkin.accounting.forward import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.catalog.checkpoints import resolve_unquantized
from napkin.errors import NapkinError
from napkin.serving.arrivals import ClosedLoop, OpenLoop, Sessions, generate
from napkin.serving.engine import Engine
from napkin.serving.engine_config import EngineConfig
from napkin.serving.engine_spec import EngineSpec, StepTimer, roofline_timer
from napkin.serving.metrics import SLO
from napkin.serving.pipeline import PipelineTimer
from napkin.serving.replica import (
    allreduce_link,
    check_pipeline,
    engine_layout,
    engine_spec,
    nvlink_domain,
    prefill_pool_layout,
    rank_link,
)
from napkin.serving.request import Request
from napkin.serving.simulate import Disaggregation, SimRun, simulate
from napkin.serving.workload import Workload, load_workload
from napkin.specs.files import InputModel, read_yaml, validation_message
from napkin.specs.hardware import Accelerator, override
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec
from napkin.specs.yaml_text import load_yaml
from napkin.timing.efficiency import Efficiency
from napkin.timing.frontend import Frontend
from napkin.timing.steps import RooflineTimer
from napkin.units import GB, MS

if TYPE_CHECKING:
    from napkin.calibration.profile import Profile


class SLOConfig(InputModel):
    ttft_s: float = Field(default=2.0, gt=0, allow_inf_nan=False)
    """Time-to-first-token bound, seconds (first token − arrival). A request meets the SLO when its
    TTFT and TPOT (and end-to-end time, if bounded) are within their bounds."""
    tpot_s: float = Field(default=0.05, gt=0, allow_inf_nan=False)
    """Time-per-output-token bound, seconds: (finish − first token) / (output tokens − 1)."""
    e2e_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Optional end-to-end bound, counted with the other two."""
    share: float = Field(default=0.9, gt=0, le=1)
    """Share of requests that must meet both bounds for a load to count as sustainable
    (``napkin serve sweep``; DistServe's SLO attainment, 90 % by default)."""
    confidence: float = Field(default=0.9, ge=0, lt=1)
    """Probability of meeting the SLO that a plan asks of a configuration, under its
    calibration profile's error bands (:mod:`napkin.serving.confidence`); 0: meeting it at the
    predicted times is enough."""


class Scenario(InputModel):
    """A scenario file: ``workload`` is a path (relative to the file) or an inline workload."""

    name: str = "scenario"
    """Label of the scenario in reports; also names its ``--export`` files (``<name>.requests.csv``,
    ``<name>.timeseries.csv``)."""
    workload: str | Workload
    """The workload: a path to a workload file, relative to the scenario file, or the workload
    itself, inline."""
    model: str
    """The model: a catalog id (``napkin models``) or a path to a Hugging Face ``config.json`` or
    its folder (a relative path is read from the working directory, not the scenario's folder)."""
    gpu: str | None = None
    """Accelerator catalog id (``napkin gpus``). None: a custom device, which needs all of
    ``gpu_mem_gb``, ``gpu_bw_gbs`` and ``gpu_tflops``."""
    gpu_mem_gb: float | None = Field(default=None, gt=0)
    """Device memory, GB (10^9 bytes), replacing the catalog's (the KV pool is sized from it). None:
    the catalog's."""
    gpu_bw_gbs: float | None = Field(default=None, gt=0)
    """Memory bandwidth, GB/s (10^9 bytes/s), replacing the catalog's. None: the catalog's."""
    gpu_tflops: float | None = Field(default=None, gt=0)
    """Dense peak, TFLOP/s, set for every compute format. None: the catalog's rates."""
    weights: str = "bf16"
    """Weight format (``bf16``, ``fp8``, ``int4-g128``, ``nvfp4``, ``q4_k_m``…): bytes per weight
    (memory, bytes read per step) and the compute rate."""
    kv_dtype: str = "bf16"
    """KV-cache format (``bf16``, ``fp16``, ``fp8``, ``int8``, ``fp32``): bytes per cached element,
    hence KV bytes per token and blocks in the pool."""
    unquantized: str | None = None
    """Parts the checkpoint keeps in BF16 while ``weights`` quantizes the rest, comma-separated:
    ``attention``, ``router``, ``shared-experts``, ``dense-mlp``, ``lm-head``, ``embedding``
    (gpt-oss's MXFP4 checkpoint: ``attention,router,embedding,lm-head``; NVIDIA's NVFP4 MoE
    checkpoints: ``attention,router,lm-head``), or ``checkpoint``: what the catalog model's
    public checkpoint keeps at ``weights``. None: ``weights`` for every parameter."""
    calibration: str = "auto"
    """Step times: ``auto`` (the shipped profile of ``engine.backend``), ``roofline`` (MFU, MBU
    and step overhead below), a shipped profile name, or a profile file."""
    mfu: float = Field(default=1.0, gt=0, le=1)
    """``calibration: roofline`` only: the achieved fraction of the dense peak FLOP/s; 1 gives the
    roofline ceiling. Setting it with another calibration is refused."""
    mbu: float = Field(default=1.0, gt=0, le=1)
    """``calibration: roofline`` only: the achieved fraction of the memory bandwidth; 1 gives the
    roofline ceiling. Setting it with another calibration is refused."""
    step_overhead_ms: float = Field(default=0.0, ge=0)
    """``calibration: roofline`` only: fixed time added to every engine step, ms (kernel launches,
    scheduling). Setting it with another calibration is refused."""
    frontend_ms: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Roofline: time a request spends outside the engine before its first step (HTTP,
    tokenization); a profile fits its own (``request_s``). A delay every request pays alone;
    ``engine.frontend`` is a frontend whose jobs queue."""
    engine: EngineConfig = EngineConfig()
    """Scheduler, KV pool and parallelism of the engines."""
    slo: SLOConfig = SLOConfig()
    """The latency bounds requests are counted against (SLO met, goodput, sustainable load)."""


@dataclass(frozen=True)
class Built:
    """A scenario resolved into specs, engines and a workload source."""

    scenario: Scenario
    model: ModelSpec
    acc: Accelerator
    precision: Precision
    eff: Efficiency
    spec: EngineSpec
    kv_pool_bytes: float
    pool_derivation: dict[str, float]
    source: OpenLoop | ClosedLoop | Sessions
    slo: SLO
    profile: "Profile | None" = None
    """The calibration profile timing the steps; None: the roofline at MFU/MBU."""
    warnings: tuple[str, ...] = ()
    """Where the scenario lies outside the profile's fitted domain."""
    warmup: int = 0
    """Warm-up requests the workload sends first, left out of the metrics."""
    prefill_spec: EngineSpec | None = None
    """Disaggregated: the prefill pool's engines (``spec`` is then the decode pool's)."""
    disagg: Disaggregation | None = None
    layout: ParallelLayout = field(default_factory=ParallelLayout)
    """The replica's parallel layout (``spec.tensor_parallel`` is its attention TP); the
    decode pool's when disaggregated."""
    prefill_layout: ParallelLayout = field(default_factory=ParallelLayout)
    """Disaggregated: the prefill pool's (tensor parallelism over its GPUs)."""

    @property
    def calibration(self) -> str:
        return self.profile.name if self.profile else "roofline"

    @property
    def frontend(self) -> Frontend | None:
        """The engines' frontend queue: the scenario's ``engine.frontend``, else its profile's
        (None: none)."""
        if self.spec.frontend is not None:
            return self.spec.frontend
        return self.profile.model.frontend if self.profile is not None else None

    @property
    def gpus(self) -> int:
        """GPUs of an aggregated deployment: replicas × a replica's ranks (attention TP × DP)
        × pipeline stages (disaggregated pools: :attr:`disagg` counts its own)."""
        e = self.scenario.engine
        return e.replicas * self.layout.ranks * e.pipeline_parallel

    @cached_property
    def _timers(self) -> dict[tuple[int, int], tuple[EngineSpec, ParallelLayout,
                                                      StepTimer | None]]:
        """The timers :meth:`_timer` built, by its arguments (a timer is immutable: every
        simulation of this scenario shares them)."""
        return {}

    def _timer(self, spec: EngineSpec, layout: ParallelLayout) -> StepTimer | None:
        """:meth:`_new_timer`, built once per ``spec`` and ``layout``."""
        hit = self._timers.get((id(spec), id(layout)))
        if hit is not None and hit[0] is spec and hit[1] is layout:
            return hit[2]
        timer = self._new_timer(spec, layout)
        self._timers[(id(spec), id(layout))] = (spec, layout, timer)
        return timer

    def _new_timer(self, spec: EngineSpec, layout: ParallelLayout) -> StepTimer | None:
        """The step timer of engines of ``spec`` in ``layout``: the profile's or the roofline
        (None: the engine's own roofline), over the whole group for a tensor-parallel layout,
        else one rank's timer inside a :class:`LayoutTimer`."""
        plain = layout.is_tensor_parallel
        tp = spec.tensor_parallel if plain else 1
        compute = self.precision.weights.compute
        timer: StepTimer | None = None
        if self.profile is not None:
            from napkin.calibration.basis import FittedTimer, StepBasis  # (profiles only)

            basis = StepBasis.of(self.model, self.acc, compute, tp, spec.allreduce_bytes_per_s,
                                 self.precision.weights.weight_only, self.precision)
            model = self.profile.model.on(self.acc.architecture)
            timer = FittedTimer(basis, model if spec.eager_prefill else model.without_floor())
        elif self.scenario.frontend_ms or not plain:
            timer = replace(RooflineTimer.of(
                self.model, self.acc, compute, self.eff, tp, spec.allreduce_bytes_per_s,
                spec.allreduce_latency_s), request_s=self.scenario.frontend_ms * MS)
        if plain or timer is None:
            return timer
        from napkin.calibration.basis import layout_timer  # (beyond plain tensor parallelism)

        e = self.scenario.engine
        return layout_timer(self.model, self.precision, layout, timer,
                            spec.allreduce_bytes_per_s, spec.allreduce_latency_s,
                            e.internode_gbs * GB, nvlink_domain(e, self.acc), spec.backend)

    def engines(self) -> list[Engine]:
        """Fresh engine replicas (a simulation mutates them): the prefill pool first when
        disaggregated."""
        e = self.scenario.engine
        pools: list[tuple[str, EngineSpec, int, ParallelLayout]] = [
            ("engine", self.spec, e.replicas, self.layout)]
        if e.disaggregated is not None and self.prefill_spec is not None:
            d = e.disaggregated
            pools = [("prefill", self.prefill_spec, d.prefill_replicas, self.prefill_layout),
                     ("decode", self.spec, d.decode_replicas, self.layout)]
        out = []
        p = e.pipeline_parallel
        for name, spec, count, layout in pools:
            timer = self._timer(spec, layout)
            if p > 1:  # each replica: p virtual engines, a batch in flight each
                timer = self._pipeline_timer(timer, spec)
                virtual = replace(spec, num_blocks=spec.num_blocks // p,
                                  max_num_seqs=-(-spec.max_num_seqs // p),
                                  host_kv_blocks=spec.host_kv_blocks // p)
                out += [Engine(self.model, self.acc, self.precision, self.eff, virtual,
                               f"{name}-{i}:{k}", timer) for i in range(count)
                        for k in range(p)]
                continue
            out += [Engine(self.model, self.acc, self.precision, self.eff, spec,
                           f"{name}-{i}", timer) for i in range(count)]
        return out

    def _pipeline_timer(self, timer: StepTimer | None, spec: EngineSpec) -> PipelineTimer:
        """:class:`PipelineTimer` around a replica's timer (the roofline's where None): stage
        boundaries over NVLink while the replica's GPUs fit in one node, else the NICs."""
        e = self.scenario.engine
        inner = timer or roofline_timer(self.model, self.acc, self.precision, self.eff, spec)
        gpus = spec.tensor_parallel * e.pipeline_parallel
        return PipelineTimer(inner, e.pipeline_parallel, stage_boundary_bytes_per_token(
            self.model.hidden_size, spec.tensor_parallel), rank_link(e, self.acc, gpus),
            spec.allreduce_latency_s)

    def simulate(self, progress: Callable[[float, int], None] | None = None,
                 stop: Callable[[Request], bool] | None = None) -> SimRun:
        """Run the workload through fresh engines with the scenario's router."""
        return simulate(self.engines(), self.source, self.scenario.engine.router, progress,
                        stop, self.disagg)


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The safe dumper and loader, libyaml's C ones where PyYAML has them (a scenario's copy in
:func:`apply_overrides`: 1 ms instead of 5)."""


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``["engine.max_num_seqs=128", "mfu=0.5"]`` applied to a parsed scenario mapping."""
    out = yaml.load(yaml.dump(data, Dumper=_DUMPER), Loader=_LOADER)  # deep copy, keys sorted
    for item in overrides:
        if "=" not in item:
            raise NapkinError(f"set: {item!r} must look like field.path=value")
        path, raw = item.split("=", 1)
        keys = path.strip().split(".")
        node = out
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise NapkinError(f"set: {path!r}: {key!r} is not a mapping")
        try:
            node[keys[-1]] = load_yaml(raw, f"set: {path}")
        except yaml.YAMLError:
            raise NapkinError(f"set: {item!r}: the value is not valid YAML") from None
    return out


def load_scenario(path: str | Path, overrides: list[str] = ()) -> tuple[Scenario, Path]:
    """Parse a scenario file (with ``field.path=value`` overrides) and validate it."""
    data = read_yaml(path, "scenario")
    if not isinstance(data, dict):
        raise NapkinError(f"{path}: a scenario must be a YAML mapping")
    data = apply_overrides(data, list(overrides))
    try:
        return Scenario.model_validate(data), Path(path).resolve().parent
    except ValidationError as e:
        raise NapkinError(f"{path}: {validation_message(e, data)}") from None


def build(scenario: Scenario, base_dir: Path, seed: int | None = None) -> Built:
    """Resolve specs, size the KV pool and draw (or set up) the workload (``seed`` overrides
    the workload's)."""
    model = load_model(scenario.model)
    acc = override(load_accelerator(scenario.gpu) if scenario.gpu else None,
                   scenario.gpu_mem_gb, scenario.gpu_bw_gbs, scenario.gpu_tflops)
    precision = Precision.of(scenario.weights, scenario.kv_dtype, unquantized=resolve_unquantized(
        scenario.unquantized, model.name, scenario.weights))
    eff = Efficiency(scenario.mfu, scenario.mbu, scenario.step_overhead_ms * MS)
    e = scenario.engine
    layout = engine_layout(model, e)
    kv_token = model.kv_bytes_per_token(precision.kv.bytes_per_element)
    link, spans = allreduce_link(e, acc, layout.attention_tp)
    spec, pool, derivation = engine_spec(model, acc, precision, e, layout, link)
    if e.pipeline_parallel > 1:
        check_pipeline(model, e, layout, spec)
    prefill_spec = disagg = None
    prefill_layout = ParallelLayout()
    if e.disaggregated is not None:
        d = e.disaggregated
        if e.replicas != 1:
            raise NapkinError("engine.replicas: with engine.disaggregated give "
                              "prefill_replicas and decode_replicas instead")
        prefill_layout = prefill_pool_layout(model, e)
        ptp = prefill_layout.ranks
        prefill_link, prefill_spans = allreduce_link(e, acc, prefill_layout.attention_tp)
        prefill_spec, _, _ = engine_spec(model, acc, precision, e, prefill_layout, prefill_link)
        spans = spans or prefill_spans
        kv_link = d.kv_link_gbs * GB if d.kv_link_gbs else rank_link(
            e, acc, ptp * d.prefill_replicas + layout.ranks * d.decode_replicas) * ptp
        disagg = Disaggregation(d.prefill_replicas, kv_link, d.kv_link_latency_us * 1e-6,
                                kv_token)
    if isinstance(scenario.workload, str):
        workload, wl_dir = load_workload(base_dir / scenario.workload)
    else:
        workload, wl_dir = scenario.workload, base_dir
    if seed is not None:
        workload = workload.model_copy(update={"seed": seed})
    source = generate(workload, wl_dir)
    longest = None
    if isinstance(source, OpenLoop) and len(source.requests):
        longest = (int(source.requests.input_tokens.max()),
                   int(source.requests.output_tokens.max()))
    profile, warnings = _calibration(scenario, model, acc.id, precision.weights.name, longest,
                                     layout)
    if profile is not None and e.speculative is not None:
        warnings += (f"outside profile {profile.name!r}: speculative decoding (fitted without "
                     "it: a verification is timed as a step of k + 1 tokens a sequence)",)
    if (not e.chunked_prefill and longest
            and longest[0] + e.max_num_seqs > e.max_num_batched_tokens):
        warnings += (f"chunked_prefill off: a {longest[0]}-token prompt runs whole only in a "
                     f"step with at most {e.max_num_batched_tokens - longest[0]} decodes "
                     "(max_num_batched_tokens); it waits for decodes to drain — raise the "
                     "budget above the longest prompt + max_num_seqs",)
    if spans:
        warnings += (spans,)
    slo = SLO(scenario.slo.ttft_s, scenario.slo.tpot_s, scenario.slo.share, scenario.slo.e2e_s)
    return Built(scenario, model, acc, precision, eff, spec, pool, derivation, source, slo,
                 profile, warnings, getattr(workload.arrivals, "warmup_requests", 0),
                 prefill_spec, disagg, layout, prefill_layout)


ROOFLINE_KNOBS = ("mfu", "mbu", "step_overhead_ms", "frontend_ms")


def _calibration(scenario: Scenario, model: ModelSpec, gpu: str, weights: str,
                 longest: tuple[int, int] | None, layout: ParallelLayout
                 ) -> tuple["Profile | None", tuple[str, ...]]:
    """The profile ``scenario.calibration`` names (None for the roofline) and the ways the
    scenario lies outside its domain (``longest``: the longest input and output drawn)."""
    name = scenario.calibration
    if name == "roofline":
        return None, ()
    given = [k for k in ROOFLINE_KNOBS if k in scenario.model_fields_set]
    if given:
        raise NapkinError(f"{given[0]}: applies with calibration: roofline only (calibration is "
                          f"{name!r}; a profile's fitted coefficients set the step times)")
    from napkin.calibration.profile import auto_profile, load_profile  # (not the roofline's)

    profile = load_profile(auto_profile(scenario.engine.backend, scenario.engine.version)
                           if name == "auto" else name)
    e = scenario.engine
    inp, out = longest or (None, None)
    outside = profile.domain.outside(gpu, scenario.model, e.tensor_parallel, weights, inp, out,
                                     spec=model, layout=layout,
                                     version=(e.backend, e.version)
                                     if e.version and e.backend == profile.backend else None)
    return profile, tuple(f"outside profile {profile.name!r}: {w}" for w in outside)

