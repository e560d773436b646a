"""A step's basis vector and the fitted step-time model over it.

:class:`StepBasis` computes the basis terms (:mod:`napkin.calibration.terms`: what each
measures) of a step on one device of a tensor-parallel group, :class:`LayoutBasis` of a step in
a :class:`~napkin.specs.layout.ParallelLayout`; :class:`StepModel` holds a fit's coefficients,
``t_step = Σ_k c_k · x_k``, and :class:`FittedTimer` and :func:`layout_timer` time the
simulator's steps under it.

The FLOPs and bytes come from the accounting layer
(:meth:`napkin.accounting.linear.LinearCost.parts`); nothing here counts them again.
"""

from dataclasses import dataclass, replace
from functools import cached_property

from napkin.accounting.collectives import parallel_collectives
from napkin.accounting.elementwise import elementwise_bytes_per_token
from napkin.accounting.forward import Precision
from napkin.accounting.ranks import Parts, RankCost
from napkin.calibration.terms import FLOOR, TERMS, UNFITTED, resolve_tied
from napkin.errors import NapkinError, require
from napkin.specs.dtypes import SIXTEEN_BIT
from napkin.specs.hardware import Accelerator
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec
from napkin.timing.comm import GPUS_PER_NODE, INTERNODE_BYTES_PER_S, LayoutComm
from napkin.timing.frontend import Frontend
from napkin.timing.layout import DeviceTimer, LayoutTimer
from napkin.timing.series import LineSeries, StepSeries

ZERO: Parts = (0.0, 0.0, 0.0, 0.0, 0.0)
PAIR_BYTES = 2
"""Bytes per hidden element a routed (token, expert) pair moves (BF16 activations)."""


def pairs_per_token(model: ModelSpec) -> int:
    """Routed (token, expert) pairs of one token over all MoE layers: Σ top-k."""
    return sum(b.experts.num_active for b in model.blocks if b.experts is not None)


