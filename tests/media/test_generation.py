"""Diffusion (n_s·n_b·F_step, §3.3.2) and slow/fast speech generation, by hand."""

import pytest

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_dit, load_model
from napkin.errors import NapkinError
from napkin.media.audio import frame_cost, frames_per_s, speech_rate
from napkin.media.diffusion import image_generation, latent_positions
from napkin.timing.roofline import Deployment


def dit_forward_by_hand(positions: int, text: int) -> float:
    """Qwen-Image: 60 dual-stream blocks, d = 3072, 4× GELU MLP, joint attention."""
    d, layers = 3072, 60
    n = positions + text
    streams = layers * 2 * 12 * d * d * n  # q, k, v, out (4d²) + MLP (8d²) per token
    attention = layers * 4 * n * n * d
    io = 2 * positions * (64 * d + d * 64) + 2 * text * 3584 * d
    per_sample = layers * 2 * 2 * d * 6 * d + 2 * d * 2 * d  # adaLN ×2 streams, norm_out
    return streams + attention + io + per_sample


def test_qwen_image_1024():
    g = image_generation(load_dit("qwen-image-2512"), 1024, 1024, steps=50, branches=2,
                         text_tokens=512)
    assert g.positions == (1024 // 8 // 2) ** 2 == 4096
    assert g.forwards == 100
    assert g.step_forward.flops == pytest.approx(dit_forward_by_hand(4096, 512))
    assert round(g.flops / 1e15, 3) == 7.830  # chapter: ≈ 7.830 × 10¹⁵


def test_flops_linear_in_steps_and_branches():
    dit = load_dit("qwen-image-2512")
    base = image_generation(dit, 512, 512, steps=10, branches=1, text_tokens=0)
    assert image_generation(dit, 512, 512, 20, 1, 0).flops == pytest.approx(2 * base.flops)
    assert image_generation(dit, 512, 512, 10, 2, 0).flops == pytest.approx(2 * base.flops)
    assert base.step_forward.flops == pytest.approx(dit_forward_by_hand(1024, 0))


def test_bad_diffusion_input():
    dit = load_dit("qwen-image-2512")
    with pytest.raises(NapkinError, match="multiples"):
        latent_positions(1000, 1024, 2, 8)
    with pytest.raises(NapkinError, match="steps"):
        image_generation(dit, 1024, 1024, steps=0)
    with pytest.raises(NapkinError, match="branches"):
        image_generation(dit, 1024, 1024, branches=0)


def test_speech_frames_and_forwards():
    assert frames_per_s() == 44_100 / 2_048
    h100 = load_accelerator("h100-sxm")
    slow = Deployment(load_model("fish-s2-pro-slow"), h100, Precision.of())
    fast = Deployment(load_model("fish-s2-pro-fast"), h100, Precision.of())
    frame = frame_cost(slow, fast, context_tokens=1000)
    assert (frame.slow_forwards, frame.fast_forwards) == (1, 10)
    d, q, kv, inter = 2560, 4096, 1024, 9728
    layer_macs = d * q + 2 * d * kv + q * d + 3 * d * inter
    pair = 4 * 32 * 128
    slow_flops = 2 * 36 * layer_macs + 36 * pair * 1001 + 2 * d * 155_776
    fast_flops = sum(2 * 4 * layer_macs + 4 * pair * (j + 1) + 2 * d * 4096 for j in range(10))
    assert frame.flops == pytest.approx(slow_flops + fast_flops)
    rate = speech_rate(slow, fast, 1000)
    assert rate.forwards_per_audio_s == pytest.approx(11 * 44_100 / 2_048)
    # batch 1 is memory-bound: every forward takes bytes / bandwidth
    assert frame.time_s == pytest.approx(frame.bytes / h100.mem_bytes_per_s)
    assert rate.real_time_factor == pytest.approx(frames_per_s() * frame.time_s)


def test_bad_speech_input():
    h100 = load_accelerator("h100-sxm")
    dep = Deployment(load_model("fish-s2-pro-fast"), h100, Precision.of())
    with pytest.raises(NapkinError, match="codebooks"):
        frame_cost(dep, dep, 0, codebooks=0)
    with pytest.raises(NapkinError, match="hop"):
        frames_per_s(44_100, 0)
