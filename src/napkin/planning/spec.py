"""Plan files: a model, a workload at its offered load, an SLO, a search space and prices.

::

    name: llama-70b chat
    model: llama-3.1-70b
    weights: fp8
    workload: chat.workload.yaml        # or inline; its arrivals set the offered load
    slo: {ttft_s: 1.0, tpot_s: 0.05, share: 0.95}
    search:
      gpus: [h100-sxm, h200, b200]
      tensor_parallel: [1, 2, 4, 8]
      replicas: [1, 2, 3, 4, 6, 8]
      max_gpus: 32
      max_num_seqs: [128, 256]
      backends: [vllm, sglang]
    prices: {h100-sxm: 2.49}             # $/GPU-hour overrides of the price catalog
    seeds: 3

A candidate is one point of the product of the search lists (GPU, TP, data-parallel attention,
replicas, weight format, KV format, ``max_num_seqs``, token budget, backend, expert parallelism
and two-batch overlap for MoE models) with ``tp × dp × replicas ≤ max_gpus``: for DeepSeek-V3
``tensor_parallel: [1, 8]``, ``data_parallel: [1, 8]``, ``expert_parallel: [false, true]``
tries TP8, TP8 with EP, DEP8 (dp 8, ep) and its TP-sliced-expert twin.
"""

import itertools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from napkin.accounting.energy import PowerModel
from napkin.errors import NapkinError
from napkin.serving.engine_config import (
    MAX_REPLICAS,
    DisaggConfig,
    EngineConfig,
    FrontendConfig,
    SpeculativeConfig,
)
from napkin.serving.scenario import Scenario, SLOConfig
from napkin.serving.workload import Workload
from napkin.specs.files import InputModel, read_yaml, validation_message
from napkin.specs.layout import ParallelLayout

Backend = Literal["vllm", "trtllm", "sglang"]
PrefillLayout = Literal["tp", "dep", "dep tbo"]
XPYD = re.compile(r"(\d+)P(\d+)D", re.IGNORECASE)


def xpyd(text: str) -> tuple[int, int]:
    """``"2P3D"`` → (2, 3)."""
    m = XPYD.fullmatch(text.strip())
    assert m is not None
    return int(m.group(1)), int(m.group(2))


