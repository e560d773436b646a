"""``Op`` rows and their sum, ``CallCost``."""

from dataclasses import dataclass
from enum import StrEnum

from napkin.specs.modules import OpKind

__all__ = ["CallCost", "Op", "OpKind", "Pass"]


class Pass(StrEnum):
    FORWARD = "forward"
    BACKWARD_DX = "backward-dx"
    BACKWARD_DW = "backward-dw"


@dataclass(frozen=True)
class Op:
    """One operator of a call, summed over the ``layers`` layers it stands for.

    ``name`` is ``"<layer group>/<module>"`` (``"layers/attn/q"``, ``"moe/moe/experts/up"``),
    or ``"embed"``, ``"final_norm"``, ``"lm_head"``. ``module`` is the name without the group,
    ``stage`` its place in the block's data flow (see :class:`napkin.specs.modules.Stage`).
    """

    name: str
    module: str
    kind: OpKind
    stage: int
    layers: int
    flops: float
    weight_bytes: float = 0.0
    kv_read_bytes: float = 0.0
    kv_write_bytes: float = 0.0
    pass_: Pass = Pass.FORWARD
    sixteen_bit: bool = False
    """A matmul of a part the checkpoint keeps in BF16 while the rest computes in a narrower
    format (``Precision.unquantized``): it runs at the 16-bit rate."""

    @property
    def bytes(self) -> float:
        """Bytes moved from/to memory: weights read, KV read and written."""
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes


@dataclass(frozen=True)
class CallCost:
    """The operator list of one call; totals are sums, never stored separately."""

    ops: tuple[Op, ...]

    @property
    def flops(self) -> float:
        return sum(op.flops for op in self.ops)

    @property
    def weight_bytes(self) -> float:
        return sum(op.weight_bytes for op in self.ops)

    @property
    def kv_read_bytes(self) -> float:
        return sum(op.kv_read_bytes for op in self.ops)

    @property
    def kv_write_bytes(self) -> float:
        return sum(op.kv_write_bytes for op in self.ops)

    @property
    def bytes(self) -> float:
        """Weights read + KV read + KV written."""
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def sixteen_bit_flops(self) -> float:
        """FLOPs of the matmuls that run at the 16-bit rate (``Op.sixteen_bit``)."""
        return sum(op.flops for op in self.ops if op.sixteen_bit)

    @property
    def parts(self) -> tuple[float, float, float, float, float]:
        """(dense FLOPs, attention FLOPs, weight bytes, KV bytes, 16-bit dense FLOPs):
        attention is the query–key and attention–value ops; dense every other op at the weight
        format's rate, the last entry those at the 16-bit rate (``sixteen_bit``); KV is read +
        written."""
        attention = sum(op.flops for op in self.ops
                        if op.kind in (OpKind.ATTN_SCORE, OpKind.ATTN_VALUE))
        sixteen = self.sixteen_bit_flops
        return (self.flops - attention - sixteen, attention, self.weight_bytes,
                self.kv_read_bytes + self.kv_write_bytes, sixteen)
