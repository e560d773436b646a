"""forward()'s totals as a linear function of batch aggregates, for simulators.

A simulator evaluates millions of steps; building the op list each time would dominate. The
totals of :func:`napkin.accounting.forward` are sums of per-op rates (``op_rates``) times batch
aggregates, plus two switches (the LM head is read only when something is read out) and the
MoE expert term ``E·(1 − (1 − k/E)^T)·bytes_per_expert``. :class:`LinearCost` sums those same
rates once per model and precision; tests check it equals ``forward`` on random batches.
Linear-attention layers add two more terms: their recurrence's FLOPs per token (attention
FLOPs, as ``forward``'s split has them) and their state's bytes per sequence, read for each
resumed sequence and written for each stepped one.

Under tensor parallelism the timers (``RooflineTimer``, ``StepBasis``) divide the KV part by
:meth:`ModelSpec.kv_devices` while a linear-attention state splits over every rank;
:func:`tp_cost` is the one place that reconciles the two.
"""

from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import lru_cache

from napkin.accounting.batch import BatchShape, causal_pairs
from napkin.accounting.forward import Precision, _group_labels, experts_touched, op_rates
from napkin.specs.model import ModelSpec
from napkin.specs.modules import OpKind

ATTENTION_KINDS = (OpKind.ATTN_SCORE, OpKind.ATTN_VALUE)
"""The ops whose FLOPs are attention FLOPs in :attr:`napkin.accounting.ops.CallCost.parts`."""


@dataclass(frozen=True)
class WindowRates:
    """Rates of the attention ops of one window size (None = full attention)."""

    window: int | None
    flops_per_pair: float
    flops_per_decode_pair: float
    kv_read_per_cached: float