class SearchSpace(InputModel):
    gpus: list[str] = Field(default=["h100-sxm"], min_length=1)
    """Accelerator catalog ids to try; each needs a price (``prices`` or the price catalog)."""
    tensor_parallel: list[int] = Field(default=[1, 2, 4, 8], min_length=1)
    """Tensor-parallel sizes (GPUs per replica) to try; a size that does not divide the model's
    attention heads is pruned."""
    pipeline_parallel: list[int] = Field(default=[1], min_length=1)
    """Pipeline stages per replica to try (``engine.pipeline_parallel``: a replica of
    ``tensor_parallel × pipeline_parallel`` GPUs); values above 1 are skipped with data-parallel
    attention, expert parallelism and disaggregation."""
    replicas: list[int] = Field(default=[1, 2, 4], min_length=1)
    """Replica counts to try. Configurations that differ only in replicas are simulated in
    increasing count up to the first feasible one; larger counts are recorded as dominated."""
    max_gpus: int | None = Field(default=None, ge=1)
    """Most GPUs a candidate may use: tensor_parallel × pipeline_parallel × replicas, or
    tensor_parallel × (x + y) for an ``xPyD`` layout. None: no limit."""
    weights: list[str] | None = Field(default=None, min_length=1)
    """Weight formats; default: the plan's ``weights``."""
    kv_dtypes: list[str] | None = Field(default=None, min_length=1)
    """KV-cache formats to try. None: the plan's ``kv_dtype``."""
    max_num_seqs: list[int] = Field(default=[256], min_length=1)
    """``engine.max_num_seqs`` values to try (most running requests per replica)."""
    max_num_batched_tokens: list[int] = Field(default=[8192], min_length=1)
    """``engine.max_num_batched_tokens`` values to try (token budgets per step)."""
    backends: list[Backend] = Field(default=["vllm"], min_length=1)
    """Engine backends to try: their scheduling policy and, with ``calibration: auto``, their
    calibration profile."""
    data_parallel: list[int] = Field(default=[1], min_length=1)
    """MoE models: data-parallel attention groups per replica to try (``engine.data_parallel``;
    values above 1 are skipped for dense models; in a disaggregated layout they shape the decode
    replicas, the prefill replicas running tensor parallelism over as many GPUs)."""
    expert_parallel: list[bool] = Field(default=[False], min_length=1)
    """MoE models: also try whole experts spread over the replica's GPUs (skipped for dense
    models and one-GPU replicas)."""
    two_batch_overlap: list[bool] = Field(default=[False], min_length=1)
    """MoE models with data-parallel attention: also try two-batch overlap (skipped at
    ``data_parallel`` 1)."""
    speculative: list[SpeculativeConfig | None] = Field(default=[None], min_length=1)
    """Speculative decoding settings to try (``engine.speculative``; ``null``: off), e.g.
    ``[null, {draft_tokens: 1, acceptance: 0.85}]`` for MTP on and off."""
    disaggregated: list[str] = Field(default_factory=list)
    """Disaggregated deployments to try as well, ``"xPyD"``: x prefill and y decode replicas
    of ``tensor_parallel × data_parallel`` GPUs each (``"1P1D"``, ``"2P3D"``)."""
    prefill_layouts: list[PrefillLayout] = Field(default=["tp"], min_length=1)
    """MoE models, disaggregated deployments: how the prefill replicas run over their GPUs —
    ``tp`` (tensor parallelism over all of them), ``dep`` (data-parallel attention on each GPU
    with the experts spread over them, as SGLang's large-scale EP prefills), ``dep tbo`` (and
    two-batch overlap); the decode replicas run the candidate's layout. Values other than
    ``tp`` are skipped for dense models and one-GPU replicas."""

    @model_validator(mode="after")
    def _xpyd(self) -> "SearchSpace":
        for text in self.disaggregated:
            if XPYD.fullmatch(text) is None or 0 in xpyd(text):
                raise ValueError(f"disaggregated: {text!r} must look like 1P1D, 2P3D "
                                 "(prefill and decode replicas >= 1)")
        return self

    @model_validator(mode="after")
    def _positive(self) -> "SearchSpace":
        if len(set(self.prefill_layouts)) != len(self.prefill_layouts):
            raise ValueError("prefill_layouts: values repeat")
        for name in ("tensor_parallel", "pipeline_parallel", "data_parallel", "replicas",
                     "max_num_seqs", "max_num_batched_tokens"):
            values = getattr(self, name)
            if any(v < 1 for v in values):
                raise ValueError(f"{name}: every value must be >= 1")
            if name == "replicas" and max(values) > MAX_REPLICAS:
                raise ValueError(f"replicas: every value must be <= {MAX_REPLICAS:,}")
            if len(set(values)) != len(values):
                raise ValueError(f"{name}: values repeat")
        return self


class EnergyConfig(InputModel):
    """How a candidate's energy is counted (:mod:`napkin.accounting.energy`): shares of each
    GPU's board power (catalog ``tdp_w``) by phase, the facility's PUE, the electricity price."""

    prefill_power_frac: float = Field(default=1.0, ge=0, le=1.5, allow_inf_nan=False)
    """Share of board power drawn while prefilling (compute-bound: the power limit)."""
    decode_power_frac: float = Field(default=0.43, ge=0, le=1.5, allow_inf_nan=False)
    """Share drawn while decoding (memory-bound; H200 decode 137–300 W of 700 W)."""
    idle_power_frac: float = Field(default=0.10, ge=0, le=1.5, allow_inf_nan=False)
    """Share drawn while allocated and idle (idle H100: 69–72 W of 700 W)."""
    pue: float = Field(default=1.0, ge=1, le=5, allow_inf_nan=False)
    """Facility power usage effectiveness (1: the GPU boards alone)."""
    usd_per_kwh: float | None = Field(default=None, ge=0, le=100, allow_inf_nan=False)
    """Electricity price, $/kWh: splits $/hour into GPU rent and energy. None: kWh only."""

    def model(self) -> PowerModel:
        return PowerModel(self.prefill_power_frac, self.decode_power_frac,
                          self.idle_power_frac, self.pue, self.usd_per_kwh)


