"""Jitter-buffer playback, buffer drain and interrupts (chapter §3.3.3, Figure 3-19)."""

import pytest

from napkin.errors import NapkinError
from napkin.media.playback import (
    AudioFormat,
    PlaybackParams,
    buffer_drain_s,
    interruption,
    playback_timeline,
)
from napkin.report.media_plots import plot_playback

MS = 1e-3


def test_block_bytes():
    # 24,000 samples/s · 0.020 s · 1 channel · 2 bytes = 960 B
    assert AudioFormat().block_bytes(0.020) == 960
    assert AudioFormat(48_000, 2, 2).block_bytes(0.010) == 48_000 * 0.010 * 2 * 2
    assert PlaybackParams().block_bytes == 960


def test_chapter_timeline_with_40_ms_buffer():
    t = playback_timeline()
    b = t.blocks
    assert len(b) == 8 and all(x.bytes == 960 for x in b)
    assert b[0].capture_end_s == pytest.approx(20 * MS)
    assert t.first_arrival_s == pytest.approx((20 + 12 + 1 + 5) * MS)  # 38 ms
    assert t.first_play_s == pytest.approx((38 + 40) * MS)  # 78 ms
    # block 2: captured by 60 ms, 50 ms on the network: 60 + 12 + 1 + 50 = 123 ms
    assert b[2].arrival_s == pytest.approx(123 * MS)
    assert b[2].scheduled_s == pytest.approx((78 + 2 * 20) * MS)  # 118 ms
    assert b[2].late_s == pytest.approx(5 * MS)
    assert b[2].play_start_s == pytest.approx(123 * MS)
    assert (t.late_blocks, t.gaps) == (1, 1)
    assert t.total_stall_s == pytest.approx(5 * MS)
    # blocks 0 and 1 play on schedule; every later block waits its turn, 5 ms late
    for x in b[:2]:
        assert (x.late_s, x.shift_s) == (0.0, pytest.approx(0.0))
    for x in b[2:]:
        assert x.shift_s == pytest.approx(5 * MS)
        assert x.play_end_s - x.play_start_s == pytest.approx(20 * MS)
    for x in b[3:]:
        assert x.late_s == 0.0
        assert x.arrival_s == pytest.approx(((x.index + 1) * 20 + 18) * MS)
    assert t.end_s == pytest.approx((78 + 8 * 20 + 5) * MS)  # 243 ms


def test_60_ms_buffer_absorbs_the_late_block():
    t = playback_timeline(PlaybackParams(buffer_s=0.060))
    assert t.first_play_s == pytest.approx(98 * MS)  # 38 + 60
    assert t.blocks[2].scheduled_s == pytest.approx(138 * MS)  # 123 ms arrival is in time
    assert (t.late_blocks, t.gaps, t.total_stall_s) == (0, 0, 0.0)
    assert t.end_s == pytest.approx((98 + 160) * MS)


def test_zero_buffer_steady_network_plays_without_float_stalls():
    # every block arrives exactly when the previous one ends: no gap, not even 1e-17 s
    t = playback_timeline(PlaybackParams(buffer_s=0.0, network_overrides=(), blocks=50))
    assert (t.gaps, t.late_blocks, t.total_stall_s) == (0, 0, 0.0)


def test_fast_device_clock_drains_the_buffer():
    # ratio 1.25: a 20 ms block plays in 16 ms while blocks arrive every 20 ms, so the 40 ms
    # buffer loses 4 ms per block: blocks 0-10 are fine, block 11 (and each after) stalls
    p = PlaybackParams(network_overrides=(), blocks=14, device_clock_ratio=1.25)
    t = playback_timeline(p)
    assert p.play_s == pytest.approx(16 * MS)
    assert t.blocks[1].scheduled_s == pytest.approx((78 + 16) * MS)
    assert t.blocks[10].late_s == 0.0
    assert t.blocks[11].late_s == pytest.approx(4 * MS)  # arrives 258, slot 78 + 11·16 = 254
    assert t.gaps == 3
    assert t.total_stall_s == pytest.approx(4 * MS + 4 * MS + 4 * MS)


def test_late_first_block_is_measured_from_earliest_arrival():
    # block 0 takes 100 ms on the network; block 1 arrives first, at 40 + 18 = 58 ms
    t = playback_timeline(PlaybackParams(network_overrides=((0, 0.100),)))
    assert t.first_arrival_s == pytest.approx(58 * MS)
    assert t.start_s == pytest.approx(98 * MS)
    assert t.blocks[0].arrival_s == pytest.approx(133 * MS)
    assert t.first_play_s == pytest.approx(133 * MS)
    assert t.blocks[0].late_s == pytest.approx(35 * MS)
    assert t.gaps == 1


