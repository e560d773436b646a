"""``ParallelLayout``: how the GPUs of one serving replica split a model.

Attention runs on ``attention_tp × attention_dp`` ranks: ``attention_dp`` groups of
``attention_tp`` GPUs, each group with its own requests and KV cache (data-parallel attention),
the heads split over the group's GPUs (tensor parallelism). The routed experts of every MoE
layer run on the same ``ranks`` GPUs as ``moe_tp × expert_parallel``: with expert parallelism
each GPU holds ``num_experts / expert_parallel`` whole experts, without it every expert is split
over all of them. Everything else (attention projections, dense MLP layers, shared experts,
router, embedding and LM head) stays with the attention: split over ``attention_tp``, a copy in
every data-parallel group, run on the group's own tokens — as vLLM (``--data-parallel-size``),
TensorRT-LLM (``enable_attention_dp``) and SGLang with ``--moe-dense-tp-size 1`` place them.

Tokens meet the experts by one of two exchanges per MoE layer:

- **all-reduce** (``attention_dp`` = 1): every rank holds every token after the attention
  all-reduce, runs its experts (or its slice of each) on the tokens routed to them, and the
  outputs meet in the next all-reduce, as a tensor-parallel MLP's do;
- **all-to-all** (``attention_dp`` > 1 with experts over more than one rank): a rank sends each
  of its tokens to the ranks that hold its top-k experts (dispatch) and gets the outputs back
  (combine) — vLLM ``use_all2all_kernels`` (``dp_size > 1 and use_ep``), SGLang/TensorRT-LLM
  DeepEP or NCCL all-to-all.

Launch flags for each engine are in :meth:`ParallelLayout.flags`.
"""

from dataclasses import dataclass

from napkin.errors import NapkinError, require
from napkin.specs.model import ModelSpec, check_tensor_parallel


