"""Real-time audio playback through a jitter buffer (chapter §3.3.3, Figure 3-19).

Audio is produced in blocks of ``block_s`` seconds. A block holds
``sample_rate_hz · block_s · channels · bytes_per_sample`` bytes (24 kHz mono 16-bit, 20 ms:
960 B). Block ``i`` (from 0) finishes capture at ``(i + 1)·block_s``, then is processed, sent and
carried by the network, so it arrives at

    ``arrival_i = (i + 1)·block_s + process_s + send_s + network_i``.

Playback starts ``buffer_s`` after the first arrival (the jitter buffer). The device then plays
blocks back to back, in order, by its own clock: block ``i`` is scheduled at
``start + i·d``, where ``d = block_s / device_clock_ratio`` is the wall time one block lasts
(a device clock running ``ratio`` times nominal speed plays audio ``ratio`` times faster). A block
plays as soon as both it has arrived and the previous block has finished:

    ``play_start_i = max(arrival_i, play_end_{i−1})``  (``play_end_{−1} = start``),
    ``late_i = max(0, arrival_i − ready_i)``  (``ready_i``: the time it would otherwise start),

so a late block leaves a gap (a stall) of ``late_i`` and shifts every later block by as much.

In the long run a buffer holding ``B`` seconds of audio, fed at ``r`` seconds of audio per second
(``r < 1``) and played at 1 s/s, empties after ``B / (1 − r)`` seconds. An interrupt ("stop
talking") is acted on at the device's next poll after the command reaches it.

All times are in seconds.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from napkin.errors import require

# Times this close count as equal: float rounding must not invent stalls or skip a poll.
_TOL_S = 1e-12


@dataclass(frozen=True)
class AudioFormat:
    """PCM audio: samples per second, channels, and bytes per sample (2 = 16-bit)."""

    sample_rate_hz: float = 24_000
    channels: int = 1
    bytes_per_sample: int = 2

    def __post_init__(self) -> None:
        require(0 < self.sample_rate_hz <= MAX_SAMPLE_RATE_HZ,
                f"sample-rate: must be in (0, {MAX_SAMPLE_RATE_HZ:g}] Hz, "
                f"got {self.sample_rate_hz}")
        require(isinstance(self.channels, int) and self.channels >= 1,
                f"channels: must be an integer >= 1, got {self.channels}")
        require(isinstance(self.bytes_per_sample, int) and self.bytes_per_sample >= 1,
                f"bytes-per-sample: must be an integer >= 1, got {self.bytes_per_sample}")

    def block_bytes(self, block_s: float) -> int:
        """Bytes in ``block_s`` seconds: ``round(sample_rate_hz · block_s) · channels ·
        bytes_per_sample`` (whole samples per channel)."""
        require(block_s > 0, f"block-ms: must be > 0 ms, got {block_s * 1e3:g}")
        return round(self.sample_rate_hz * block_s) * self.channels * self.bytes_per_sample


MAX_BLOCKS = 10_000
"""Most blocks one timeline lays out (each is a row of the output: 200 s of 20-ms audio)."""
MAX_PLAYBACK_S = 86_400.0
"""Longest block, delay or buffer a timeline takes (a day; sample counts stay integers)."""
MAX_SAMPLE_RATE_HZ = 1e7
"""Highest sample rate accepted (studio audio is 192 kHz)."""


@dataclass(frozen=True)
class PlaybackParams:
    """The chapter's pipeline: ``blocks`` blocks of ``block_s`` seconds; per block, model
    processing ``process_s``, send ``send_s`` and network delay ``network_s``, except for the
    blocks in ``network_overrides`` (pairs of block index from 0 and delay in seconds);
    ``buffer_s`` of startup buffer; ``device_clock_ratio`` is the playback device's clock speed
    relative to nominal (a block lasts ``block_s / device_clock_ratio`` of wall time)."""

    block_s: float = 0.020
    blocks: int = 8
    process_s: float = 0.012
    send_s: float = 0.001
    network_s: float = 0.005
    network_overrides: tuple[tuple[int, float], ...] = ((2, 0.050),)
    buffer_s: float = 0.040
    device_clock_ratio: float = 1.0
    audio: AudioFormat = field(default_factory=AudioFormat)

    def __post_init__(self) -> None:
        require(0 < self.block_s <= MAX_PLAYBACK_S,
                f"block-ms: must be in (0, {MAX_PLAYBACK_S * 1e3:g}] ms, "
                f"got {self.block_s * 1e3:g}")
        require(isinstance(self.blocks, int) and 1 <= self.blocks <= MAX_BLOCKS,
                f"blocks: must be an integer in [1, {MAX_BLOCKS:,}], got {self.blocks}")
        for name in ("process_s", "send_s", "network_s", "buffer_s"):  # --process-ms …
            value = getattr(self, name)
            require(0 <= value <= MAX_PLAYBACK_S, f"{name[:-2]}-ms: must be in [0, "
                    f"{MAX_PLAYBACK_S * 1e3:g}] ms, got {value * 1e3:g}")
        require(1e-3 <= self.device_clock_ratio <= 1e3,
                f"clock-ratio: must be in [0.001, 1000], got {self.device_clock_ratio}")
        indices = [i for i, _ in self.network_overrides]
        require(len(set(indices)) == len(indices),
                f"network: each block once, got blocks {[i + 1 for i in indices]}")
        for i, delay in self.network_overrides:
            require(0 <= i < self.blocks,
                    f"network: block must be in [1, {self.blocks}] (--blocks), got {i + 1}")
            require(0 <= delay <= MAX_PLAYBACK_S, f"network: delay must be in [0, "
                    f"{MAX_PLAYBACK_S * 1e3:g}] ms, got {delay * 1e3:g}")

    @property
    def play_s(self) -> float:
        """Wall time one block takes to play: ``block_s / device_clock_ratio``."""
        return self.block_s / self.device_clock_ratio

    @property
    def block_bytes(self) -> int:
        return self.audio.block_bytes(self.block_s)

    def network_delay_s(self, index: int) -> float:
        """Network delay of block ``index``: its override if it has one, else ``network_s``."""
        return dict(self.network_overrides).get(index, self.network_s)

    def arrival_s(self, index: int) -> float:
        """``(index + 1)·block_s + process_s + send_s + network delay of the block``."""
        return ((index + 1) * self.block_s + self.process_s + self.send_s
                + self.network_delay_s(index))


@dataclass(frozen=True)
class BlockPlay:
    """One block's times: capture end, arrival, scheduled and actual play, and the stall it
    caused (``late_s``: how long playback waited for it)."""

    index: int
    bytes: int
    capture_end_s: float
    arrival_s: float
    scheduled_s: float
    play_start_s: float
    play_end_s: float
    late_s: float

    @property
    def missed_slot(self) -> bool:
        """Arrived after its scheduled play time."""
        return self.arrival_s > self.scheduled_s + _TOL_S

    @property
    def shift_s(self) -> float:
        """How much later than scheduled it plays: ``play_start_s − scheduled_s``."""
        return self.play_start_s - self.scheduled_s


@dataclass(frozen=True)
class Timeline:
    """Every block's playback, and the planned start ``start_s`` (first arrival + buffer)."""

    params: PlaybackParams
    start_s: float
    blocks: tuple[BlockPlay, ...]

    @property
    def first_arrival_s(self) -> float:
        """Earliest arrival of any block (the jitter buffer starts counting then)."""
        return min(b.arrival_s for b in self.blocks)

    @property
    def first_play_s(self) -> float:
        return self.blocks[0].play_start_s

    @property
    def late_blocks(self) -> int:
        """Blocks that arrived after their scheduled play time."""
        return sum(b.missed_slot for b in self.blocks)

    @property
    def gaps(self) -> int:
        """Stalls: blocks playback had to wait for."""
        return sum(b.late_s > 0 for b in self.blocks)

    @property
    def total_stall_s(self) -> float:
        return sum(b.late_s for b in self.blocks)

    @property
    def end_s(self) -> float:
        """When the last block finishes playing."""
        return self.blocks[-1].play_end_s