@dataclass(frozen=True)
class StepBasis:
    """The basis terms of steps of one model on one GPU type at a tensor-parallel size.

    ``link_bytes_per_s`` is the per-direction bandwidth a ring all-reduce sees.
    """

    layers: int
    moe_layers: int
    """Layers with routed experts (each rank runs every one, under TP or EP)."""
    per_dense_flop: float
    low_precision: bool
    """The matmuls run in a sub-16-bit format: their FLOPs go to ``dense_low``."""
    weight_only: bool
    """The matmuls unpack weight-only (W4A16) weights to 16 bits: their FLOPs go to
    ``dense_w4a16``."""
    per_attention_flop: float
    """1 / (tp · BF16 peak): attention and the matmuls of parts kept in BF16 run at it."""
    per_byte: float
    per_kv_byte: float
    """1 / (devices the KV cache is split over · bandwidth): a KV head replicated over TP
    ranks is read on each (MLA's latent cache on every device)."""
    allreduces: int
    allreduce_s_per_token: float
    """Ideal link time of the all-reduce bytes of one token (s)."""
    norms_s_per_token: float
    """Ideal memory time of one token's replicated elementwise bytes on a device (norms and
    residual adds: :func:`~napkin.accounting.elementwise.elementwise_bytes_per_token`)."""
    elementwise_s_per_token: float
    """Ideal memory time of one token's sharded elementwise bytes on a device (the MLP
    activation and rotary at the attention's tensor-parallel size)."""
    pair_s_per_token: float = 0.0
    """Ideal memory time of one token's routed pairs' hidden vectors on a device
    (:func:`pairs_per_token` × hidden × :data:`PAIR_BYTES` / bandwidth, not divided by TP);
    0 where a :class:`~napkin.timing.layout.LayoutTimer` counts the busiest rank's pairs itself."""
    time_scale: float = 1.0
    """What the seconds terms' ``x_k`` are multiplied by on this GPU
    (:attr:`~napkin.specs.hardware.Accelerator.fixed_time_scale`)."""
    extra_ranks: int = 0
    """tp − 1: a ring all-reduce's latency-bound steps beyond a one-shot's (``allreduce_hop``
    per all-reduce)."""
    mla_layers: int = 0
    """Layers with MLA attention (``mla_layer``)."""
    dsa_layers: int = 0
    """Layers with DSA attention (``dsa_layer``)."""
    routed: RankCost | None = None
    """The tensor-parallel group's routed experts (MoE models, when built with a precision):
    their FLOPs and expert bytes of a step's tokens go to the ``expert*`` terms instead of the
    dense ones; None where a :class:`~napkin.timing.layout.LayoutTimer` times the busiest rank's."""

    @classmethod
    def of(cls, model: ModelSpec, acc: Accelerator, compute: str, tensor_parallel: int,
           link_bytes_per_s: float, weight_only: bool = False,
           precision: Precision | None = None) -> "StepBasis":
        """``weight_only``: the weights are a weight-only format
        (:attr:`~napkin.specs.dtypes.WeightFormat.weight_only`) computed at ``compute``;
        ``precision`` (the same formats): given, a MoE model's routed experts get their own
        terms (:attr:`routed`)."""
        tp = tensor_parallel
        require(tp >= 1, f"tensor_parallel: must be >= 1, got {tp}")
        require(link_bytes_per_s > 0, "allreduce_gbs: the link bandwidth must be > 0")
        attention = "bf16" if "bf16" in acc.dense_flops_per_s else compute
        count, per_token = parallel_collectives(model, tp)
        norms, elementwise = elementwise_bytes_per_token(model, tp)
        return cls(
            layers=model.num_layers,
            moe_layers=sum(1 for b in model.blocks if b.experts is not None),
            per_dense_flop=1.0 / (tp * acc.peak_flops_per_s(compute)),
            low_precision=compute not in SIXTEEN_BIT,
            weight_only=weight_only and compute in SIXTEEN_BIT,
            per_attention_flop=1.0 / (tp * acc.peak_flops_per_s(attention)),
            per_byte=1.0 / (tp * acc.mem_bytes_per_s),
            per_kv_byte=1.0 / (model.kv_devices(tp) * acc.mem_bytes_per_s),
            allreduces=count,
            allreduce_s_per_token=per_token / link_bytes_per_s,
            norms_s_per_token=norms / acc.mem_bytes_per_s,
            elementwise_s_per_token=elementwise / acc.mem_bytes_per_s,
            pair_s_per_token=(pairs_per_token(model) * model.hidden_size * PAIR_BYTES
                              / acc.mem_bytes_per_s),
            time_scale=acc.fixed_time_scale,
            extra_ranks=tp - 1,
            mla_layers=sum(1 for b in model.blocks if b.attention.kind == "mla"),
            dsa_layers=sum(1 for b in model.blocks if b.attention.kind == "dsa"),
            routed=(RankCost.of(model, precision, ParallelLayout(tp))
                    if precision is not None and model.is_moe else None),
        )

    def at_attention_tp(self, model: ModelSpec, attention_tp: int) -> "StepBasis":
        """This (one device's) basis with its elementwise bytes a token at a layout's attention
        tensor-parallel size: a layout's rank runs its own tokens' norms whole and their
        activations and rotary over the attention's ranks."""
        return replace(self, elementwise_s_per_token=(
            elementwise_bytes_per_token(model, attention_tp)[1] * self.per_byte))

    @property
    def expert_slots(self) -> tuple[int, int, int, int]:
        """Indices in :data:`TERMS` of (the dense matmul term of this format, the routed
        experts' matmul term of this format, ``weights``, the routed experts' read term of
        this format: ``expert_weights``, or ``expert_weights_w4a16`` for weight-only 4-bit
        experts)."""
        fmt = "_low" if self.low_precision else "_w4a16" if self.weight_only else ""
        reads = "_w4a16" if self.weight_only else ""
        return (TERMS.index("dense" + fmt), TERMS.index("expert" + fmt),
                TERMS.index("weights"), TERMS.index("expert_weights" + reads))

    def split_routed(self, x: list[float], flops: float, weight_bytes: float) -> None:
        """Move ``flops`` routed-expert FLOPs and ``weight_bytes`` expert bytes (on this
        basis's device) out of the dense matmul and ``weights`` terms of ``x`` into the
        ``expert*`` ones (what is moved is at most what the terms hold)."""
        dense, expert, weights, expert_weights = self.expert_slots
        f = min(flops * self.per_dense_flop, x[dense])
        b = min(weight_bytes * self.per_byte, x[weights])
        x[dense] -= f
        x[expert] += f
        x[weights] -= b
        x[expert_weights] += b

    def terms(self, parts: Parts, tokens: int, prefill: bool = False) -> tuple[float, ...]:
        """The basis vector of one step (its terms: :mod:`napkin.calibration.terms`); zeros for
        an empty step. ``prefill``: the step carries a prefill chunk."""
        if tokens == 0:
            return (0.0,) * len(TERMS)
        dense, attention, weights, kv, sixteen = parts
        matmul = dense * self.per_dense_flop
        sixteen_s = sixteen * self.per_attention_flop
        apart = self.low_precision or self.weight_only
        ts = self.time_scale
        x = [ts, ts * self.layers, ts * self.moe_layers, ts * tokens,
             ts * tokens * self.layers, tokens * self.norms_s_per_token,
             tokens * self.elementwise_s_per_token,
             sixteen_s if apart else matmul + sixteen_s,
             matmul if self.low_precision else 0.0,
             matmul if self.weight_only else 0.0,
             attention * self.per_attention_flop, weights * self.per_byte,
             kv * self.per_kv_byte, ts * self.allreduces,
             tokens * self.allreduce_s_per_token, 0.0, 0.0,
             tokens * self.pair_s_per_token, 0.0, 0.0, 0.0, 0.0, 0.0,
             ts * self.layers if prefill else 0.0,
             ts * self.allreduces * self.extra_ranks, 0.0, ts * self.mla_layers,
             ts * self.dsa_layers]
        if self.routed is not None:
            self.split_routed(x, *self.routed.routed(tokens)[:2])
        return tuple(x)