@dataclass(frozen=True)
class LinearCost:
    """Totals of one forward call from batch aggregates (same numbers as ``forward``)."""

    flops_per_token: float
    flops_per_readout: float
    flops_per_prefill_cached: float
    sixteen_bit: tuple[float, float, float]
    """The share of the three rates above that runs at the 16-bit rate (unquantized parts,
    ``OpRates.sixteen_bit``): per token, per read-out, per cached prefill token."""
    windows: tuple[WindowRates, ...]
    weight_bytes_always: float
    weight_bytes_readout: float
    weight_bytes_no_readout: float
    experts: tuple[tuple[int, int, float], ...]
    kv_write_per_token: float
    attention_per_token: float = 0.0
    """Attention FLOPs per new token, whatever the context: linear-attention recurrences (the
    pair-wise attention FLOPs are ``windows``'); not part of ``flops_per_token``."""
    state_bytes: float = 0.0
    """A sequence's linear-attention state: read once per resumed sequence, written once per
    stepped sequence (``OpRates.state_bytes``; 0 without linear attention)."""
    _decode_tokens: dict[int, tuple[float, float, float, float, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False)
    """:meth:`_token_parts` of decode steps by their sequence count (a simulator costs the
    same few hundred counts millions of times)."""
    _full: WindowRates | None = field(init=False, repr=False, compare=False, hash=False)
    """The one entry of ``windows`` when there is one (a model without sliding windows)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_full", self.windows[0] if len(self.windows) == 1 else None)

    @classmethod
    def of(cls, model: ModelSpec, precision: Precision) -> "LinearCost":
        """Sum ``op_rates(model, precision)`` into one rate per aggregate."""
        rates = op_rates(model, precision)
        per_window: dict[int | None, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        weights = {"always": 0.0, "readout": 0.0, "no_readout": 0.0}
        experts: dict[tuple[int, int], float] = defaultdict(float)
        for r in rates:
            w = per_window[r.window]
            w[0] += r.flops_per_pair
            w[1] += r.flops_per_decode_pair
            w[2] += r.kv_read_per_cached
            if r.experts is not None:
                experts[r.experts] += r.weight_bytes
            else:
                weights[r.weight_read] += r.weight_bytes
        sixteen = [r for r in rates if r.sixteen_bit]
        return cls(
            flops_per_token=sum(r.flops_per_token for r in rates
                                if r.kind not in ATTENTION_KINDS),
            flops_per_readout=sum(r.flops_per_readout for r in rates),
            flops_per_prefill_cached=sum(r.flops_per_prefill_cached for r in rates),
            sixteen_bit=(sum(r.flops_per_token for r in sixteen),
                         sum(r.flops_per_readout for r in sixteen),
                         sum(r.flops_per_prefill_cached for r in sixteen)),
            windows=tuple(WindowRates(k, *v) for k, v in per_window.items() if any(v)),
            weight_bytes_always=weights["always"],
            weight_bytes_readout=weights["readout"],
            weight_bytes_no_readout=weights["no_readout"],
            experts=tuple((e, k, b) for (e, k), b in experts.items()),
            kv_write_per_token=sum(r.kv_write_per_token for r in rates),
            attention_per_token=sum(r.flops_per_token for r in rates
                                    if r.kind in ATTENTION_KINDS),
            state_bytes=sum(r.state_bytes for r in rates),
        )

    def weight_bytes(self, tokens: int, readout: int) -> float:
        """Weights read by a call of ``tokens`` new tokens with ``readout`` read-outs."""
        if tokens == 0:
            return 0.0
        total = self.weight_bytes_always
        total += self.weight_bytes_readout if readout > 0 else self.weight_bytes_no_readout
        for num_experts, top_k, per_expert in self.experts:
            total += experts_touched(num_experts, top_k, tokens) * per_expert
        return total

    def parts(self, batch: BatchShape) -> tuple[float, float, float, float, float]:
        """(dense FLOPs, attention FLOPs, weight bytes, KV bytes, 16-bit dense FLOPs) of one
        forward call on ``batch``: the matmul FLOPs at the weight format's rate and the
        query–key/value FLOPs, the weights read, the KV read and written, and the matmul FLOPs
        of unquantized parts (at the 16-bit rate; 0 without ``Precision.unquantized``). Their
        sums are :meth:`totals`; all zero for no tokens."""
        tokens = batch.new_tokens
        if tokens == 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0
        per_window = [(batch.attention_pairs(w.window),
                       batch.decode_pairs(w.window) if w.flops_per_decode_pair else 0,
                       batch.cached_tokens_read(w.window)) for w in self.windows]
        states = (batch.stepped_sequences() + batch.resumed_sequences()
                  if self.state_bytes else 0)
        return self._parts(tokens, batch.readout_tokens, batch.prefill_cached_tokens(),
                           per_window, states)

    def decode_parts(self, n_dec: int, sum_ctx: int) -> tuple[float, float, float, float,
                                                             float]:
        """:meth:`parts` of a decode-only step of a model without sliding windows: ``n_dec``
        sequences, one new token each, ``sum_ctx`` cached tokens in all — new = read-out =
        ``n_dec`` tokens, pairs = decode pairs = ``sum_ctx + n_dec``, cached KV read
        ``sum_ctx`` (the simulator's most frequent step, without building a batch shape); each
        decode reads and writes its linear-attention state."""
        if n_dec == 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0
        token = self._decode_tokens.get(n_dec)
        if token is None:
            token = self._decode_tokens[n_dec] = self._token_parts(n_dec, n_dec, 0, 2 * n_dec)
        pairs = sum_ctx + n_dec
        return self._with_uniform_context(token, pairs, pairs, sum_ctx)

    def verify_parts(self, n_dec: int, sum_ctx: int, q: int
                     ) -> tuple[float, float, float, float, float]:
        """:meth:`decode_parts` of a speculative verification: each of ``n_dec`` sequences
        runs ``q`` tokens (its last token and ``q − 1`` drafted ones) on its context, all read
        out, attended as decodes are (MLA absorbed): new = read-out = ``n_dec·q``, pairs =
        decode pairs = ``q·sum_ctx + n_dec·q(q + 1)/2``, cached KV read ``sum_ctx``, each
        sequence's linear-attention state read and written once."""
        if n_dec == 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0
        tokens = n_dec * q
        pairs = q * sum_ctx + n_dec * (q * (q + 1) // 2)
        return self._with_uniform_context(
            self._token_parts(tokens, tokens, 0, 2 * n_dec if self.state_bytes else 0),
            pairs, pairs, sum_ctx)

    def step_parts(self, n_dec: int, sum_ctx: int, chunks: list[tuple[int, int, int]],
                   q: int = 1) -> tuple[float, float, float, float, float]:
        """:meth:`parts` of a step of a model without sliding windows: ``n_dec`` decodes at
        total context ``sum_ctx`` and prefill chunks ``(cached, new, read-out)`` (the
        simulator's :class:`napkin.serving.step.StepShape`), its aggregates gathered in one
        pass: full-attention pairs ``P·S + P(P+1)/2`` per chunk (:func:`causal_pairs`), a
        one-token chunk's pairs counted as decode pairs, a longer chunk's cached tokens as
        prefill-cached ones; linear-attention states moved as :class:`StepShape` counts them
        (every decode and chunk writes its state; decodes and chunks with cached tokens read
        it). With ``q`` > 1 the decodes are speculative verifications (:meth:`verify_parts`)."""
        tokens = readout = n_dec * q
        pairs = decode_pairs = q * sum_ctx + n_dec * (q * (q + 1) // 2)
        cached, prefill_cached = sum_ctx, 0
        states = 2 * n_dec
        for c, n, o in chunks:
            tokens += n
            readout += o
            p = causal_pairs(c, n)
            pairs += p
            cached += c
            if n == 1:
                decode_pairs += p
            else:
                prefill_cached += c
            if n:
                states += 2 if c else 1
        if tokens == 0:
            return 0.0, 0.0, 0.0, 0.0, 0.0
        return self._with_uniform_context(
            self._token_parts(tokens, readout, prefill_cached, states if self.state_bytes else 0),
            pairs, decode_pairs, cached)

    def _parts(self, tokens: int, readout: int, prefill_cached: int,
               per_window: list[tuple[int, int, int]], states: int = 0
               ) -> tuple[float, float, float, float, float]:
        """The rates times the aggregates; ``per_window``: (query–key pairs, decode pairs,
        cached tokens read) for each entry of ``windows``; ``states``: linear-attention state
        reads plus writes."""
        return self._with_context(self._token_parts(tokens, readout, prefill_cached, states),
                                  per_window)

    def _token_parts(self, tokens: int, readout: int, prefill_cached: int, states: int = 0
                     ) -> tuple[float, float, float, float, float]:
        """The parts set by the step's token and sequence counts alone: (dense FLOPs at the
        format's rate, per-token attention FLOPs, weight bytes, KV bytes written plus
        ``states`` state reads and writes, 16-bit dense FLOPs)."""
        dense = (self.flops_per_token * tokens + self.flops_per_readout * readout
                 + self.flops_per_prefill_cached * prefill_cached)
        s_token, s_readout, s_cached = self.sixteen_bit
        sixteen = (s_token * tokens + s_readout * readout + s_cached * prefill_cached
                   if s_token or s_readout or s_cached else 0.0)
        kv = self.kv_write_per_token * tokens
        if states:
            kv += self.state_bytes * states
        return (dense - sixteen, self.attention_per_token * tokens,
                self.weight_bytes(tokens, readout), kv, sixteen)

    def _with_context(self, token: tuple[float, float, float, float, float],
                      per_window: list[tuple[int, int, int]]
                      ) -> tuple[float, float, float, float, float]:
        """:meth:`_token_parts` plus the attention FLOPs and the KV read of ``per_window``."""
        if len(per_window) == len(self.windows) == 1:
            return self._with_uniform_context(token, *per_window[0])
        dense, attention, weights, kv, sixteen = token
        for w, (pairs, decode_pairs, cached) in zip(self.windows, per_window, strict=True):
            attention += w.flops_per_pair * pairs
            if w.flops_per_decode_pair:
                attention += w.flops_per_decode_pair * decode_pairs
            kv += w.kv_read_per_cached * cached
        return dense, attention, weights, kv, sixteen

    def _with_uniform_context(self, token: tuple[float, float, float, float, float],
                              pairs: int, decode_pairs: int, cached: int
                              ) -> tuple[float, float, float, float, float]:
        """:meth:`_with_context` with the same aggregates for every window — a model without
        sliding windows, whose one entry is full attention (the simulator's steps: no list of
        aggregates to build and unpack). The same floats as the loop over one window."""
        w = self._full
        if w is None:
            return self._with_context(token, [(pairs, decode_pairs, cached)] * len(self.windows))
        dense, attention, weights, kv, sixteen = token
        attention += w.flops_per_pair * pairs
        if w.flops_per_decode_pair:
            attention += w.flops_per_decode_pair * decode_pairs
        return dense, attention, weights, kv + w.kv_read_per_cached * cached, sixteen

    def totals(self, batch: BatchShape) -> tuple[float, float]:
        """(FLOPs, bytes moved) of one forward call on ``batch``; (0, 0) for no tokens."""
        dense, attention, weights, kv, sixteen = self.parts(batch)
        return dense + attention + sixteen, weights + kv


def state_tp_scale(model: ModelSpec, tp: int) -> float:
    """The factor on a linear-attention state's bytes that makes a ``tp``-way group's KV
    division leave each GPU ``1/tp`` of the state: ``kv_devices(tp) / tp`` (dimensionless).

    The timers divide the KV part of a step (KV read and written plus the states) by
    ``d = ModelSpec.kv_devices(tp)``, the ranks the attention layers' KV heads split over
    (``min(tp, kv_heads)``); a Gated DeltaNet state splits its value heads over all ``tp``
    ranks, so its bytes enter scaled by ``d/tp``: ``state·(d/tp)/d = state/tp`` per GPU.
    Qwen3-Next-80B-A3B (2 KV heads) at TP 8: 2/8; at TP 2: 1; 1 at tp 1."""
    return model.kv_devices(tp) / tp if tp > 1 else 1.0


REPLICATED = ("attn/q_a", "attn/kv_a")
"""The linears of an MLA or DSA block that every tensor-parallel rank runs whole: the query and
latent down-projections (vLLM's and SGLang's ``ReplicatedLinear`` ``q_a_proj`` and
``kv_a_proj_with_mqa`` / ``fused_qkv_a_proj_with_mqa``, TensorRT-LLM's replicated
``fused_a``): their outputs are narrow (1,536 and 576 wide in DeepSeek-V3), so engines repeat
them rather than gather."""


def replicated_rates(model: ModelSpec, precision: Precision) -> tuple[float, float, float]:
    """(FLOPs per token, of them at the 16-bit rate, weight bytes) of :data:`REPLICATED` in the
    model's MLA and DSA layers, over all those layers; zeros for other models."""
    labels = {label for block, label in _group_labels(model).items()
              if block.attention.kind in ("mla", "dsa")}
    flops = sixteen = weights = 0.0
    for r in op_rates(model, precision):
        if r.module in REPLICATED and r.name[:-len(r.module) - 1] in labels:
            flops += r.flops_per_token
            sixteen += r.flops_per_token if r.sixteen_bit else 0.0
            weights += r.weight_bytes
    return flops, sixteen, weights


@lru_cache(maxsize=64)
def tp_cost(model: ModelSpec, precision: Precision, tp: int,
            replicated_over: int | None = None) -> LinearCost:
    """The model's :class:`LinearCost` as a ``tp``-way group's timers read it: ``state_bytes``
    scaled by :func:`state_tp_scale` (bytes per sequence × ``kv_devices(tp)/tp``), the
    :data:`REPLICATED` down-projections' FLOPs per token and weight bytes counted once per rank
    that runs them whole (``replicated_over``, the attention's tensor-parallel ranks: ``tp``
    unless given; 1 under data-parallel attention, each rank on its own tokens), everything
    else the whole group's. Its :meth:`LinearCost.parts` then give, after the timers' division
    by ``tp`` and of the KV part by ``kv_devices(tp)``, KV/``kv_devices(tp)`` + state/``tp``
    bytes per GPU and each rank's whole down-projections beside its share of the rest. The
    simulator's engines and the calibrated call and decode all use it.

    DeepSeek-V3 at TP 8: its down-projections' 1.847 GFLOP a token (61 layers · 2 · 7,168 ·
    (1,536 + 576)) count 8 times on the group, so a rank runs 1.847, not 0.231; their 1.847 GB
    of BF16 weights (0.92 GB in FP8) are read whole on every rank.

    Kept for the last 64 arguments (a cost is frozen: a scenario's replicas and a plan's runs
    share one, with its tables)."""
    cost = LinearCost.of(model, precision)
    if cost.state_bytes and tp > 1:
        cost = replace(cost, state_bytes=cost.state_bytes * state_tp_scale(model, tp))
    flops, sixteen, weights = replicated_extra(model, precision,
                                               tp if replicated_over is None else replicated_over)
    if flops:
        s_token, s_readout, s_cached = cost.sixteen_bit
        cost = replace(cost, flops_per_token=cost.flops_per_token + flops,
                       sixteen_bit=(s_token + sixteen, s_readout, s_cached),
                       weight_bytes_always=cost.weight_bytes_always + weights)
    return cost


def replicated_extra(model: ModelSpec, precision: Precision, ranks: int
                     ) -> tuple[float, float, float]:
    """What a group of ``ranks`` that each run :data:`REPLICATED` whole adds to the model's
    totals: ``(ranks − 1)`` × :func:`replicated_rates` (FLOPs per token, of them 16-bit, weight
    bytes); zeros at one rank or without such linears."""
    if ranks <= 1:
        return 0.0, 0.0, 0.0
    flops, sixteen, weights = replicated_rates(model, precision)
    return (ranks - 1) * flops, (ranks - 1) * sixteen, (ranks - 1) * weights


def with_replicated(parts: tuple[float, float, float, float, float], tokens: int,
                    extra: tuple[float, float, float]) -> tuple[float, float, float, float, float]:
    """``parts`` of a step of ``tokens`` new tokens (as ``forward`` gives them) with
    :func:`replicated_extra`'s ``extra`` added, as :func:`tp_cost`'s rates add it."""
    flops, sixteen, weights = extra
    if not flops:
        return parts
    dense, attention, weight_bytes, kv, sixteen_flops = parts
    return (dense + (flops - sixteen) * tokens, attention, weight_bytes + weights, kv,
            sixteen_flops + sixteen * tokens)
