"""The fitted step-time model: roofline basis terms times non-negative coefficients.

One engine step (a forward over the batch the scheduler built) costs

    t_step = Σ_k c_k · x_k(step)

where each basis term ``x_k`` is a physical quantity of the step on one device of the
tensor-parallel group, already divided by the GPU's spec, so the fitted coefficients are
dimensionless multiples of the ideal time or seconds per event:

=================  =========================================================  ================
term               x_k (per device; T = new tokens in the step)               coefficient unit
=================  =========================================================  ================
``step``           1                                                          s per step
``layer``          decoder layers                                             s per layer
``moe_layer``      decoder layers with routed experts (MoE)                   s per MoE layer
``token``          T                                                          s per token
``token_layer``    T · decoder layers (whole on every rank whatever the TP)   s per token-layer
``norms``          T · replicated elementwise bytes of a token (norms and     × ideal time
                   residual adds, whole on every rank) / memory bandwidth
                   (:func:`~napkin.accounting.elementwise.
                   elementwise_bytes_per_token`)
``elementwise``    T · sharded elementwise bytes of a token on the rank (the  × ideal time
                   MLP activation and rotary, divided by tp) / memory
                   bandwidth
``dense``          matmul FLOPs / (tp · dense peak of the weight format),     × ideal time
                   16-bit compute (BF16, FP16); for sub-16-bit formats the
                   matmuls of parts kept in BF16 / (tp · BF16 peak)
``dense_low``      matmul FLOPs / (tp · peak of the format) for sub-16-bit    × ideal time
                   compute (FP8, INT8, FP4); 0 otherwise
``dense_w4a16``    matmul FLOPs / (tp · BF16 peak) for weight-only formats    × ideal time
                   (W4A16: INT4, MXFP4 on a GPU without an FP4 rate); 0
                   otherwise
``attention``      query–key/value FLOPs / (tp · BF16 dense peak)             × ideal time
``weights``        weight bytes read / (tp · memory bandwidth)                × ideal time
``kv``             KV bytes read and written / (d · memory bandwidth), d the  × ideal time
                   devices the KV is split over (``ModelSpec.kv_devices``)
``allreduce``      all-reduces in the step: 2 per layer when tp > 1           s per all-reduce
``allreduce_bytes`` ring all-reduce bytes per device / link bandwidth          × ideal time
``alltoall``       all-to-alls in a layout's step (data-parallel attention):  s per all-to-all
                   a dispatch and a combine per MoE layer
``alltoall_bytes`` the busiest rank's dispatch and combine bytes / link (NIC   × ideal time
                   across nodes)
``expert_pair``    routed (token, expert) pairs the device permutes × hidden  × ideal time
                   × 2 B / memory bandwidth (all of the step's T·k pairs a
                   MoE layer under TP: each rank permutes every hidden
                   vector; the busiest rank's under expert parallelism)
``expert``,        the routed experts' share of the matmul FLOPs (MoE         × ideal time
``expert_low``,    models), taken out of ``dense`` / ``dense_low`` /
``expert_w4a16``   ``dense_w4a16``: / (tp · peak of the format); the busiest
                   rank's in a layout
``expert_weights`` the routed experts' bytes read (the experts the step's      × ideal time
                   tokens touch), taken out of ``weights``: / (tp · memory
                   bandwidth); the busiest rank's in a layout
``eager_layer``    decoder layers, in a step that carries a prefill chunk;    s per layer
                   0 in a decode-only step
``allreduce_hop``  all-reduces × (tp − 1): a ring all-reduce (NCCL's) takes   s per all-reduce
                   2(tp − 1) latency-bound steps                              and extra rank
=================  =========================================================  ================

Every term in seconds (``step``, ``layer``, ``moe_layer``, ``token``, ``token_layer``,
``allreduce``, ``alltoall``, ``eager_layer``, ``allreduce_hop``) is a fixed time — kernel
launches, small kernels, a collective's latency — and is read at the reference GPU's clock: its
``x_k`` is multiplied by :attr:`~napkin.specs.hardware.Accelerator.fixed_time_scale` (the H100
SXM's 1,980 MHz SM clock / this GPU's; 1 where the catalog has no clock). splitwise-sim's
Llama-2-70B decode times on DGX-A100 and DGX-H100 (a 2023 vLLM, no CUDA graphs, NCCL
all-reduces) decompose, at TP 2, 4 and 8, into a fixed time a step of 14.5 ms (H100) and 21.3
ms (A100), 1.47×, and a time per all-reduce and extra rank of 9.4 and 13.7 µs, 1.45×, beside
the weights' read; the clocks' ratio is 1.40. Fitted on one GPU and held out on the other, the
``vllm-0.2`` profile reads 9.6 % / 2.4 % TTFT / TPOT (``napkin validate splitwise --by gpu``);
without the scale (and a time per all-reduce) about 21 % / 18 % (``benchmarks/fit_profiles.py``,
``V02_TERMS``).

``allreduce_hop`` is what a ring all-reduce costs beyond ``allreduce`` as the group grows:
the engines' own one-shot all-reduce kernels for small messages (vLLM's custom all-reduce
since 0.3, TensorRT-LLM's) take about the same time at any TP, NCCL's ring 2(tp − 1) steps. On
the 2023 vLLM's decode the time a step beyond the weights grows from TP 2 to 4 to 8 as
1 : 3 : 7 extra ranks (H100: 16, 19, 25 ms over 160 all-reduces), which a time per all-reduce
alone cannot follow (held out by TP 15.0 % TPOT without the term, 5.8 % with).

and a request spends ``request_s`` outside the engine (HTTP, tokenization, scheduling) before
its first step. A dense coefficient of 2 is an MFU of 0.5; a weights coefficient of 1.25 is an
MBU of 0.8. Low-precision matmuls get their own efficiency (``dense_low``) because they reach a
smaller share of their datasheet peak than 16-bit ones: on the H100 TensorRT-LLM rows one dense
coefficient for both put Llama-3.1-8B BF16 decode 5 % slow and Qwen3-32B FP8 decode 9 % fast
(training median |error| of TPOT 7.5 %); with two, 4.9 %, and the FP8 coefficient settles
near 2 (MFU 0.5 of the FP8 peak) whatever the BF16 one does (1.1–1.4). A profile without
``dense_low`` (fitted before it existed, or on 16-bit rows only) uses its ``dense`` coefficient
for both.

Weight-only formats (``dense_w4a16``) get a third: their kernels unpack each 4-bit weight tile
to BF16 in registers before the tensor cores, which costs nothing while a step is bound by the
weights' bytes and a large share of the rate once it is bound by the matmuls. gpt-oss's MXFP4
experts run so on Hopper (TensorRT-LLM's TRITON MoE backend and vLLM's, BF16 activations): at the
dense BF16 coefficient napkin read vLLM's H100 gpt-oss-120b TTFT 16 % short (TPOT within 5 %)
and TensorRT-LLM's H100 runs 54 % short in TPOT, 70 % in TTFT. A profile without the term uses its
``dense`` coefficient for these matmuls.

The all-to-alls of expert parallelism behind data-parallel attention (:class:`LayoutBasis`) have
their own pair (``alltoall``, ``alltoall_bytes``). A profile that fits the all-reduces' pair
times them alike (:data:`TIED`); one that leaves the all-reduces out — vLLM's, whose per-layer
time carries its all-reduces' latency and whose matmul coefficients their bytes, on rows that
cannot tell them apart — times them at the link's own figures (:data:`UNFITTED`: 10 µs and the
ideal link time), which the dense rows it was fitted on hold no share of: before, it charged
them nothing, and the MiniMax-M2.5 H100 rows of vLLM over attention DP 4 and TP 4 × EP 4
(InferenceMAX, not fitted) read TPOT 10.2 % (bias −8.6 %) short, 3.7 % with 10 µs.

``expert_pair`` is the routed-expert block's traffic per (token, expert) pair that its
matmuls do not count: gathering each token's hidden vector into its experts' groups, the
activation between the expert matmuls, scattering and summing the k outputs back (every MoE
kernel of the three engines: permute, grouped GEMMs, finalize); fine-grained experts (many,
small) pay most. Serving rows barely tell it apart from ``token``. The shipped profiles keep
it at 0: fitted on the engines' own H100 MoE kernel timings at the dense coefficients (5–8) and
held in the serving refits it made their hold-out TTFT worse (TensorRT-LLM 12.7 → 13.0 %, vLLM
8.9 → 10.0 %); the expert terms below now carry what it did on the kernels.

The routed experts have terms of their own (``expert``, ``expert_low``, ``expert_w4a16``,
``expert_weights``) because their grouped GEMMs do not run at the dense layers' efficiency:
each rank's tokens split into many small matrices, block-scaled FP8 rescales per tile, W4A16
kernels unpack per expert. On the engines' own H100 timings of one MoE layer
(:mod:`napkin.calibration.moe_kernels`, 12,045 rows of TensorRT-LLM, vLLM and SGLang) a
profile that timed them as dense work read the layer 29–35 % short at the median, and the
error grew with the tokens (FP8 block-scaled at ≥ 4,096 tokens: −43 % to −57 %); fitted there,
the layer's median miss held out by model is 12–14 %. Serving rows hold too few MoE steps to
set them, so the shipped profiles hold them at their kernel fit; a profile without them (fitted
before they existed) times the routed experts as its dense terms of the format (:data:`TIED`).
The simulator's timer charges them as dense work plus ``(c_expert − c_dense)`` times their
ideal time (:attr:`FittedTimer.routed_rates`), which is the same sum.

``norms`` and ``elementwise`` time the kernels between the matmuls, by the bytes they move
(:mod:`napkin.accounting.elementwise`): norms and residual adds run on the whole hidden vector
on every tensor-parallel rank (``norms``, unchanged by TP), the MLP's activation and rotary on
the rank's ``1/tp`` of the intermediate and the heads (``elementwise``). Serving rows cannot set
them apart from the per-token and per-layer terms; fitted on per-operator timings across TP 1–8
(:mod:`napkin.calibration.elementwise_kernels`: about twice the ideal time each; a layer's
kernels within 3 % held out by model, 11 % by GPU) they are a fit's to hold
(``benchmarks/fit_profiles.py --elementwise held``). No shipped profile holds them: vLLM's,
whose rows ask for about 15 µs a token beyond the matmuls at TP 2–8 and 32 B–120 B models, keeps
``token_layer`` (0.23 µs a token and layer, whole on every rank): held out by TP size it reads
10.1 % / 4.8 % TTFT / TPOT where the best split set (the held kernels, a host time per token and
the all-reduces' bytes) read 13.4 % / 4.5 % (nine term sets screened,
``benchmarks/fit_profiles.py``).

``moe_layer`` is the routed-expert block's fixed time in a step (router, top-k, token
permutation, the grouped GEMMs' launches and tails, the finalize), whatever its bytes: on
TensorRT-LLM's Qwen3-235B-A22B H100 rows a dense-fitted profile put the few-client TPOT 15–29 %
fast (11.5 ms measured, 8.2 ms predicted at TP 8 and 4 clients); fitted, 15 µs per MoE layer,
which fits without MoE rows keep (:data:`napkin.validation.fit.START`), while those rows'
expert parallelism was timed as TP. Timed in their layout (the busiest expert rank's load and
reads: :class:`LayoutBasis`), TensorRT-LLM's refit puts it at 0.

Because every term is normalized by the GPU's own datasheet figures, coefficients fitted on
one GPU give a physically sensible prediction on another (flagged as extrapolation
by the profile's domain).

``eager_layer`` is not added but a floor: a step is timed ``max(Σ_{k ≠ eager_layer} c_k·x_k,
c_eager_layer·x_eager_layer)``. An engine that replays decode-only steps as CUDA graphs but runs a
step with a prefill chunk eagerly (TensorRT-LLM's PyTorch backend captures generation-only
batches only) spends host time launching every layer's kernels for such a step; its overlap
scheduler hides that behind the GPU's work, so the step takes the longer of the two. On the H100
TensorRT-LLM rows the floor shows where the GPU's work is small (TP 4–8, 1,024-token prompts,
64–128 clients): the mean TPOT stops falling from TP 4 to TP 8 and grows with the share of
steps that carry a new prompt (Qwen3-32B at 128 clients: 40.5, 25.6, 19.8 ms for 128, 256, 512
output tokens), at about the same time per layer for Llama-3.1-8B (32 layers) and Qwen3-32B (64),
and it caps the request rate (≈ 35 requests/s for Llama-3.1-8B on TP 4 and 8). With the
coefficient at 0 (a profile fitted without it) the step time is the sum alone.

The FLOPs and bytes come from the accounting layer
(:meth:`napkin.accounting.linear.LinearCost.parts`); nothing here counts them again.
"""

