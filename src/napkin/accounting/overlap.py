"""Two-batch overlap: which work of a step hides which all-to-all.

With two-batch overlap (TBO) a step of data-parallel attention over expert parallelism runs
as two micro-batches A and B of half the tokens each, on one GPU stream. The engine cuts every
layer's operators into stages at the all-to-alls: a dispatch or combine that one micro-batch
launches at the end of a stage is waited for at the start of its next stage, and meanwhile the
GPU runs one stage of the other micro-batch (plus any of the sender's own work placed after
the launch). An all-to-all shows in the step only where it outlasts the work run under it:

    exposed = Σ over MoE layers, over A and B, over dispatch and combine
              max(0, t_all-to-all − t_work run under it)

Which work runs under which all-to-all is the engine's schedule, read off its source:

- ``staggered`` — SGLang's decode (``operations_strategy.py``,
  ``_compute_moe_deepseek_blog_decode``, B two stages behind A; Qwen3-MoE alike without shared
  experts): a dispatch runs under the sender's own shared experts and the other micro-batch's
  attention *prepare* (norms, the query/key/value projections: ``ATTENTION_PREPARE``); a
  combine under the other's attention *core* (scores, values, the output projection, the
  router: ``ATTENTION_CORE``).
- ``alternating`` — SGLang's prefill (``tbo_delta_stages=0``) and vLLM's dual-batch overlap
  (``--enable-dbo``: each micro-batch yields to the other at every all-to-all): a dispatch runs
  under the other micro-batch's whole attention side (prepare, core, shared experts), a combine
  under its routed experts. (SGLang's prefill places its shared experts after the combine's
  launch; every prefill napkin checks hides its all-to-alls either way.)

The stages' work comes from :func:`~napkin.accounting.forward.op_rates` (the single source of
forward costs): the attention prepare and core and the shared experts as per-token FLOPs and
weight bytes over all layers; the attention FLOPs and KV bytes of a step (its context) belong
to the core whole. Per-layer figures are the stages' totals over the layers that carry them
(attention: every decoder layer; shared experts: the MoE layers), so a model whose layers
differ (linear-attention hybrids) is taken at its average layer. What this leaves out: MLA's
prefill over cached tokens (``kv_b_cached``) counts in neither stage.
"""

from dataclasses import dataclass

from napkin.accounting.forward import Precision, op_rates
from napkin.accounting.linear import ATTENTION_KINDS
from napkin.specs.model import ModelSpec
from napkin.specs.modules import OpKind

STAGGERED = "staggered"
ALTERNATING = "alternating"

OUTPUT_PROJECTIONS = frozenset({"attn/o", "attn/o_a", "attn/o_b", "attn/out_proj"})
"""Attention output projections: the end of the attention core (SGLang's ``op_core`` runs the
kernel and ``o_proj``)."""
ATTENTION_PREPARE = "prepare"
ATTENTION_CORE = "core"
SHARED_EXPERTS = "shared"


def schedule_of(engine: str | None, prefill: bool) -> str:
    """The overlap schedule of ``engine``'s two-batch overlap in a decode-only step or a step
    with a prefill chunk (module docstring): SGLang's decode staggers its micro-batches, every
    other case alternates them."""
    return STAGGERED if engine == "sglang" and not prefill else ALTERNATING


def stage_of(module: str, kind: OpKind) -> str | None:
    """The overlap stage an operator of a MoE model belongs to: the attention prepare or core,
    the shared experts, or None (routed experts, dense FFN layers, embedding, LM head)."""
    if module.startswith("moe/shared/"):
        return SHARED_EXPERTS
    if kind in ATTENTION_KINDS or kind is OpKind.ROUTER or module in OUTPUT_PROJECTIONS:
        return ATTENTION_CORE
    if module.startswith(("attn/", "hc/attn")) or module == "norms":
        return ATTENTION_PREPARE
    return None


@dataclass(frozen=True)
class StageRates:
    """One stage's work over the layers that carry it: FLOPs per new token (16-bit ones
    included), the 16-bit FLOPs among them, and the weight bytes it reads."""

    flops_per_token: float
    sixteen_per_token: float
    weight_bytes: float


@dataclass(frozen=True)
class OverlapStages:
    """The stages of a MoE model's layers that hide all-to-alls (module docstring)."""

    prepare: StageRates
    core: StageRates
    shared: StageRates
    layers: int
    """Decoder layers (the attention stages' totals are over all of them)."""

    @classmethod
    def of(cls, model: ModelSpec, precision: Precision) -> "OverlapStages":
        sums = {s: [0.0, 0.0, 0.0] for s in (ATTENTION_PREPARE, ATTENTION_CORE, SHARED_EXPERTS)}
        for r in op_rates(model, precision):
            stage = stage_of(r.module, r.kind)
            if stage is None or r.experts is not None:
                continue
            s = sums[stage]
            if r.kind not in ATTENTION_KINDS:
                s[0] += r.flops_per_token
                if r.sixteen_bit:
                    s[1] += r.flops_per_token
            s[2] += r.weight_bytes
        return cls(StageRates(*sums[ATTENTION_PREPARE]), StageRates(*sums[ATTENTION_CORE]),
                   StageRates(*sums[SHARED_EXPERTS]), len(model.blocks))
