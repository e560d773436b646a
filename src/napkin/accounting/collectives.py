"""Bytes each device sends in ring collectives over n devices.

A ring reduce-scatter or all-gather of a B-byte buffer moves ``(n − 1)/n·B`` per device; an
all-reduce is the two in sequence, ``2·(n − 1)/n·B``.
"""

from napkin.errors import require


def ring_gather_bytes(buffer_bytes: float, devices: int) -> float:
    """Reduce-scatter or all-gather: ``(n − 1)/n·B`` bytes per device."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    return (devices - 1) / devices * buffer_bytes


def ring_allreduce_bytes(buffer_bytes: float, devices: int) -> float:
    """All-reduce (reduce-scatter + all-gather): ``2·(n − 1)/n·B`` bytes per device."""
    return 2 * ring_gather_bytes(buffer_bytes, devices)
