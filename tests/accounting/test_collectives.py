"""Ring collectives: bytes per device, by hand."""

import pytest

from napkin.accounting.collectives import ring_allreduce_bytes, ring_gather_bytes
from napkin.errors import NapkinError


def test_ring_volumes():
    assert ring_gather_bytes(8e9, 8) == 7e9  # 7/8 of the buffer
    assert ring_allreduce_bytes(8e9, 8) == 14e9  # reduce-scatter + all-gather
    assert ring_allreduce_bytes(1e9, 1) == 0  # nothing to exchange alone
    with pytest.raises(NapkinError, match="devices"):
        ring_gather_bytes(1.0, 0)


def test_tensor_parallel_allreduce_bytes_per_token_by_hand():
    """Qwen3-32B (64 layers, hidden 5120) on 4 devices: 128 all-reduces per forward, each
    sending 2·3/4 of 5120 × 2 B = 15,360 B per token: 1,966,080 B per token. One device: 0."""
    from napkin.accounting.collectives import tp_allreduce_bytes_per_token, tp_allreduces

    assert tp_allreduces(64, 4) == 128 and tp_allreduces(64, 1) == 0
    assert tp_allreduce_bytes_per_token(5120, 64, 4) == 128 * 15_360 == 1_966_080
    assert tp_allreduce_bytes_per_token(5120, 64, 1) == 0


def test_an_allreduce_past_one_nvlink_domain_is_hierarchical_by_hand():
    """16 H100 over 2 nodes of 8 (450 GB/s NVLink, a 50 GB/s NIC a GPU): a B-byte all-reduce
    reduce-scatters and all-gathers within each node, 2·7/8·B over NVLink, and all-reduces
    each GPU's B/8 across the 2 nodes, 2·1/2·B/8 over its NIC; as one ring link (the ring's
    2·15/16·B over it) that is 1.875 / (1.75/450 + 0.125/50) GB/s = 293.478 GB/s. Within one
    domain the link itself; one GPU a domain: the NIC; 32 GPUs over 4 nodes: 1.9375 /
    (1.75/450 + 0.1875/50) GB/s = 253.636 GB/s."""
    from napkin.accounting.collectives import allreduce_link_bytes_per_s as link
    from napkin.accounting.collectives import two_level_gather_bytes

    # an 8 GB gather over 16 ranks: 7/8 of it within the node, 1/2 of a rank's 1 GB across
    assert two_level_gather_bytes(8e9, 16, 8) == (7e9, 0.5e9)
    assert two_level_gather_bytes(8e9, 8, 8) == (7e9, 0.0)

    assert link(16, 8, 450e9, 50e9) == pytest.approx(1.875 / (1.75 / 450e9 + 0.125 / 50e9))
    assert link(16, 8, 450e9, 50e9) == pytest.approx(293.478e9, rel=1e-5)
    assert link(32, 8, 450e9, 50e9) == pytest.approx(253.636e9, rel=1e-5)
    assert link(8, 8, 450e9, 50e9) == link(16, 72, 450e9, 50e9) == 450e9
    assert link(4, 1, 450e9, 50e9) == pytest.approx(50e9)
    with pytest.raises(NapkinError, match="domain"):
        link(16, 0, 450e9, 50e9)
