"""The basis terms of the fitted step-time model: what each term of a step measures, and how a
fit ties, leaves out or floors them (the basis vectors: :mod:`napkin.calibration.basis`).

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
``expert_weights_  the same for weight-only 4-bit experts (W4A16: Marlin,     × ideal time
w4a16``            Triton MXFP4), whose kernels read them apart
``eager_layer``    decoder layers, in a step that carries a prefill chunk;    s per layer
                   0 in a decode-only step
``allreduce_hop``  all-reduces × (tp − 1): a ring all-reduce (NCCL's) takes   s per all-reduce
                   2(tp − 1) latency-bound steps                              and extra rank
``alltoall_step``  1 in a layout's step whose all-to-alls run (data-parallel  s per step
                   attention, tokens crossing ranks); 0 otherwise
``mla_layer``      decoder layers with MLA attention (beyond ``layer``)       s per MLA layer
``dsa_layer``      decoder layers with DSA attention (beyond ``layer``)       s per DSA layer
=================  =========================================================  ================

Every term in seconds (``step``, ``layer``, ``moe_layer``, ``token``, ``token_layer``,
``allreduce``, ``alltoall``, ``eager_layer``, ``allreduce_hop``, ``alltoall_step``,
``mla_layer``, ``dsa_layer``) is a fixed
time — kernel launches, small kernels, a collective's latency — and is read at the reference
GPU's clock: its ``x_k`` is multiplied by
:attr:`~napkin.specs.hardware.Accelerator.fixed_time_scale` (the H100 SXM's 1,980 MHz SM clock
/ this GPU's; 1 where the catalog has no clock). splitwise-sim's
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

The all-to-alls of expert parallelism behind data-parallel attention
(:class:`~napkin.calibration.basis.LayoutBasis`) have their own terms (``alltoall`` a
collective's time, ``alltoall_bytes``, and ``alltoall_step`` a time once a step that runs
them). TensorRT-LLM's profile fits ``alltoall_step`` on its H100 attention-DP rows
(gpt-oss-120b, whose TPOT the concurrency hardly moves): 15.2 ms a step — the ranks waiting
for the slowest at every MoE layer, host work — with each collective at the link's 10 µs. Fitted
per collective instead (221 µs each) it charged a deep model what a shallow one paid per layer:
the held-out perf-overview's Qwen3-235B-A22B DEP8 rows (94 MoE layers) read 23–25 % slow so
and 7–19 % fast with the time per step; all 15 rows 11.7 % → 8.0 % (docs/calibration.md).
The other profiles charge no time per step (no attention-DP rows to fit it on). A profile
that fits the all-reduces' pair but not ``alltoall`` times the collectives alike
(:data:`TIED`); one that leaves the all-reduces out — vLLM's, whose per-layer time carries
its all-reduces' latency and whose matmul coefficients their bytes, on rows that cannot tell
them apart — times them at the link's own figures (:data:`UNFITTED`: 10 µs and the ideal
link time), which the dense rows it was fitted on hold no share of: before, it charged them
nothing, and the MiniMax-M2.5 H100 rows of vLLM over attention DP 4 and TP 4 × EP 4
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
ideal time (:attr:`~napkin.calibration.basis.FittedTimer.routed_rates`), which is the same sum.

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
reads: :class:`~napkin.calibration.basis.LayoutBasis`), TensorRT-LLM's refit puts it at 0.

Because every term is normalized by the GPU's own datasheet figures, coefficients fitted on
one GPU give a physically sensible prediction on another (flagged as extrapolation
by the profile's domain).

``mla_layer`` is what an MLA attention block's kernels take beyond a GQA block's at the small
batches where fixed time rules a step (the absorbed batched matmuls, the latent down-projection
and its norms, rotary on a split head): set on the engines' own H100 timings of DeepSeek-V3's
MLA block against Llama-3.1-70B's GQA block (:mod:`napkin.calibration.mla_blocks`; SGLang's
block as its kernels summed), since no serving row a profile is fitted on runs an MLA model;
0 in a profile without it. ``dsa_layer`` is the same for a DSA block (an MLA block with an
indexer: DeepSeek-V3.2, GLM-5), set on the engines' timings of those models' DSA modules.

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
"""

from napkin.errors import require

TERMS: tuple[str, ...] = ("step", "layer", "moe_layer", "token", "token_layer", "norms",
                          "elementwise", "dense",
                          "dense_low", "dense_w4a16", "attention", "weights", "kv", "allreduce",
                          "allreduce_bytes", "alltoall", "alltoall_bytes", "expert_pair",
                          "expert", "expert_low", "expert_w4a16", "expert_weights",
                          "expert_weights_w4a16", "eager_layer", "allreduce_hop",
                          "alltoall_step", "mla_layer", "dsa_layer")
"""Basis terms of a step, in the order of
:meth:`~napkin.calibration.basis.StepBasis.terms` and ``coefficients``."""
TIED: dict[str, str] = {"expert": "dense", "expert_low": "dense_low",
                        "expert_w4a16": "dense_w4a16",
                        "expert_weights_w4a16": "weights", "expert_weights": "weights",
                        "dense_low": "dense", "dense_w4a16": "dense", "alltoall": "allreduce",
                        "alltoall_bytes": "allreduce_bytes"}
"""Terms that take another's coefficient where a fit has none of their own (left out, or no
row has their work) but fits the other: the routed experts' matmuls and reads take those of
the dense layers of their format (weight-only 4-bit experts' reads the dense weights', not the
8- and 16-bit experts' ``expert_weights``: their kernels are others), matmuls of other weight
formats take ``dense``'s, all-to-alls the all-reduces'. A child comes before its parent
(``expert_low`` → ``dense_low`` → ``dense``), so that folding children into parents in this
order and reading parents back in the reverse one resolves chains."""


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
"""What a fit names :attr:`~napkin.calibration.basis.StepModel.request_token_s` (the
frontend's seconds per prompt token) among the terms it may use."""
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
