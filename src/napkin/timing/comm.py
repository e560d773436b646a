"""The communication of a step in a parallel layout: the attention group's all-reduces and
the expert-parallel all-to-alls, in seconds over NVLink within a node and the NICs across."""

from dataclasses import dataclass, field

from napkin.accounting.collectives import parallel_collectives
from napkin.accounting.forward import Precision
from napkin.accounting.ranks import RankCost
from napkin.specs.hardware import Accelerator
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec

GPUS_PER_NODE = 8
"""GPUs that share a node's NVLink domain (an HGX/DGX H100, H200 or B200 board)."""
INTERNODE_BYTES_PER_S = 50e9
"""Per-GPU network bandwidth per direction between nodes: one 400 Gb/s NIC per GPU
(ConnectX-7 InfiniBand/RoCE on DGX H100/H200/B200), 50 GB/s."""


def nvlink_domain_of(acc: Accelerator) -> int:
    """GPUs that share ``acc``'s NVLink domain: the catalog's figure where it names one
    (GB200 NVL72: 72), else :data:`GPUS_PER_NODE`."""
    return acc.nvlink_domain or GPUS_PER_NODE

@dataclass(frozen=True)
class LayoutComm:
    """The communication of a step in a :class:`~napkin.specs.layout.ParallelLayout`:

    - the attention group's all-reduces (tp_a > 1): ``count·latency + bytes/token·(T/dp_a)/link``
      (:func:`~napkin.accounting.collectives.parallel_collectives` over tp_a ranks);
    - the all-to-alls (data-parallel attention): per MoE layer a dispatch and a combine,
      ``max(B·s_in/link, B·s_out/nic) + 2·latency`` with B = :meth:`RankCost.alltoall_bytes`,
      s_in = (g − 1)/(N − 1) of the sends within a node of g = min(N, ``gpus_per_node``) GPUs and
      s_out = (N − g)/(N − 1) over the GPU's NIC (``internode_bytes_per_s``), and once a step
      ``alltoall_step_s``.

    ``latency_s`` is an all-reduce's fixed time, ``alltoall_latency_s`` a dispatch's or a
    combine's, ``alltoall_step_s`` a step's that runs them (the ranks' wait for the slowest,
    host work; a fitted profile's ``alltoall_step``, else 0); ``alltoall_link_bytes_per_s`` the
    link the all-to-alls see within a node (``link_bytes_per_s``, the all-reduces', unless a
    fitted profile scales them apart).
    """

    cost: RankCost
    link_bytes_per_s: float
    internode_bytes_per_s: float
    gpus_per_node: int
    latency_s: float
    allreduces: int
    allreduce_bytes_per_token: float
    alltoall_latency_s: float
    alltoall_link_bytes_per_s: float
    alltoall_step_s: float = 0.0
    _seconds: dict[float, tuple[float, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False)

    @classmethod
    def of(cls, model: ModelSpec, precision: Precision, layout: ParallelLayout,
           link_bytes_per_s: float = 64e9, latency_s: float = 10e-6,
           internode_bytes_per_s: float = INTERNODE_BYTES_PER_S,
           gpus_per_node: int = GPUS_PER_NODE, alltoall_latency_s: float | None = None,
           alltoall_link_bytes_per_s: float | None = None,
           alltoall_step_s: float = 0.0) -> "LayoutComm":
        """``alltoall_latency_s`` and ``alltoall_link_bytes_per_s``: None for the all-reduces'
        ``latency_s`` and ``link_bytes_per_s``."""
        count, per_token = parallel_collectives(model, layout.attention_tp)
        return cls(RankCost.of(model, precision, layout), link_bytes_per_s,
                   internode_bytes_per_s, gpus_per_node, latency_s, count, per_token,
                   latency_s if alltoall_latency_s is None else alltoall_latency_s,
                   link_bytes_per_s if alltoall_link_bytes_per_s is None
                   else alltoall_link_bytes_per_s, alltoall_step_s)

    def alltoalls(self, tokens: float) -> int:
        """All-to-alls of a step: a dispatch and a combine per MoE layer when tokens cross
        ranks, else none."""
        cost = self.cost
        return 2 * cost.moe_layers if cost.alltoall_bytes(tokens) else 0

    def seconds(self, tokens: float) -> tuple[float, float]:
        """(all-reduce seconds, all-to-all seconds) of a step of ``tokens`` tokens (the latter
        with ``alltoall_step_s`` where it runs any)."""
        hit = self._seconds.get(tokens)
        if hit is not None:
            return hit
        cost = self.cost
        allreduce = 0.0
        if self.allreduces:
            allreduce = (self.allreduces * self.latency_s + self.allreduce_bytes_per_token
                         * cost.rank_tokens(tokens) / self.link_bytes_per_s)
        dispatch, combine = self.layer_alltoall_s(tokens)
        a2a = cost.moe_layers * (dispatch + combine)
        out = self._seconds[tokens] = (allreduce, a2a + self.alltoall_step_s if a2a else 0.0)
        return out

    def layer_alltoall_s(self, tokens: float) -> tuple[float, float]:
        """(dispatch seconds, combine seconds) of one MoE layer of ``tokens`` tokens: the
        layer's link time ``max(B·s_in/link, B·s_out/nic)`` split by the two's bytes
        (:meth:`RankCost.dispatch_share`), each plus ``alltoall_latency_s``; (0, 0) when no
        token crosses ranks."""
        cost = self.cost
        per_layer = cost.alltoall_bytes(tokens)
        if not per_layer:
            return 0.0, 0.0
        n = cost.layout.ranks
        g = min(n, self.gpus_per_node)
        inside = per_layer * (g - 1) / (n - 1) / self.alltoall_link_bytes_per_s
        outside = per_layer * (n - g) / (n - 1) / self.internode_bytes_per_s
        link = outside if outside > inside else inside
        share = cost.dispatch_share()
        return (link * share + self.alltoall_latency_s,
                link * (1 - share) + self.alltoall_latency_s)
