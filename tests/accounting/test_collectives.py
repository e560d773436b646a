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