@dataclass(frozen=True)
class StepModel:
    """Fitted coefficients (one per :data:`TERMS` entry) and the latency a request spends
    outside the engine before its first step: ``request_s + request_token_s × prompt tokens``
    (the frontend: HTTP, tokenization, input processing)."""

    coefficients: tuple[float, ...]
    request_s: float = 0.0
    request_token_s: float = 0.0
    """Seconds per prompt token outside the engine (tokenizing and handing the prompt over):
    not divided by TP, and not a step's time — it delays only its own request."""
    frontend: Frontend | None = None
    """The engine's frontend as a queue (:mod:`napkin.timing.frontend`): work that, unlike
    ``request_s``, waits for the jobs ahead of it; None: none."""
    architecture_scales: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    """Per GPU architecture (:attr:`~napkin.specs.hardware.Accelerator.architecture`), factors
    on named coefficients for a step on a GPU of it (:meth:`on`): what the engine's kernels
    there reach of their datasheet rates against the GPUs the coefficients were fitted on
    (the routed experts' matmuls on Blackwell: :func:`napkin.calibration.moe_kernels.
    architecture_scales`); none: the coefficients hold on every GPU."""

    def __post_init__(self) -> None:
        require(len(self.coefficients) == len(TERMS),
                f"coefficients: need {len(TERMS)} ({', '.join(TERMS)})")
        for arch, scales in self.architecture_scales:
            for term, factor in scales:
                require(term in TERMS, f"architecture_scales.{arch}: unknown term {term!r}; "
                        f"allowed: {', '.join(TERMS)}")
                require(0 < factor < float("inf"),
                        f"architecture_scales.{arch}.{term}: must be finite and > 0")
        require(all(c >= 0 and c == c and c != float("inf") for c in self.coefficients),
                "coefficients: must be finite and >= 0")
        require(0 <= self.request_s < float("inf"), "request_s: must be finite and >= 0")
        require(0 <= self.request_token_s < float("inf"),
                "request_token_s: must be finite and >= 0")

    @classmethod
    def of(cls, values: dict[str, float], request_s: float = 0.0,
           request_token_s: float = 0.0) -> "StepModel":
        """From named coefficients; a missing term is 0, except a :data:`TIED` one, which is
        then its parent's coefficient (``dense_low`` and ``dense_w4a16`` the ``dense`` one: one
        matmul efficiency for every format; the routed experts' terms those of the dense
        layers), and the all-to-all pair, which is :data:`UNFITTED`."""
        unknown = set(values) - set(TERMS)
        require(not unknown, f"coefficients: unknown terms {sorted(unknown)}; allowed: "
                f"{', '.join(TERMS)}")
        values = resolve_tied({**UNFITTED, "dense": 0.0, **values})
        return cls(tuple(float(values.get(t, 0.0)) for t in TERMS), request_s, request_token_s)

    def as_dict(self) -> dict[str, float]:
        return dict(zip(TERMS, self.coefficients, strict=True))

    def on(self, architecture: str) -> "StepModel":
        """This model for a step on a GPU of ``architecture``: each coefficient the
        :attr:`architecture_scales` of that architecture name times its factor, the rest as
        they are; the model itself where it names none."""
        scales = dict(self.architecture_scales).get(architecture)
        return self.scaled(dict(scales)) if scales else self

    def scaled(self, factors: dict[str, float]) -> "StepModel":
        """This model with each named coefficient times its factor (dimensionless), no
        architecture's factors left to apply."""
        c = self.as_dict()
        for term, factor in factors.items():
            c[term] *= factor
        return replace(self, coefficients=tuple(c[t] for t in TERMS), architecture_scales=())

    def without_floor(self) -> "StepModel":
        """This model with no ``eager_layer`` floor (an engine whose prefill steps run as one
        compiled graph: :attr:`~napkin.serving.engine_spec.EngineSpec.eager_prefill`)."""
        c = list(self.coefficients)
        c[FLOOR] = 0.0
        return replace(self, coefficients=tuple(c))

    def time(self, terms: tuple[float, ...]) -> float:
        """One step's time from its basis vector, in seconds: ``max(Σ_{k ≠ floor} c_k·x_k,
        c_floor·x_floor)`` (the floor: ``eager_layer``, see :mod:`napkin.calibration.terms`)."""
        return sum(c * x for c, x in zip(self.coefficients, self.effective(terms), strict=True))

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]:
        """``terms`` with the losing side of the floor zeroed, so that the step's time is the
        plain sum ``Σ c_k·x_k`` of the result (what a fit records for a step)."""
        floor = self.coefficients[FLOOR] * terms[FLOOR]
        rest = sum(c * x for k, (c, x) in enumerate(zip(self.coefficients, terms, strict=True))
                   if k != FLOOR)
        if floor > rest:
            return tuple(x if k == FLOOR else 0.0 for k, x in enumerate(terms))
        return tuple(0.0 if k == FLOOR else x for k, x in enumerate(terms))


