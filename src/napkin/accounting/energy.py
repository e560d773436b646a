"""Energy of serving: a GPU's power from its TDP and the phase it runs, joules per token.

A GPU draws a share of its board power (catalog ``tdp_w``) that depends on what it does:

- **prefill** (compute-bound): ``prefill_power_frac`` = 1.0 — a compute-bound phase runs into the
  board's power limit;
- **decode** (memory-bound): ``decode_power_frac`` = 0.43 — on an H200 (700 W), decode drew
  137–300 W across GQA, MLA, Gated DeltaNet and Mamba2 models, never reaching the cap
  (Ma, Afzal, Eitzinger, Wellein, "The Illusion of Power Capping in LLM Decode",
  arXiv:2605.11999, May 2026): 300/700 = 0.43, the upper end, at production batch sizes;
- **idle** (allocated, nothing scheduled): ``idle_power_frac`` = 0.10 — idle H100 80GB HBM3 boards
  read 69–72 W of 700 W in public ``nvidia-smi`` logs (0 MiB used, 0 % utilisation).

Energy over a span with ``prefill_s`` and ``decode_s`` busy seconds per GPU::

    E = GPUs · TDP · (prefill_s · prefill_power_frac + decode_s · decode_power_frac
                      + idle_s · idle_power_frac)

and, facility-wide, E · PUE (``pue`` = 1: the boards alone). kWh = J / 3.6e6; energy per
million output tokens = E / output tokens · 10⁶; its cost = kWh · $/kWh, given by the user
(no default price). All three shares are inputs.
"""

from dataclasses import dataclass

from napkin.errors import NapkinError, require
from napkin.specs.hardware import Accelerator

J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class PowerModel:
    """Shares of TDP drawn per phase (module docstring), the facility's PUE and the price."""

    prefill_power_frac: float = 1.0
    decode_power_frac: float = 0.43
    idle_power_frac: float = 0.10
    pue: float = 1.0
    usd_per_kwh: float | None = None
    """$ per kWh at the meter; None: energy in kWh only."""

    def __post_init__(self) -> None:
        for name in ("prefill_power_frac", "decode_power_frac", "idle_power_frac"):
            v = getattr(self, name)
            require(0 <= v <= 1.5, f"{name.replace('_', '-')}: must be a share of the board "
                                   f"power in [0, 1.5], got {v}")
        require(1 <= self.pue <= 5, f"pue: must be in [1, 5], got {self.pue}")
        require(self.usd_per_kwh is None or 0 <= self.usd_per_kwh <= 100,
                f"usd-per-kwh: must be in [0, 100] $/kWh, got {self.usd_per_kwh}")


DEFAULT_POWER = PowerModel()
"""The module docstring's shares, PUE 1, no price."""


def tdp_w(acc: Accelerator) -> float:
    """The accelerator's board power, W; an error naming the GPU where the catalog has none."""
    if acc.tdp_watts is None:
        raise NapkinError(f"gpu: {acc.id} has no published board power (tdp_w); energy "
                          "needs one")
    return acc.tdp_watts


@dataclass(frozen=True)
class Energy:
    """Energy of ``gpus`` GPUs over a span, and the output tokens it served."""

    joules: float
    output_tokens: float
    span_s: float
    gpus: int
    model: PowerModel

    @property
    def kwh(self) -> float:
        return self.joules / J_PER_KWH

    @property
    def mean_power_w(self) -> float:
        """Mean draw of all the GPUs together (× PUE), W."""
        return self.joules / self.span_s if self.span_s > 0 else 0.0

    @property
    def kwh_per_m_output_tokens(self) -> float | None:
        return self.kwh / self.output_tokens * 1e6 if self.output_tokens > 0 else None

    @property
    def usd_per_m_output_tokens(self) -> float | None:
        k = self.kwh_per_m_output_tokens
        return None if k is None or self.model.usd_per_kwh is None else k * self.model.usd_per_kwh

    @property
    def usd_per_hour(self) -> float | None:
        """Energy's $/hour at the mean draw (None without a price)."""
        if self.model.usd_per_kwh is None:
            return None
        return self.mean_power_w / 1e3 * self.model.usd_per_kwh


def energy(acc: Accelerator, gpus: int, prefill_s: float, decode_s: float, span_s: float,
           output_tokens: float, model: PowerModel = DEFAULT_POWER) -> Energy:
    """``gpus`` GPUs each busy ``prefill_s`` on prefill and ``decode_s`` on decode within
    ``span_s`` (idle the rest; busy time beyond the span counts no idle): the module
    docstring's E."""
    idle = max(span_s - prefill_s - decode_s, 0.0)
    m = model
    per_gpu = tdp_w(acc) * (prefill_s * m.prefill_power_frac + decode_s * m.decode_power_frac
                            + idle * m.idle_power_frac)
    return Energy(gpus * per_gpu * model.pue, output_tokens,
                  max(span_s, prefill_s + decode_s), gpus, model)
