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