from dataclasses import dataclass, replace
from functools import cached_property

from napkin.accounting.collectives import parallel_collectives
from napkin.accounting.elementwise import elementwise_bytes_per_token
from napkin.accounting.forward import Precision
from napkin.accounting.ranks import Parts, RankCost
from napkin.errors import NapkinError, require
from napkin.specs.dtypes import SIXTEEN_BIT
from napkin.specs.hardware import Accelerator
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec
from napkin.timing import (
    GPUS_PER_NODE,
    INTERNODE_BYTES_PER_S,
    DeviceTimer,
    LayoutComm,
    LayoutTimer,
    LineSeries,
    StepSeries,
)

TERMS: tuple[str, ...] = ("step", "layer", "moe_layer", "token", "token_layer", "norms",
                          "elementwise", "dense",
                          "dense_low", "dense_w4a16", "attention", "weights", "kv", "allreduce",
                          "allreduce_bytes", "alltoall", "alltoall_bytes", "expert_pair",
                          "expert", "expert_low", "expert_w4a16", "expert_weights",
                          "eager_layer", "allreduce_hop")
"""Basis terms of a step, in the order of :meth:`StepBasis.of` and ``coefficients``."""
TIED: dict[str, str] = {"expert": "dense", "expert_low": "dense_low",
                        "expert_w4a16": "dense_w4a16", "expert_weights": "weights",
                        "dense_low": "dense", "dense_w4a16": "dense", "alltoall": "allreduce",
                        "alltoall_bytes": "allreduce_bytes"}