@dataclass(frozen=True)
class FittedTimer:
    """Step times of one engine under a :class:`StepModel` (the simulator's timer)."""

    basis: StepBasis
    model: StepModel

    @property
    def request_s(self) -> float:
        return self.model.request_s

    @property
    def request_token_s(self) -> float:
        return self.model.request_token_s

    @property
    def frontend(self) -> Frontend | None:
        return self.model.frontend

    @cached_property
    def rates(self) -> tuple[float, ...]:
        """The model time of a non-empty step as ``fixed + per_token·T + Σ rate_i·parts_i``:
        (fixed, per_token, per dense FLOP, per attention FLOP, per weight byte, per KV byte,
        per 16-bit dense FLOP).

        Read off :meth:`StepModel.time` of :meth:`StepBasis.terms` (both linear in the step's
        tokens and parts) at unit steps, so the formula stays in one place; the simulator then
        times a step with seven products instead of summing the basis vector."""
        basis = replace(self.basis, routed=None)
        base, two = basis.terms(ZERO, 1), basis.terms(ZERO, 2)
        def rate(x: tuple[float, ...]) -> float:  # the model time of x − base, term by term
            return self.model.time(tuple(a - b for a, b in zip(x, base, strict=True)))
        per_token = rate(two)
        units = [tuple(float(i == k) for i in range(len(ZERO))) for k in range(len(ZERO))]
        return (self.model.time(base) - per_token, per_token,
                *(rate(basis.terms(u, 1)) for u in units))

    @cached_property
    def routed_rates(self) -> tuple[float, float]:
        """Seconds per routed-expert FLOP and per expert byte on this timer's device beyond
        what :attr:`rates` charge them as dense work: ``(c_expert − c_dense) / (tp · peak)``
        and ``(c_expert_weights − c_weights) / (tp · bandwidth)`` (the ``expert*`` terms of the
        weights' format; 0 and 0 for a profile whose expert terms follow the dense ones)."""
        c, b = self.model.coefficients, self.basis
        dense, expert, weights, expert_weights = b.expert_slots
        return ((c[expert] - c[dense]) * b.per_dense_flop,
                (c[expert_weights] - c[weights]) * b.per_byte)

    def routed_s(self, flops: float, weight_bytes: float) -> float:
        """What routed-expert work of ``flops`` FLOPs and ``weight_bytes`` expert bytes adds to
        a step beyond its dense timing (:attr:`routed_rates`; negative where the routed kernels
        beat the dense ones)."""
        per_flop, per_byte = self.routed_rates
        return per_flop * flops + per_byte * weight_bytes

    @cached_property
    def times_routed(self) -> bool:
        """Whether a step's routed experts add to :attr:`rates`' time (a MoE basis with
        :attr:`StepBasis.routed` under a model whose expert terms differ from its dense
        ones)."""
        return self.basis.routed is not None and self.routed_rates != (0.0, 0.0)

    def _routed_step_s(self, tokens: int) -> float:
        """:meth:`routed_s` of a step of ``tokens`` tokens on the tensor-parallel group."""
        assert self.basis.routed is not None
        return self.routed_s(*self.basis.routed.routed(tokens)[:2])

    @cached_property
    def floor_s(self) -> float:
        """The least time of a step that carries a prefill chunk: the floor term of
        :meth:`StepBasis.terms` times its coefficient."""
        x = self.basis.terms(ZERO, 1, prefill=True)
        return self.model.coefficients[FLOOR] * x[FLOOR]

    def step_s(self, parts: Parts, tokens: int, prefill: bool = False,
               extra_s: float = 0.0) -> float:
        """Model time of one step (0 for an empty one), by :attr:`rates` and
        :attr:`floor_s` (``prefill``: the step carries a prefill chunk), ``extra_s`` added to
        the sum under the floor (a layout's communication, as the model's all-reduces are)."""
        if tokens == 0:
            return 0.0
        fixed, per_token, r0, r1, r2, r3, r4 = self.rates
        dense, attention, weights, kv, sixteen = parts
        t = (fixed + per_token * tokens + r0 * dense + r1 * attention + r2 * weights + r3 * kv
             + r4 * sixteen + extra_s)
        if self.times_routed:
            t += self._routed_step_s(tokens)
        return self.floor_s if prefill and self.floor_s > t else t

    def series(self, parts0: Parts, parts1: Parts | None, tokens: int,
               prefill: bool = False, extra_s: float = 0.0) -> StepSeries:
        """Steps j = 0, 1, … whose parts grow by ``parts1 − parts0`` per step (decode runs):
        ``t_j = a + j·d`` with a = model time of step 0 and d its increment per step (each
        ``extra_s`` longer, see :meth:`step_s`). A step with a prefill chunk (``prefill``) is
        a unit of its own: no ``parts1``."""
        if prefill and parts1 is not None:  # (not require(): one call fewer a decode run)
            raise NapkinError("series: a step with a prefill chunk is timed alone")
        a = self.step_s(parts0, tokens, prefill, extra_s)
        d = 0.0 if parts1 is None else self.step_s(parts1, tokens, False, extra_s) - a
        return LineSeries(a, d if d > 0.0 else 0.0, 0.0, 0.0, 0.0)

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]:
        """:meth:`StepModel.effective` of this timer's model."""
        return self.model.effective(terms)


