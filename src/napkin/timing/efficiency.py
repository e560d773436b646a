"""Achieved shares of peak: the MFU and MBU a roofline time divides by, and a fixed overhead
per call, with the range a user may give them."""

from dataclasses import dataclass

from napkin.errors import require

DEFAULT_MFU = 1.0
DEFAULT_MBU = 1.0


MIN_EFFICIENCY = 1e-3
"""Smallest MFU/MBU accepted: below a tenth of a percent of peak, times overflow (``5e-324``
makes every step infinite) and no real deployment runs there."""


def check_efficiency(value: float, field: str) -> None:
    """Refuse an achieved share of peak (MFU, MBU) outside ``[MIN_EFFICIENCY, 1]``, naming
    ``field`` (the user's option): more than the peak is a unit mistake, not a deployment."""
    require(MIN_EFFICIENCY <= value <= 1,
            f"{field}: must be in [{MIN_EFFICIENCY:g}, 1], got {value}")


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of peak compute (``mfu``) and bandwidth (``mbu``), and a fixed
    per-call overhead in seconds (kernel launches, scheduling)."""

    mfu: float = DEFAULT_MFU
    mbu: float = DEFAULT_MBU
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        check_efficiency(self.mfu, "mfu")
        check_efficiency(self.mbu, "mbu")
        require(self.overhead_s >= 0,
                f"overhead-ms: must be >= 0 ms, got {self.overhead_s * 1e3:g}")
