"""Accounting: the operator list of one model call — FLOPs, weight bytes, KV bytes per op.

The chapter's conventions hold here and nowhere else (DESIGN.md): one multiply-add = 2 FLOPs;
causal attention counts query–key pairs including the diagonal; the LM head runs only at read-out
positions; a decode step reads every weight except the embedding table, the KV of every cached
token, and writes the KV of its new token; backward of a matmul = dX + dW, each equal to forward.
"""

from napkin.accounting.backward import backward
from napkin.accounting.batch import Batch, BatchShape, Segment
from napkin.accounting.forward import Precision, forward
from napkin.accounting.ops import CallCost, Op

__all__ = ["Batch", "BatchShape", "CallCost", "Op", "Precision", "Segment", "backward", "forward"]