class PlanFile(InputModel):
    name: str = "plan"
    """Label of the plan in its report and figure."""
    model: str
    """The model of every candidate: a catalog id or a path to a ``config.json``."""
    weights: str = "bf16"
    """Weight format of every candidate when ``search.weights`` is not given."""
    kv_dtype: str = "bf16"
    """KV-cache format of every candidate when ``search.kv_dtypes`` is not given."""
    unquantized: str | None = None
    """Parts every candidate's checkpoint keeps in BF16 (the scenario key of that name:
    ``attention,router,…`` or ``checkpoint``, resolved per weight format). None: none."""
    workload: str | Workload
    """The workload at its offered load: a path to a workload file, relative to the plan file, or
    the workload inline."""
    slo: SLOConfig = SLOConfig()
    """The SLO a candidate must meet in every seed (``share`` of the requests within the bounds) to
    be feasible."""
    search: SearchSpace = SearchSpace()
    """The configurations to try: the product of its lists within ``max_gpus``."""
    prices: dict[str, float] = Field(default_factory=dict)
    """$/GPU-hour by GPU id, over the price catalog."""
    seeds: int = Field(default=3, ge=1, le=16)
    """A configuration is feasible only when every seed meets the SLO."""
    calibration: str = "auto"
    """As in a scenario: ``auto`` (each candidate's backend profile), ``roofline``, a profile."""
    mfu: float | None = Field(default=None, gt=0, le=1)
    """``calibration: roofline`` only: MFU of every candidate. None: 1 (the roofline ceiling)."""
    mbu: float | None = Field(default=None, gt=0, le=1)
    """``calibration: roofline`` only: MBU of every candidate. None: 1 (the roofline ceiling)."""
    step_overhead_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Roofline knobs (with ``calibration: roofline`` only), passed to every candidate."""
    router: Literal["round_robin", "least_outstanding", "least_kv"] = "least_outstanding"
    """Router in front of every candidate's replicas (``least_outstanding`` by default, where a
    scenario's is ``round_robin``)."""
    energy: EnergyConfig = EnergyConfig()
    """Power shares, PUE and electricity price of every candidate's energy."""
    frontend: FrontendConfig | None = None
    """Every candidate replica's frontend queue (a scenario's ``engine.frontend``: it caps a
    replica at 1 / its work per request); None: none (disaggregated candidates take none)."""
    async_scheduling: bool = False
    """Every candidate's engine plans a step while the previous one runs (a scenario's
    ``engine.async_scheduling``)."""

    @model_validator(mode="after")
    def _prices(self) -> "PlanFile":
        for gpu, usd in self.prices.items():
            if not (0 <= usd < float("inf")):
                raise ValueError(f"prices.{gpu}: must be a finite number >= 0")
        return self


