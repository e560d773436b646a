"""LoRA adapters as modules of the model: ``W x + (α/r)·B A x`` with ``A: in → r``, ``B: r → out``.

:func:`with_lora` returns the model with two adapter matmuls beside every targeted linear
(same kind and stage), so parameter counts, FLOPs and weight bytes of adapters come from the
same module shapes as everything else. Train them alone with ``frozen=LORA_ONLY``.
"""

from dataclasses import replace
from fnmatch import fnmatch

from napkin.errors import NapkinError, require
from napkin.specs.model import ModelSpec
from napkin.specs.modules import Block, Linear

DEFAULT_TARGETS = ("attn/q", "attn/k", "attn/v", "attn/o", "attn/q_a", "attn/q_b", "attn/kv_a",
                   "attn/kv_b", "mlp/gate", "mlp/up", "mlp/down")
"""Every linear of attention and of the dense MLP (the question bank's "all linear layers")."""

LORA_ONLY = ("*", "!*.lora_a", "!*.lora_b")
"""``frozen`` patterns that leave only the adapters trainable."""


def adapter_params(in_features: int, out_features: int, rank: int) -> int:
    """Parameters of one adapter pair: ``r·(in + out)`` (4096² at r = 8: 65,536)."""
    return rank * (in_features + out_features)


def _adapt(block: Block, rank: int, targets: tuple[str, ...]) -> Block:
    linears: list[Linear] = []
    for lin in block.linears:
        linears.append(lin)
        if any(fnmatch(lin.name, t) for t in targets):
            linears += [Linear(f"{lin.name}.lora_a", lin.kind, lin.in_features, rank, False,
                               lin.stage),
                        Linear(f"{lin.name}.lora_b", lin.kind, rank, lin.out_features, False,
                               lin.stage)]
    return replace(block, linears=tuple(linears))


def with_lora(model: ModelSpec, rank: int, targets: tuple[str, ...] = DEFAULT_TARGETS
              ) -> ModelSpec:
    """``model`` with rank-``rank`` adapters on the linears matching ``targets`` (globs)."""
    require(rank >= 1, f"lora-rank: must be >= 1, got {rank}")
    blocks = tuple(_adapt(b, rank, targets) for b in model.blocks)
    if blocks == model.blocks:
        raise NapkinError(f"lora-targets: {', '.join(targets)} match no linear of {model.name}")
    return replace(model, name=f"{model.name}+lora{rank}", blocks=blocks)


def lora_params(model: ModelSpec) -> int:
    """Adapter parameters of a model built by :func:`with_lora` (0 for a plain model)."""
    return sum(lin.params for b in model.blocks for lin in b.linears
               if lin.name.endswith((".lora_a", ".lora_b")))