def layout_timer(model: ModelSpec, precision: Precision, layout: ParallelLayout,
                 device: DeviceTimer, link_bytes_per_s: float, latency_s: float,
                 internode_bytes_per_s: float = INTERNODE_BYTES_PER_S,
                 gpus_per_node: int = GPUS_PER_NODE, engine: str | None = None) -> LayoutTimer:
    """A :class:`~napkin.timing.layout.LayoutTimer` around one rank's ``device`` timer (``engine``:
    whose two-batch-overlap schedule applies). Under a fitted
    model (a :class:`FittedTimer` at tensor parallel 1) the collectives take its fitted terms:
    ``allreduce`` seconds per all-reduce and ``allreduce_bytes`` × their ideal link time,
    ``alltoall`` seconds per dispatch or combine, ``alltoall_step`` seconds per step that runs
    them and ``alltoall_bytes`` × their ideal link and NIC time (the seconds at the GPU's
    :attr:`StepBasis.time_scale`, an all-reduce's with ``allreduce_hop`` per extra rank of the
    attention's group); the roofline's are the links' and ``latency_s``, no ``alltoall_step``."""
    nic_bytes_per_s, a2a_link_bytes_per_s = internode_bytes_per_s, link_bytes_per_s
    a2a_latency_s, a2a_step_s, routed_rates = latency_s, 0.0, (0.0, 0.0, 0.0)
    if isinstance(device, FittedTimer):
        c = device.model.as_dict()
        # the busiest rank's routed pairs and experts, not the device's tokens'
        # (LayoutTimer.routed_rates)
        device = replace(device, basis=replace(device.basis, pair_s_per_token=0.0,
                                               routed=None).at_attention_tp(
                                                   model, layout.attention_tp))
        routed_rates = (c["expert_pair"] * model.hidden_size * PAIR_BYTES * device.basis.per_byte,
                    *device.routed_rates)
        inf, ts = float("inf"), device.basis.time_scale
        scale = c["allreduce_bytes"]
        latency_s = ts * (c["allreduce"] + c["allreduce_hop"] * (layout.attention_tp - 1))
        link_bytes_per_s = link_bytes_per_s / scale if scale else inf
        scale, a2a_latency_s = c["alltoall_bytes"], ts * c["alltoall"]
        a2a_step_s = ts * c["alltoall_step"]
        a2a_link_bytes_per_s, nic_bytes_per_s = (a2a_link_bytes_per_s / scale,
                                                 nic_bytes_per_s / scale) if scale else (inf, inf)
    return LayoutTimer.of(model, precision, layout, device, link_bytes_per_s, latency_s,
                          nic_bytes_per_s, gpus_per_node, a2a_latency_s, a2a_link_bytes_per_s,
                          engine, routed_rates, a2a_step_s)