@dataclass(frozen=True)
class Candidate:
    """One deployment: ``replicas`` engines of ``tensor_parallel`` GPUs each."""

    gpu: str
    tensor_parallel: int
    replicas: int
    weights: str
    kv_dtype: str
    max_num_seqs: int
    max_num_batched_tokens: int
    backend: str
    expert_parallel: bool = False
    prefill_replicas: int = 0
    """Disaggregated: prefill replicas (``replicas`` is then the decode pool's); 0 aggregated."""
    data_parallel: int = 1
    """Data-parallel attention groups per replica (of ``tensor_parallel`` GPUs each)."""
    two_batch_overlap: bool = False
    speculative: tuple[int, tuple[float, ...], float | None] | None = None
    """(draft tokens, acceptance by position, draft cost or None) of ``engine.speculative``;
    None: off."""
    prefill_layout: str = "tp"
    """Disaggregated: the prefill replicas' layout (:attr:`SearchSpace.prefill_layouts`)."""
    pipeline_parallel: int = 1
    """Pipeline stages per replica (aggregated tensor-parallel replicas only)."""

    @property
    def parallel(self) -> ParallelLayout:
        """One replica's :class:`ParallelLayout`."""
        ranks = self.tensor_parallel * self.data_parallel
        return ParallelLayout(self.tensor_parallel, self.data_parallel,
                              ranks if self.expert_parallel else 1, self.two_batch_overlap)

    @property
    def gpus(self) -> int:
        return (self.parallel.ranks * self.pipeline_parallel
                * (self.replicas + self.prefill_replicas))

    def prefill_pool(self) -> "Candidate":
        """A disaggregated deployment's prefill replicas as a candidate of their own, over a
        decode replica's GPUs (what :class:`DisaggConfig` runs them as): tensor parallelism
        over all of them, or with ``prefill_layout`` ``dep`` data-parallel attention on each
        with the experts spread over them (``dep tbo``: and two-batch overlap)."""
        ranks, dep = self.parallel.ranks, self.prefill_layout != "tp"
        return replace(self, tensor_parallel=1 if dep else ranks,
                       data_parallel=ranks if dep else 1, expert_parallel=dep,
                       two_batch_overlap=self.prefill_layout == "dep tbo",
                       replicas=self.prefill_replicas, prefill_replicas=0,
                       prefill_layout="tp")

    @property
    def layout(self) -> str:
        """``4×`` (aggregated replicas) or ``1P3D×`` (disaggregated pools)."""
        if self.prefill_replicas:
            return f"{self.prefill_replicas}P{self.replicas}D×"
        return f"{self.replicas}×"

    @property
    def parallel_label(self) -> str:
        """A replica's layout as the plan's table prints it: ``tp4``, ``tp4 pp2``,
        ``dp8 ep8 spec1`` (:meth:`ParallelLayout.label`, the pipeline stages, MTP drafts)."""
        pp = f" pp{self.pipeline_parallel}" if self.pipeline_parallel > 1 else ""
        spec = f" spec{self.speculative[0]}" if self.speculative else ""
        return f"{self.parallel.label()}{pp}{spec}"

    def label(self) -> str:
        prefill = (f"prefill {self.prefill_pool().parallel.label()} / decode "
                   if self.prefill_replicas and self.prefill_layout != "tp" else "")
        return (f"{self.layout}{self.gpu} {prefill}{self.parallel_label} "
                f"{self.weights} {self.backend} seqs {self.max_num_seqs} budget "
                f"{self.max_num_batched_tokens}")

    def scenario(self, plan: PlanFile, workload: Workload) -> Scenario:
        """The candidate as a simulator scenario."""
        pool = self.prefill_pool().parallel
        disagg = DisaggConfig(prefill_replicas=self.prefill_replicas,
                              decode_replicas=self.replicas,
                              prefill_data_parallel=pool.attention_dp,
                              prefill_expert_parallel=pool.expert_parallel > 1,
                              prefill_two_batch_overlap=pool.two_batch_overlap
                              ) if self.prefill_replicas else None
        engine = EngineConfig(max_num_seqs=self.max_num_seqs,
                              max_num_batched_tokens=self.max_num_batched_tokens,
                              tensor_parallel=self.tensor_parallel,
                              pipeline_parallel=self.pipeline_parallel,
                              replicas=1 if disagg else self.replicas, backend=self.backend,
                              router=plan.router, expert_parallel=self.expert_parallel,
                              data_parallel=self.data_parallel,
                              two_batch_overlap=self.two_batch_overlap, disaggregated=disagg,
                              speculative=None if self.speculative is None else
                              SpeculativeConfig(draft_tokens=self.speculative[0],
                                                acceptance=list(self.speculative[1]),
                                                draft_cost=self.speculative[2]),
                              frontend=None if disagg else plan.frontend,
                              async_scheduling=plan.async_scheduling)
        knobs = {k: getattr(plan, k) for k in ("mfu", "mbu", "step_overhead_ms")
                 if getattr(plan, k) is not None}
        return Scenario(name=self.label(), workload=workload, model=plan.model, gpu=self.gpu,
                        weights=self.weights, kv_dtype=self.kv_dtype,
                        unquantized=plan.unquantized, calibration=plan.calibration,
                        engine=engine, slo=plan.slo, **knobs)


