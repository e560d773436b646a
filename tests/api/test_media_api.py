"""The public API of ``napkin media``: same answers as the CLI, typed values, the chapter's
numbers."""

import json

import pytest

from napkin.api.media import (
    media_audio,
    media_diffusion,
    media_drain,
    media_interrupt,
    media_jitter,
    media_vision,
)
from napkin.errors import NapkinError
from napkin.units import MiB


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_vision_four_images(cli):
    """§3.3.1: four 640×640 images + 400 text tokens on Qwen3-VL-4B (patch 16, merge 2,
    out_hidden_size 2560, final + 3 DeepStack mergers; 36 layers × 8 KV heads × 128)."""
    r = media_vision(images=[(640, 640)] * 4, text_tokens=400)
    assert r.data == _json(cli, "media", "vision", *["--image", "640x640"] * 4,
                           "--text-tokens", "400")
    n_v = 640 * 640 // (16**2 * 2**2)
    assert [c.tokens for c in r.value["images"]] == [n_v] * 4 == [400] * 4
    prompt = r.value["prompt"]
    assert prompt.ec_bytes == 4 * n_v * 2560 * 4 * 2 == 31.25 * MiB
    kv_per_token = 2 * 36 * 8 * 128 * 2
    assert prompt.kv_bytes == (4 * n_v + 400) * kv_per_token == (225 + 56.25) * MiB
    assert r.value["encoder_time_s"] is None
    timed = media_vision(images=[(640, 640)], gpu="h100-sxm", mfu=0.5)
    assert timed.data == _json(cli, "media", "vision", "--gpu", "h100-sxm", "--mfu", "0.5")
    with pytest.raises(NapkinError, match=r"^image:"):
        media_vision(images=[(0, 640)])


def test_diffusion_qwen_image(cli):
    r = media_diffusion()
    assert r.data == _json(cli, "media", "diffusion")
    g = r.value
    assert g.positions == (1024 // 8 // 2) ** 2  # VAE 8, DiT patch 2
    assert g.forwards == 50 * 2  # true CFG: two branches per step
    assert round(g.flops / 1e15, 3) == 7.830  # chapter: ≈ 7.830 × 10¹⁵
    one = media_diffusion(size=(512, 512), true_cfg=False, gpu="h100-sxm", mfu=0.4)
    assert one.data == _json(cli, "media", "diffusion", "--size", "512x512", "--no-cfg",
                             "--gpu", "h100-sxm", "--mfu", "0.4")
    assert one.value.forwards == 50
    with pytest.raises(NapkinError, match=r"^size:"):
        media_diffusion(size=(1000, 1000))


def test_audio_slow_fast(cli):
    r = media_audio()
    assert r.data == _json(cli, "media", "audio")
    assert r.value.frames_per_s == 44_100 / 2_048
    # one slow + 10 fast forwards per frame
    assert r.value.forwards_per_audio_s == pytest.approx(11 * 44_100 / 2_048)
    with pytest.raises(NapkinError, match=r"^codebooks:"):
        media_audio(codebooks=0)


def test_jitter_chapter_timeline(cli, tmp_path):
    """Figure 3-19: blocks of 20 ms arrive 12 + 1 + 5 ms after capture; block 3 is 50 ms late
    on the network."""
    r = media_jitter()
    assert r.data == _json(cli, "media", "jitter")
    assert media_jitter(network={3: 50}).data == r.data
    t40, t60 = r.value
    assert t40.first_play_s == pytest.approx((20 + 12 + 1 + 5 + 40) / 1e3)  # 78 ms
    # block 3 arrives at 3·20 + 12 + 1 + 50 = 123 ms, scheduled at 78 + 2·20 = 118 ms
    assert (t40.gaps, t40.total_stall_s) == (1, pytest.approx(0.005))
    assert (t60.gaps, t60.total_stall_s) == (0, 0)  # 138 ms slot: in time
    assert t40.params.block_bytes == 24_000 * 20 // 1000 * 2  # 960 B of 16-bit mono
    r.plot(tmp_path / "j.png")
    assert (tmp_path / "j-40ms.png").exists() and (tmp_path / "j-60ms.png").exists()
    media_jitter(buffer_ms=40).plot(tmp_path / "one.svg")
    assert (tmp_path / "one.svg").stat().st_size > 0
    with pytest.raises(NapkinError, match=r"^network: block must be in \[1, 8\]"):
        media_jitter(network=[(9, 50)])
    with pytest.raises(NapkinError, match=r"^buffer-ms:"):
        media_jitter(buffer_ms=[])


def test_interrupt_and_drain(cli):
    r = media_interrupt()
    assert r.data == _json(cli, "media", "interrupt")
    # 123 ms + 5 ms control delay = 128 ms; the next 10-ms poll mutes at 130 ms
    assert r.value.muted_s == pytest.approx(0.130)
    assert r.value.latency_s == pytest.approx(0.007)
    with pytest.raises(NapkinError, match=r"^poll-ms:"):
        media_interrupt(poll_ms=0)
    d = media_drain(buffered_s=0.3, arrival_rate=0.9)
    assert d.data == _json(cli, "media", "drain", "--buffered-s", "0.3", "--arrival-rate", "0.9")
    assert d.value == pytest.approx(0.3 / (1 - 0.9))  # B / (1 − r) = 3 s
    assert media_drain(arrival_rate=1.2).value is None
    with pytest.raises(NapkinError, match=r"^arrival-rate:"):
        media_drain(arrival_rate=-1)