"""Terms that take another's coefficient where a fit has none of their own (left out, or no
row has their work) but fits the other: the routed experts' matmuls and reads take those of
the dense layers of their format, matmuls of other weight formats take ``dense``'s,
all-to-alls the all-reduces'. A child comes before its parent (``expert_low`` →
``dense_low`` → ``dense``), so that folding children into parents in this order and reading
parents back in the reverse one resolves chains."""


def resolve_tied(values: dict[str, float]) -> dict[str, float]:
    """``values`` with each :data:`TIED` term it lacks at its parent's value (chains followed;
    a term whose chain reaches no value stays missing)."""
    out = dict(values)
    for t, of in reversed(TIED.items()):
        if t not in out and of in out:
            out[t] = out[of]
    return out


UNFITTED: dict[str, float] = {"alltoall": 10e-6, "alltoall_bytes": 1.0}
"""What a term is where neither it nor the term it is tied to is fitted: an all-to-all's time
at the link's latency (10 µs, the roofline's, ``EngineSpec.allreduce_latency_s``) and its
bytes at the link's bandwidth, not free."""
FLOOR = TERMS.index("eager_layer")
"""The one term that bounds a step's time from below instead of adding to it."""


REQUEST_TOKEN = "request_token"
"""What a fit names :attr:`StepModel.request_token_s` (the frontend's seconds per prompt token)
among the terms it may use."""
FIT_TERMS: tuple[str, ...] = (*TERMS, REQUEST_TOKEN)
"""What a fit may use: the basis terms and the per-prompt-token latency (``request_s``, the
per-request one, is always fitted)."""