def test_buffer_drain():
    assert buffer_drain_s(0.3, 0.9) == pytest.approx(3.0)  # 0.3 / (1 − 0.9)
    assert buffer_drain_s(0.3, 0.0) == pytest.approx(0.3)
    assert buffer_drain_s(0.3, 1.0) is None
    assert buffer_drain_s(0.3, 1.2) is None


def test_interrupt_mutes_at_next_poll():
    i = interruption()
    assert i.reaches_device_s == pytest.approx(128 * MS)  # 123 + 5
    assert i.muted_s == pytest.approx(130 * MS)  # polls every 10 ms: 120, 130, ...
    assert i.latency_s == pytest.approx(7 * MS)
    assert i.poll_wait_s == pytest.approx(2 * MS)
    assert i.stop_compute_s is None and i.free_state_s is None


def test_interrupt_poll_phase_and_exact_hit():
    # polls at 3, 13, ..., 123, 133 ms: the 128 ms command waits for 133 ms
    i = interruption(poll_phase_s=0.003)
    assert i.muted_s == pytest.approx(133 * MS)
    assert i.latency_s == pytest.approx(10 * MS)
    # a command reaching the device exactly at a poll is acted on at that poll
    assert interruption(command_s=0.125).muted_s == pytest.approx(130 * MS)
    # a first poll later than the command: k = 0
    assert interruption(poll_phase_s=0.200).muted_s == pytest.approx(200 * MS)


def test_interrupt_stop_compute_and_free_state():
    i = interruption(stop_compute_delay_s=0.015, free_state_delay_s=0.040)
    assert i.stop_compute_s == pytest.approx(138 * MS)
    assert i.free_state_s == pytest.approx(163 * MS)
    assert i.muted_s == pytest.approx(130 * MS)  # separate path: muting is unchanged


# messages name the CLI option each value comes from (napkin media jitter / interrupt / drain)
@pytest.mark.parametrize(("make", "field"), [
    (lambda: AudioFormat(sample_rate_hz=0), "sample-rate"),
    (lambda: AudioFormat(channels=0), "channels"),
    (lambda: AudioFormat(bytes_per_sample=1.5), "bytes-per-sample"),
    (lambda: AudioFormat().block_bytes(0), "block-ms"),
    (lambda: PlaybackParams(block_s=0), "block-ms"),
    (lambda: PlaybackParams(blocks=0), "blocks"),
    (lambda: PlaybackParams(process_s=-1), "process-ms"),
    (lambda: PlaybackParams(send_s=-1), "send-ms"),
    (lambda: PlaybackParams(network_s=-0.001), "network-ms"),
    (lambda: PlaybackParams(buffer_s=-0.01), "buffer-ms"),
    (lambda: PlaybackParams(device_clock_ratio=0), "clock-ratio"),
    (lambda: PlaybackParams(network_overrides=((8, 0.05),)), "network"),
    (lambda: PlaybackParams(network_overrides=((-1, 0.05),)), "network"),
    (lambda: PlaybackParams(network_overrides=((1, -0.05),)), "network"),
    (lambda: PlaybackParams(network_overrides=((1, 0.05), (1, 0.06))), "network"),
    (lambda: buffer_drain_s(-1, 0.5), "buffered-s"),
    (lambda: buffer_drain_s(1, -0.5), "arrival-rate"),
    (lambda: interruption(command_s=-1), "command-ms"),
    (lambda: interruption(control_delay_s=-1), "control-ms"),
    (lambda: interruption(poll_interval_s=0), "poll-ms"),
    (lambda: interruption(poll_phase_s=-1), "phase-ms"),
    (lambda: interruption(stop_compute_delay_s=-1), "stop-compute-ms"),
    (lambda: interruption(free_state_delay_s=-1), "free-state-ms"),
])
def test_bad_inputs_name_the_field(make, field):
    with pytest.raises(NapkinError, match=rf"^{field}: "):
        make()


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_playback_writes_a_file(tmp_path, suffix):
    path = plot_playback(playback_timeline(), tmp_path / f"playback{suffix}")
    assert path.exists() and path.stat().st_size > 0


def test_logged_arrivals_play_like_the_modelled_pipeline():
    from napkin.media.playback import timeline_from_arrivals

    modelled = playback_timeline(PlaybackParams(buffer_s=0.040))
    logged = timeline_from_arrivals([b.arrival_s for b in modelled.blocks], 0.020, 0.040)
    assert [b.play_start_s for b in logged.blocks] == [b.play_start_s for b in modelled.blocks]
    assert (logged.first_play_s, logged.gaps) == (modelled.first_play_s, 1)
    assert logged.total_stall_s == pytest.approx(0.005)
    with pytest.raises(NapkinError, match="arrivals_s"):
        timeline_from_arrivals([], 0.020, 0.040)
