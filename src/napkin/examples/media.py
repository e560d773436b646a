"""Worked examples of chapter 3.3: vision tokens, EC and KV; diffusion; playback timelines.

Specs are the shipped configs (Qwen3-VL-4B's ``vision_config`` and language model, Qwen-Image
2512's transformer, Fish Audio S2 Pro's slow and fast paths); every figure is computed.
"""

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_dit, load_model, load_vision_tower
from napkin.examples.row import Example, Row, rounded
from napkin.media.audio import frames_per_s, speech_rate
from napkin.media.diffusion import image_generation
from napkin.media.playback import PlaybackParams, buffer_drain_s, interruption, playback_timeline
from napkin.media.vision import image_cost, prompt_state
from napkin.timing.roofline import Deployment
from napkin.units import MS, TFLOP, KiB, MiB

VLM = "qwen3-vl-4b"


def ex_3_3_1() -> list[Row]:
    """§3.3.1: one 640×640 image into Qwen3-VL-4B; four images and 400 text tokens."""
    tower, lm = load_vision_tower(VLM), load_model(VLM)
    img = image_cost(tower, lm, 640, 640)
    four = prompt_state([img] * 4, 400, lm)
    return [
        Row("patches (16×16)", img.patches, 1600, "patches"),
        Row("visual tokens after 2×2 merge", img.tokens, 400, "tokens"),
        Row("last-layer features [400, 2560] BF16", img.features_bytes, 2_048_000, "B"),
        Row("EC with 3 DeepStack layers [400, 10240]", img.ec_bytes / MiB, 7.8125, "MiB"),
        rounded("encoder matmul FLOPs", img.encoder.flops / TFLOP, 1.310, 3, "TFLOP"),
        Row("language KV per token", lm.kv_bytes(1, 2) / KiB, 144, "KiB"),
        Row("KV of the 400 visual tokens", img.kv_bytes / MiB, 56.25, "MiB"),
        Row("4 images: EC", four.ec_bytes / MiB, 31.25, "MiB"),
        Row("4 images: visual KV", four.visual_kv_bytes / MiB, 225, "MiB"),
        Row("4 images + 400 text tokens: KV", four.kv_bytes / MiB, 281.25, "MiB"),
    ]


def ex_3_3_2() -> list[Row]:
    """§3.3.2: Qwen-Image-2512 at 1024×1024, 50 steps, true CFG; S2 Pro's fast path."""
    g = image_generation(load_dit("qwen-image-2512"), 1024, 1024, steps=50, branches=2)
    h100 = load_accelerator("h100-sxm")
    slow, fast = (Deployment(load_model(m), h100, Precision.of())
                  for m in ("fish-s2-pro-slow", "fish-s2-pro-fast"))
    speech = speech_rate(slow, fast, context_tokens=1000)
    return [
        Row("latent positions", g.positions, 4096, "positions"),
        Row("DiT forwards n_s·n_b", g.forwards, 100, "forwards"),
        rounded("denoising matmul FLOPs", g.flops / 1e15, 7.830, 3, "PFLOP",
                note="512 text tokens assumed (the pipeline's max_sequence_length)"),
        Row("S2 Pro fast forwards per frame", speech.frame.fast_forwards, 10, "forwards"),
        Row("S2 Pro frames per second of audio", frames_per_s(), None, "frames/s",
            note="codec 44,100 Hz / 2,048-sample hop"),
    ]


def ex_3_3_3() -> list[Row]:
    """§3.3.3: the jitter-buffer timeline (40 vs 60 ms) and the 123 ms interrupt."""
    t40 = playback_timeline(PlaybackParams(buffer_s=0.040))
    t60 = playback_timeline(PlaybackParams(buffer_s=0.060))
    stop = interruption(0.123, 0.005, 0.010)
    third = t40.blocks[2]
    return [
        Row("block bytes (24 kHz, mono, 16-bit, 20 ms)", t40.params.block_bytes, 960, "B"),
        Row("first arrival", t40.first_arrival_s / MS, 38, "ms"),
        Row("40 ms buffer: first play", t40.first_play_s / MS, 78, "ms"),
        Row("block 3 scheduled", third.scheduled_s / MS, 118, "ms"),
        Row("block 3 arrives", third.arrival_s / MS, 123, "ms"),
        Row("40 ms buffer: gap", t40.total_stall_s / MS, 5, "ms"),
        Row("60 ms buffer: first play", t60.first_play_s / MS, 98, "ms"),
        Row("60 ms buffer: gaps", t60.gaps, 0, "gaps"),
        Row("interrupt: muted at", stop.muted_s / MS, 130, "ms"),
        Row("interrupt latency", stop.latency_s / MS, 7, "ms"),
    ]


def ex_3_5() -> list[Row]:
    """Exercise 3-5: 1280×1280 into Qwen3-VL-4B; buffers 40/60 ms; a 0.9× arrival rate."""
    tower, lm = load_vision_tower(VLM), load_model(VLM)
    img = image_cost(tower, lm, 1280, 1280)
    t40 = playback_timeline(PlaybackParams(buffer_s=0.040))
    t60 = playback_timeline(PlaybackParams(buffer_s=0.060))
    return [
        Row("visual tokens", img.tokens, 1600, "tokens"),
        Row("EC", img.ec_bytes / MiB, None, "MiB", note="hand: 4 × 7.8125"),
        Row("KV of the visual tokens", img.kv_bytes / MiB, None, "MiB", note="hand: 4 × 56.25"),
        Row("encoder matmul FLOPs", img.encoder.flops / TFLOP, None, "TFLOP",
            note="attention over 6,400 patches grows 16×, the rest 4×"),
        Row("40 ms: first play", t40.first_play_s / MS, 78, "ms"),
        Row("40 ms: gap", t40.total_stall_s / MS, 5, "ms"),
        Row("60 ms: first play", t60.first_play_s / MS, 98, "ms"),
        Row("60 ms: gap", t60.total_stall_s / MS, 0, "ms"),
        Row("0.3 s buffered at 0.9 s/s: empties after", buffer_drain_s(0.3, 0.9) or 0.0, 3,
            "s"),
    ]


EXAMPLES_MEDIA: tuple[Example, ...] = (
    Example("§3.3.1", "a 640×640 image: tokens, EC, KV; four images and text",
            "chapter 3, §3.3.1", ex_3_3_1),
    Example("§3.3.2", "diffusion forwards and FLOPs; speech forwards per frame",
            "chapter 3, §3.3.2", ex_3_3_2),
    Example("§3.3.3", "jitter buffer 40 vs 60 ms; interruption", "chapter 3, §3.3.3",
            ex_3_3_3),
    Example("3-5", "1280×1280 image; buffers; long-run drain", "chapter 3, Exercise 3-5",
            ex_3_5),
)