@dataclass(frozen=True)
class ParallelLayout:
    """One replica's parallel layout (see the module docstring).

    ``expert_parallel`` divides ``ranks``: 1 (every expert split over all ranks: MoE TP =
    ranks), ``ranks`` (whole experts, ``num_experts / ranks`` per GPU: MoE TP 1), or between
    (MoE TP × EP: ``num_experts / expert_parallel`` experts per group of ``moe_tp`` GPUs, each
    expert split over its group — TensorRT-LLM's ``--ep_size`` below ``--tp_size``, SGLang's
    ``--ep-size`` below ``--tp``; vLLM's expert parallelism spans every rank).
    ``two_batch_overlap`` splits a step into two micro-batches so that one's all-to-all runs
    under the other's compute (SGLang ``--enable-two-batch-overlap``, TensorRT-LLM/vLLM's
    equivalents). ``redundant_experts`` adds that many expert slots a layer
    holding copies of experts (EPLB: vLLM ``--num-redundant-experts``, SGLang
    ``--ep-num-redundant-experts``), so that ``num_experts + redundant_experts`` slots divide
    over the ranks (DeepSeek-V3's 256 + 32 over 72 GPUs); a token's expert is served by one of
    its copies, so routing spreads over the slots. ``balancedness`` b ∈ (0, 1] is a measured
    expert-load balance — the mean over the maximum of the ranks' routed loads, as SGLang's
    expert-distribution recorder and DeepSeek's EPLB report it — for routing that is not
    uniform (popular experts): the busiest rank then carries at least mean / b of the routed
    (token, expert) pairs; None leaves uniform routing's expected busiest rank alone.
    """

    attention_tp: int = 1
    attention_dp: int = 1
    expert_parallel: int = 1
    two_batch_overlap: bool = False
    redundant_experts: int = 0
    balancedness: float | None = None

    def __post_init__(self) -> None:
        require(self.attention_tp >= 1,
                f"tensor_parallel: must be >= 1, got {self.attention_tp}")
        require(self.attention_dp >= 1,
                f"data_parallel: must be >= 1, got {self.attention_dp}")
        require(self.expert_parallel >= 1 and self.ranks % self.expert_parallel == 0,
                f"expert_parallel: expert-parallel groups must divide the replica's "
                f"{self.ranks} ranks, got {self.expert_parallel}")
        require(self.redundant_experts >= 0,
                f"redundant_experts: must be >= 0, got {self.redundant_experts}")
        require(self.redundant_experts == 0 or self.expert_parallel > 1,
                "redundant_experts: copies of whole experts need expert_parallel")
        b = self.balancedness
        require(b is None or 0.01 <= b <= 1,
                f"expert_balancedness: the mean over the busiest rank's routed load, a number "
                f"in [0.01, 1], got {b}")
        require(b is None or self.expert_parallel > 1,
                "expert_balancedness: a balance between ranks of whole experts needs "
                "expert_parallel")

    @property
    def ranks(self) -> int:
        """GPUs of the replica: ``attention_tp × attention_dp``."""
        return self.attention_tp * self.attention_dp

    @property
    def moe_tp(self) -> int:
        """Ranks each routed expert is split over: ``ranks / expert_parallel``."""
        return self.ranks // self.expert_parallel

    @property
    def all_to_all(self) -> bool:
        """Tokens reach the experts by dispatch/combine all-to-alls (data-parallel attention
        with experts on more than one rank), not through the attention all-reduce."""
        return self.attention_dp > 1 and self.ranks > 1

    @property
    def is_tensor_parallel(self) -> bool:
        """The plain layout: every rank holds every token (no data parallelism), every expert
        split over all ranks — what :class:`napkin.timing.steps.RooflineTimer` times."""
        return self.attention_dp == 1 and self.expert_parallel == 1

    @property
    def kind(self) -> str:
        """The layout without its sizes: ``tp``, ``tp ep`` (whole experts, TP attention),
        ``dp`` (data-parallel attention, experts split), ``dp ep`` (DEP) — what a calibration
        profile records it was fitted on."""
        return ("dp" if self.attention_dp > 1 else "tp") + (" ep" if self.expert_parallel > 1
                                                           else "")

    def label(self) -> str:
        """``tp8``, ``tp8 ep8``, ``dp8 ep8`` (DEP8), ``tp2 dp4 ep8``."""
        parts = [f"tp{self.attention_tp}"] if self.attention_tp > 1 or self.attention_dp == 1 \
            else []
        if self.attention_dp > 1:
            parts.append(f"dp{self.attention_dp}")
        if self.expert_parallel > 1:
            parts.append(f"ep{self.expert_parallel}")
        if self.redundant_experts:
            parts.append(f"+{self.redundant_experts}r")
        if self.balancedness is not None:
            parts.append(f"bal {self.balancedness:g}")
        if self.two_batch_overlap:
            parts.append("tbo")
        return " ".join(parts)

    def check(self, model: ModelSpec) -> None:
        """Raise unless ``model`` can run in this layout: the attention TP must split its heads
        (:func:`check_tensor_parallel`); expert parallelism needs routed experts that divide
        evenly over the ranks; data-parallel attention is for MoE models (a dense model's data
        parallelism is replicas)."""
        check_tensor_parallel(model, self.attention_tp)
        if self.attention_dp > 1 and not model.is_moe:
            raise NapkinError(f"engine.data_parallel: {model.name} is dense; data-parallel "
                              "attention is for MoE models (serve a dense model's copies as "
                              "engine.replicas)")
        if self.expert_parallel > 1:
            if not model.is_moe:
                raise NapkinError(f"engine.expert_parallel: needs a MoE model ({model.name} "
                                  "is dense)")
            for b in model.blocks:
                if b.experts and self.slots(b.experts.num_experts) % self.expert_parallel:
                    extra = f" + {self.redundant_experts} redundant" \
                        if self.redundant_experts else ""
                    raise NapkinError(
                        f"engine.expert_parallel: {b.experts.num_experts}{extra} experts do "
                        f"not divide over {self.expert_parallel} ranks (tensor_parallel × "
                        "data_parallel; engine.redundant_experts adds slots)")

    def slots(self, num_experts: int) -> int:
        """Expert slots of a MoE layer: its experts plus the redundant copies."""
        return num_experts + self.redundant_experts

    def expert_share(self, model: ModelSpec) -> float:
        """Share of the routed experts' weights one GPU holds: ``slots / (experts · ranks)``
        (``1/ranks`` without redundant copies; 0 for a dense model)."""
        e = next((b.experts.num_experts for b in model.blocks if b.experts), 0)
        return self.slots(e) / (e * self.ranks) if e else 0.0

    def trtllm_options(self) -> list[str]:
        """Lines of ``trtllm-serve``'s ``--extra_llm_api_options`` YAML this layout needs."""
        return ["enable_attention_dp: true"] if self.attention_dp > 1 else []

    def flags(self, engine: str) -> list[str]:
        """The engine's own command-line flags for this layout (vLLM ``vllm serve``, SGLang
        ``sglang.launch_server``, TensorRT-LLM ``trtllm-serve``, whose attention data
        parallelism goes in its options file: :meth:`trtllm_options`); raises where the engine
        cannot spell it."""
        tp, dp, ep = self.attention_tp, self.attention_dp, self.expert_parallel
        if engine == "vllm":
            if 1 < ep < self.ranks:
                raise NapkinError(f"layout {self.label()}: vLLM's expert parallelism spans "
                                  f"every rank (EP {self.ranks}), not {ep} of them")
            out = [f"--tensor-parallel-size {tp}"]
            if dp > 1:
                out.append(f"--data-parallel-size {dp}")
            if ep > 1:
                out.append("--enable-expert-parallel")
            if self.redundant_experts:
                out += ["--enable-eplb", f"--num-redundant-experts {self.redundant_experts}"]
            if self.two_batch_overlap:
                out.append("--enable-dbo")
            return out
        if engine == "sglang":
            if dp > 1 and 1 < ep < self.ranks:
                raise NapkinError(f"layout {self.label()}: SGLang's DeepEP all-to-all spans "
                                  f"every rank (EP {self.ranks}) with data-parallel attention")
            out = [f"--tp {self.ranks}"]
            if dp > 1:
                out += [f"--dp {dp}", "--enable-dp-attention", "--moe-dense-tp-size 1"]
            if ep > 1:
                out.append(f"--ep-size {ep}")
                if dp > 1:
                    out.append("--moe-a2a-backend deepep")
            if self.redundant_experts:
                out += ["--enable-eplb",
                        f"--ep-num-redundant-experts {self.redundant_experts}"]
            if self.two_batch_overlap:
                out.append("--enable-two-batch-overlap")
            return out
        if engine == "trtllm":
            if dp > 1 and tp > 1:
                raise NapkinError(f"layout {self.label()}: TensorRT-LLM's attention data "
                                  "parallelism spans every rank (attention TP 1)")
            if self.redundant_experts:
                raise NapkinError(f"layout {self.label()}: redundant experts are set in "
                                  "trtllm-serve's moe_load_balancer file, not a flag")
            if self.two_batch_overlap:
                raise NapkinError(f"layout {self.label()}: no two-batch overlap flag for "
                                  "trtllm-serve")
            out = [f"--tp_size {self.ranks}"]
            if ep > 1:
                out.append(f"--ep_size {ep}")
            return out
        raise NapkinError(f"engine: {engine!r} is not vllm, sglang or trtllm")