def candidates(plan: PlanFile) -> list[Candidate]:
    """Every point of the search space within ``max_gpus``, in a fixed order."""
    from napkin.catalog import load_model

    s = plan.search
    moe = load_model(plan.model).is_moe
    out = []
    specs = [None if x is None else (x.draft_tokens, x.rates, x.draft_cost)
             for x in s.speculative]
    for gpu, tp, pp, dp, reps, w, kv, seqs, budget, backend, ep, tbo, spec in itertools.product(
            s.gpus, s.tensor_parallel, s.pipeline_parallel, s.data_parallel, s.replicas,
            s.weights or [plan.weights], s.kv_dtypes or [plan.kv_dtype], s.max_num_seqs,
            s.max_num_batched_tokens, s.backends, s.expert_parallel, s.two_batch_overlap,
            specs):
        if not _expressible(moe, tp, dp, ep, tbo) or (pp > 1 and (dp > 1 or ep)):
            continue
        if s.max_gpus is None or tp * pp * dp * reps <= s.max_gpus:
            out.append(Candidate(gpu, tp, reps, w, kv, seqs, budget, backend, ep,
                                 data_parallel=dp, two_batch_overlap=tbo, speculative=spec,
                                 pipeline_parallel=pp))
    for gpu, tp, dp, pd, w, kv, seqs, budget, backend, ep, pl in itertools.product(
            s.gpus, s.tensor_parallel, s.data_parallel, s.disaggregated,
            s.weights or [plan.weights], s.kv_dtypes or [plan.kv_dtype], s.max_num_seqs,
            s.max_num_batched_tokens, s.backends, s.expert_parallel, s.prefill_layouts):
        x, y = xpyd(pd)
        if not _expressible(moe, tp, dp, ep, False) or (
                pl != "tp" and not _expressible(moe, 1, tp * dp, True, pl == "dep tbo")):
            continue
        if s.max_gpus is None or tp * dp * (x + y) <= s.max_gpus:
            out.append(Candidate(gpu, tp, y, w, kv, seqs, budget, backend, ep, x,
                                 data_parallel=dp, prefill_layout=pl))
    return out


def _expressible(moe: bool, tp: int, dp: int, ep: bool, tbo: bool) -> bool:
    """Whether a layout is worth a candidate: data-parallel attention, expert parallelism and
    two-batch overlap are for MoE models; EP needs several GPUs, TBO data-parallel
    attention."""
    if not moe:
        return dp == 1 and not ep and not tbo
    return (not ep or tp * dp > 1) and (not tbo or dp > 1)


def load_plan(path: str | Path) -> tuple[PlanFile, Path]:
    data = read_yaml(path, "plan")
    if not isinstance(data, dict):
        raise NapkinError(f"{path}: a plan must be a YAML mapping")
    try:
        return PlanFile.model_validate(data), Path(path).resolve().parent
    except ValidationError as e:
        raise NapkinError(f"{path}: {validation_message(e, data)}") from None
