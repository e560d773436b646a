"""Backward operators (dX, dW) of a forward call, with frozen modules.

Each matmul's backward is two matmuls of the forward's size: dX (input gradient) and dW (weight
gradient). dW runs only for trainable modules; dX runs only where some trainable parameter sits
upstream (the embedding, an earlier layer, or an earlier stage of the same layer) — a frozen
prefix of the network needs no input gradients. Attention scores and values have no weights:
their backward is two matmuls of dX kind each (dQ and dK; dP and dV). Norms, the embedding
lookup and elementwise ops are not matmuls and cost 0 FLOPs here, as in the forward.
"""

from collections.abc import Iterable
from fnmatch import fnmatch

from napkin.accounting.forward import group_label
from napkin.accounting.ops import CallCost, Op, Pass
from napkin.specs.model import ModelSpec
from napkin.specs.modules import OpKind

_WEIGHTLESS = (OpKind.ATTN_SCORE, OpKind.ATTN_VALUE)


def is_frozen(module: str, frozen: Iterable[str]) -> bool:
    """Whether ``module`` (``"attn/q"``, ``"mlp/up"``, ``"embed"``, ``"lm_head"``…) is frozen by
    the glob patterns ``frozen`` (``"attn/*"``, ``"moe/experts/*"``); a pattern starting with
    ``!`` un-freezes what it matches, and the last matching pattern wins (as in .gitignore):
    ``("*", "!*.lora_*")`` freezes everything but LoRA adapters."""
    state = False
    for pattern in frozen:
        if pattern.startswith("!"):
            if fnmatch(module, pattern[1:]):
                state = False
        elif fnmatch(module, pattern):
            state = True
    return state


def backward(model: ModelSpec, fwd: CallCost, frozen: tuple[str, ...] = ()) -> CallCost:
    """Backward ops of ``fwd`` when modules matching ``frozen`` glob patterns do not train.

    With nothing frozen, backward FLOPs are exactly 2× forward (the chapter's convention).
    """

    def trains(op: Op) -> bool:
        return op.kind not in _WEIGHTLESS and not is_frozen(op.module, frozen)

    by_group: dict[str, list[Op]] = {}
    for op in fwd.ops:
        if op.layers:
            by_group.setdefault(op.name.split("/", 1)[0], []).append(op)
    # per group: does a trainable op sit at an earlier stage of the same layer?
    earlier_in_layer = {
        g: {op.name: any(trains(o) and o.stage < op.stage for o in ops) for op in ops}
        for g, ops in by_group.items()
    }
    group_trains = {g: any(trains(o) for o in ops) for g, ops in by_group.items()}

    dx_layers: dict[str, int] = {}  # op name -> layers in which its dX is needed
    upstream = not is_frozen("embed", frozen)
    for block in model.blocks:
        g = group_label(model, block)
        for op in by_group.get(g, ()):
            if upstream or earlier_in_layer[g][op.name]:
                dx_layers[op.name] = dx_layers.get(op.name, 0) + 1
        upstream = upstream or group_trains.get(g, False)

    out: list[Op] = []
    for op in fwd.ops:
        if op.kind in (OpKind.NORM, OpKind.EMBEDDING):
            continue
        if op.kind == OpKind.LM_HEAD:
            share = 1.0 if upstream else 0.0
        else:
            share = dx_layers.get(op.name, 0) / op.layers
        if share:
            factor = 2.0 if op.kind in _WEIGHTLESS else 1.0
            out.append(_like(op, Pass.BACKWARD_DX, factor * op.flops * share,
                             op.weight_bytes * share))
        if trains(op):
            out.append(_like(op, Pass.BACKWARD_DW, op.flops, 0.0))
    return CallCost(tuple(out))


def _like(op: Op, pass_: Pass, flops: float, weight_bytes: float) -> Op:
    return Op(op.name, op.module, op.kind, op.stage, op.layers, flops, weight_bytes,
              pass_=pass_)
