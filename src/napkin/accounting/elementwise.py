"""Memory traffic of a forward's elementwise kernels: the work between the matmuls that the
FLOP count leaves out (norms, residual adds, the MLP's gated activation, rotary embedding).

Per token and decoder layer, in 16-bit activation elements (:data:`ACTIVATION_BYTES` each):

- **replicated** on every tensor-parallel rank (each holds the whole hidden vector after an
  all-reduce): two fused residual-add + RMSNorm kernels (before attention and before the MLP),
  each reading the input and the residual and writing both — ``8·h``;
- **sharded** over the ``tp`` ranks (each holds ``1/tp`` of the heads and of the MLP's
  intermediate): the MLP's activation, which reads the outputs of its input projections (gate
  and up: ``2·I`` for a gated MLP, shared experts included) and writes the down projection's
  input (``I``), and rotary embedding, which reads and writes the query and key heads
  (``2·(n_q + n_kv)·d_qk``; for MLA the whole query–key head, its rope part being smaller).

so one token costs ``Σ_layers 8·h × 2`` replicated and ``Σ_layers sharded/tp × 2`` sharded
bytes on a rank. Routed experts'
activations are per (token, expert) pair and belong to the routed-pair traffic
(``expert_pair`` in :mod:`napkin.calibration.terms`), not here. Nothing in the roofline counts
these bytes (kernel fusion makes them an engine's matter); the fitted step-time model times
them through its ``norms`` (replicated) and ``elementwise`` (sharded) terms.

Llama-3.1-8B (h 4,096, I 14,336, 32 query and 8 KV heads of 128): replicated 32,768 and
sharded 53,248 elements a layer; × 32 layers × 2 B = 2.1 MB replicated and 3.4 MB sharded a
token on one GPU (0.43 MB a rank at TP 8).
"""

from napkin.errors import require
from napkin.specs.model import ModelSpec
from napkin.specs.modules import OpKind, Stage

ACTIVATION_BYTES = 2
"""16-bit (BF16) activations."""
NORM_PASSES = 8
"""Hidden-vector elements the two fused residual-add + RMSNorm kernels of a layer move per token
(each reads the input and the residual and writes both)."""


def elementwise_elements(model: ModelSpec) -> tuple[int, int]:
    """(replicated, sharded) activation elements per token over all decoder layers (module
    docstring): ``Σ 8·h`` and ``Σ (MLP inputs' outputs + down projections' inputs + 2·(n_q +
    n_kv)·d_qk)``."""
    sharded = 0
    for group in model.layer_groups:  # (identical layers counted once, times their number)
        a = group.block.attention
        per_layer = 2 * (a.num_heads + a.num_kv_heads) * a.qk_head_dim
        for lin in group.block.linears:
            if lin.kind not in (OpKind.FFN, OpKind.EXPERT):
                continue
            if lin.stage == Stage.MLP_IN:
                per_layer += lin.out_features
            elif lin.stage == Stage.MLP_OUT:
                per_layer += lin.in_features
        sharded += per_layer * group.num_layers
    return NORM_PASSES * model.hidden_size * model.num_layers, sharded


def elementwise_bytes_per_token(model: ModelSpec, tensor_parallel: int) -> tuple[float, float]:
    """Bytes one rank of ``tensor_parallel`` moves per token in elementwise kernels, as
    (replicated, sharded): ``replicated × 2`` and ``sharded / tp × 2``
    (:func:`elementwise_elements`)."""
    require(tensor_parallel >= 1, f"tensor_parallel: must be >= 1, got {tensor_parallel}")
    replicated, sharded = elementwise_elements(model)
    return replicated * ACTIVATION_BYTES, sharded / tensor_parallel * ACTIVATION_BYTES