def playback_timeline(params: PlaybackParams | None = None) -> Timeline:
    """Play ``params.blocks`` blocks through the jitter buffer (defaults: the chapter's Figure
    3-19). ``start = min_i arrival_i + buffer_s``; ``scheduled_i = start + i·d`` and
    ``play_start_i = max(arrival_i, play_end_{i−1})`` with ``d = block_s / device_clock_ratio``;
    gaps shorter than a picosecond are float rounding and count as none."""
    p = params or PlaybackParams()
    return _play(p, [p.arrival_s(i) for i in range(p.blocks)])


def timeline_from_arrivals(arrivals_s: Sequence[float], block_s: float, buffer_s: float,
                           audio: AudioFormat | None = None) -> Timeline:
    """The same playback for logged block arrival times (in playback order, seconds)."""
    require(len(arrivals_s) >= 1, "arrivals_s: give at least one block arrival")
    require(min(arrivals_s) >= 0, "arrivals_s: times must be >= 0 s")
    p = PlaybackParams(block_s=block_s, blocks=len(arrivals_s), process_s=0.0, send_s=0.0,
                       network_s=0.0, network_overrides=(), buffer_s=buffer_s,
                       audio=audio or AudioFormat())
    return _play(p, list(arrivals_s))


def _play(p: PlaybackParams, arrivals: list[float]) -> Timeline:
    start = min(arrivals) + p.buffer_s
    ready = start
    blocks = []
    for i, arrival in enumerate(arrivals):
        late = arrival - ready if arrival - ready > _TOL_S else 0.0
        play_start = arrival if late else ready
        blocks.append(BlockPlay(
            index=i, bytes=p.block_bytes, capture_end_s=(i + 1) * p.block_s, arrival_s=arrival,
            scheduled_s=start + i * p.play_s, play_start_s=play_start,
            play_end_s=play_start + p.play_s, late_s=late))
        ready = play_start + p.play_s
    return Timeline(params=p, start_s=start, blocks=tuple(blocks))