def parse_terms(text: str) -> tuple[str, ...]:
    """A comma-separated subset of :data:`FIT_TERMS` (``all``: every one), in that order."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if names == ["all"]:
        return FIT_TERMS
    unknown = [t for t in names if t not in FIT_TERMS]
    require(bool(names) and not unknown,
            f"terms: {', '.join(unknown) or 'none given'} not basis terms; allowed: all or a "
            f"comma-separated subset of {', '.join(FIT_TERMS)}")
    return tuple(t for t in FIT_TERMS if t in names)

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
    0 where a :class:`~napkin.timing.LayoutTimer` counts the busiest rank's pairs itself."""
    time_scale: float = 1.0
    """What the seconds terms' ``x_k`` are multiplied by on this GPU
    (:attr:`~napkin.specs.hardware.Accelerator.fixed_time_scale`)."""
    extra_ranks: int = 0
    """tp − 1: a ring all-reduce's latency-bound steps beyond a one-shot's (``allreduce_hop``
    per all-reduce)."""
    routed: RankCost | None = None
    """The tensor-parallel group's routed experts (MoE models, when built with a precision):
    their FLOPs and expert bytes of a step's tokens go to the ``expert*`` terms instead of the
    dense ones; None where a :class:`~napkin.timing.LayoutTimer` times the busiest rank's."""

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
            norms_s_per_token=elementwise_bytes_per_token(model, tp)[0] / acc.mem_bytes_per_s,
            elementwise_s_per_token=(elementwise_bytes_per_token(model, tp)[1]
                                     / acc.mem_bytes_per_s),
            pair_s_per_token=(pairs_per_token(model) * model.hidden_size * PAIR_BYTES
                              / acc.mem_bytes_per_s),
            time_scale=acc.fixed_time_scale,
            extra_ranks=tp - 1,
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
        experts' matmul term of this format, ``weights``, ``expert_weights``)."""
        fmt = "_low" if self.low_precision else "_w4a16" if self.weight_only else ""
        return (TERMS.index("dense" + fmt), TERMS.index("expert" + fmt),
                TERMS.index("weights"), TERMS.index("expert_weights"))

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
        """The basis vector of one step (see the module table); zeros for an empty step.
        ``prefill``: the step carries a prefill chunk."""
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
             tokens * self.pair_s_per_token, 0.0, 0.0, 0.0, 0.0,
             ts * self.layers if prefill else 0.0,
             ts * self.allreduces * self.extra_ranks]
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

    def __post_init__(self) -> None:
        require(len(self.coefficients) == len(TERMS),
                f"coefficients: need {len(TERMS)} ({', '.join(TERMS)})")
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

    def without_floor(self) -> "StepModel":
        """This model with no ``eager_layer`` floor (an engine whose prefill steps run as one
        compiled graph: :attr:`~napkin.serving.engine.EngineSpec.eager_prefill`)."""
        c = list(self.coefficients)
        c[FLOOR] = 0.0
        return replace(self, coefficients=tuple(c))

    def time(self, terms: tuple[float, ...]) -> float:
        """One step's time from its basis vector, in seconds: ``max(Σ_{k ≠ floor} c_k·x_k,
        c_floor·x_floor)`` (the floor: ``eager_layer``, see the module docstring)."""
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
    """A :class:`~napkin.timing.LayoutTimer` around one rank's ``device`` timer (``engine``:
    whose two-batch-overlap schedule applies). Under a fitted
    model (a :class:`FittedTimer` at tensor parallel 1) the collectives take its fitted terms:
    ``allreduce`` seconds per all-reduce and ``allreduce_bytes`` × their ideal link time,
    ``alltoall`` seconds per dispatch or combine and ``alltoall_bytes`` × their ideal link and
    NIC time (the seconds at the GPU's :attr:`StepBasis.time_scale`, an all-reduce's with
    ``allreduce_hop`` per extra rank of the attention's group); the roofline's are the links'
    and ``latency_s``."""
    nic_bytes_per_s, a2a_link_bytes_per_s = internode_bytes_per_s, link_bytes_per_s
    a2a_latency_s, routed_rates = latency_s, (0.0, 0.0, 0.0)
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
        a2a_link_bytes_per_s, nic_bytes_per_s = (a2a_link_bytes_per_s / scale,
                                                 nic_bytes_per_s / scale) if scale else (inf, inf)
    return LayoutTimer.of(model, precision, layout, device, link_bytes_per_s, latency_s,
                          nic_bytes_per_s, gpus_per_node, a2a_latency_s, a2a_link_bytes_per_s,
                          engine, routed_rates)


@dataclass(frozen=True)
class LayoutBasis:
    """The basis of a step in a :class:`ParallelLayout`, as :class:`LayoutTimer` times it: the
    busiest rank's parts (:meth:`RankCost.rank_parts`) through ``device`` (a basis at tensor
    parallel 1), its routed experts' FLOPs and bytes (:meth:`RankCost.routed`) moved to the
    ``expert*`` terms (:meth:`StepBasis.split_routed`), its collective slots holding the
    layout's — ``allreduce`` the attention all-reduces and ``allreduce_bytes`` their ideal
    link seconds, ``alltoall`` a dispatch and a combine per MoE layer and ``alltoall_bytes``
    their ideal link (or NIC) seconds (``comm`` at zero latency). Linear in the step's parts at
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
        x[TERMS.index("expert_pair")] = cost.rank_pairs(tokens) * self.pair_s
        if cost.groups:
            self.device.split_routed(x, *cost.routed(tokens)[2:])
        return tuple(x)