@dataclass(frozen=True)
class LayoutBasis:
    """The basis of a step in a :class:`ParallelLayout`, as :class:`LayoutTimer` times it: the
    busiest rank's parts (:meth:`RankCost.rank_parts`) through ``device`` (a basis at tensor
    parallel 1), its routed experts' FLOPs and bytes (:meth:`RankCost.routed`) moved to the
    ``expert*`` terms (:meth:`StepBasis.split_routed`), its collective slots holding the
    layout's — ``allreduce`` the attention all-reduces and ``allreduce_bytes`` their ideal
    link seconds, ``alltoall`` a dispatch and a combine per MoE layer, ``alltoall_step`` 1 in a
    step that runs them and ``alltoall_bytes`` their ideal link (or NIC) seconds (``comm`` at
    zero latency). Linear in the step's parts at
    a given token count, as fitting needs; a fitted model's :func:`layout_timer` gives exactly
    ``coefficients · terms`` (without two-batch overlap, whose max is not linear)."""

    device: StepBasis
    comm: LayoutComm
    """Zero latency and the roofline's links: its :meth:`LayoutComm.seconds` are link times."""
    pair_s: float
    """Ideal memory time of one routed pair's hidden vector (``expert_pair`` per pair of the
    busiest rank, :meth:`RankCost.rank_pairs`)."""

    @classmethod
    def of(cls, model: ModelSpec, acc: Accelerator, precision: Precision,
           layout: ParallelLayout, link_bytes_per_s: float,
           internode_bytes_per_s: float = INTERNODE_BYTES_PER_S,
           gpus_per_node: int = GPUS_PER_NODE) -> "LayoutBasis":
        require(not layout.two_batch_overlap,
                f"layout {layout.label()}: two-batch overlap is not a linear basis")
        device = replace(StepBasis.of(model, acc, precision.weights.compute, 1,
                                      link_bytes_per_s, precision.weights.weight_only),
                         pair_s_per_token=0.0).at_attention_tp(model, layout.attention_tp)
        return cls(device, LayoutComm.of(model, precision, layout, link_bytes_per_s, 0.0,
                                         internode_bytes_per_s, gpus_per_node),
                   model.hidden_size * PAIR_BYTES * device.per_byte)

    def terms(self, parts: Parts, tokens: int, prefill: bool = False) -> tuple[float, ...]:
        """The basis vector of one step (see :meth:`StepBasis.terms`)."""
        if tokens == 0:
            return (0.0,) * len(TERMS)
        comm = self.comm
        cost = comm.cost
        x = list(self.device.terms(cost.rank_parts(parts, tokens), cost.rank_tokens(tokens),
                                   prefill))
        allreduce_s, a2a_s = comm.seconds(tokens)
        ts = self.device.time_scale
        x[TERMS.index("allreduce")] = ts * comm.allreduces
        x[TERMS.index("allreduce_hop")] = ts * comm.allreduces * (comm.cost.layout.attention_tp - 1)
        x[TERMS.index("allreduce_bytes")] = allreduce_s
        x[TERMS.index("alltoall")] = ts * comm.alltoalls(tokens)
        x[TERMS.index("alltoall_bytes")] = a2a_s
        x[TERMS.index("alltoall_step")] = ts if comm.alltoalls(tokens) else 0.0
        x[TERMS.index("expert_pair")] = cost.rank_pairs(tokens) * self.pair_s
        if cost.groups:
            self.device.split_routed(x, *cost.routed(tokens)[2:])
        return tuple(x)