def buffer_drain_s(buffered_s: float, arrival_rate: float) -> float | None:
    """Seconds until a buffer holding ``buffered_s`` seconds of audio empties when playback uses
    1 s of audio per second and arrivals supply ``arrival_rate`` seconds of audio per second:
    ``buffered_s / (1 − arrival_rate)``. ``None`` when ``arrival_rate >= 1`` (it never
    empties)."""
    require(buffered_s >= 0, f"buffered-s: must be >= 0 s, got {buffered_s}")
    require(arrival_rate >= 0, f"arrival-rate: must be >= 0 s of audio per s, got {arrival_rate}")
    if arrival_rate >= 1:
        return None
    return buffered_s / (1 - arrival_rate)


@dataclass(frozen=True)
class Interruption:
    """When an interrupt takes effect: the command is issued at ``command_s``, reaches the
    device at ``reaches_device_s`` and mutes it at ``muted_s`` (the next poll). Stopping the
    model's compute and freeing its state travel on a separate control path; ``None`` when not
    modelled."""

    command_s: float
    reaches_device_s: float
    muted_s: float
    stop_compute_s: float | None
    free_state_s: float | None

    @property
    def latency_s(self) -> float:
        """Perceived latency of the interrupt: ``muted_s − command_s``."""
        return self.muted_s - self.command_s

    @property
    def poll_wait_s(self) -> float:
        """Time the command waits at the device for a poll: ``muted_s − reaches_device_s``."""
        return self.muted_s - self.reaches_device_s


def interruption(
    command_s: float = 0.123,
    control_delay_s: float = 0.005,
    poll_interval_s: float = 0.010,
    poll_phase_s: float = 0.0,
    stop_compute_delay_s: float | None = None,
    free_state_delay_s: float | None = None,
) -> Interruption:
    """Time an interrupt. The command reaches the device at ``c = command_s + control_delay_s``;
    the device polls at ``poll_phase_s + k·poll_interval_s`` (integer ``k >= 0``) and mutes at the
    first poll at or after ``c``. Compute stops at ``command_s + stop_compute_delay_s`` and state
    is freed at ``command_s + free_state_delay_s`` (each ``None`` if its delay is not given).
    Defaults: the chapter's example, 123 ms + 5 ms = 128 ms, muted at the 130 ms poll."""
    # messages name the CLI's options (milliseconds) the values came from
    for name, value in (("command-ms", command_s), ("control-ms", control_delay_s),
                        ("phase-ms", poll_phase_s), ("stop-compute-ms", stop_compute_delay_s),
                        ("free-state-ms", free_state_delay_s)):
        if value is not None:
            require(value >= 0, f"{name}: must be >= 0 ms, got {value * 1e3:g}")
    require(poll_interval_s > 0, f"poll-ms: must be > 0 ms, got {poll_interval_s * 1e3:g}")
    reaches = command_s + control_delay_s
    k = max(0, math.ceil((reaches - poll_phase_s - _TOL_S) / poll_interval_s))
    return Interruption(
        command_s=command_s,
        reaches_device_s=reaches,
        muted_s=poll_phase_s + k * poll_interval_s,
        stop_compute_s=None if stop_compute_delay_s is None else command_s + stop_compute_delay_s,
        free_state_s=None if free_state_delay_s is None else command_s + free_state_delay_s,
    )
