"""Vision tokens, encoder cost, EC and KV (chapter 3.3.1; Exercise 3-5), by hand."""

import pytest

from napkin.catalog import load_model, load_vision_tower
from napkin.errors import NapkinError
from napkin.media.vision import image_cost, prompt_state, smart_resize, visual_tokens
from napkin.units import MiB


@pytest.fixture(scope="module")
def tower():
    return load_vision_tower("qwen3-vl-4b")


@pytest.fixture(scope="module")
def lm():
    return load_model("qwen3-vl-4b")


def encoder_flops_by_hand(patches: int) -> float:
    """Qwen3-VL-4B tower: depth 24, hidden 1024, MLP 4096, full attention, 4 mergers."""
    d, inter, depth = 1024, 4096, 24
    blocks = depth * 2 * patches * (3 * d * d + d * d + 2 * d * inter)
    attention = depth * 4 * patches**2 * d
    patch_embed = 2 * patches * (3 * 2 * 16 * 16) * d
    mergers = 4 * 2 * (patches // 4) * (4096 * 4096 + 4096 * 2560)
    return blocks + attention + patch_embed + mergers


def test_640_image(tower, lm):
    c = image_cost(tower, lm, 640, 640)
    assert (c.height, c.width, c.patches, c.tokens) == (640, 640, 40 * 40, 20 * 20)
    assert c.features_bytes == 400 * 2560 * 2 == 2_048_000
    assert c.ec_bytes == 400 * 2560 * 4 * 2 == 8_192_000
    assert c.ec_bytes / MiB == 7.8125
    assert c.kv_bytes == 400 * 36 * 2 * 8 * 128 * 2  # 144 KiB per token
    assert c.kv_bytes / MiB == 56.25
    assert c.encoder.flops == encoder_flops_by_hand(1600)
    assert round(c.encoder.flops / 1e12, 3) == 1.310  # chapter: ≈ 1.310 TFLOPs


def test_doubling_sides_quadruples_tokens_ec_kv(tower, lm):
    small, big = image_cost(tower, lm, 640, 640), image_cost(tower, lm, 1280, 1280)
    assert big.tokens == 4 * small.tokens == 1600
    assert big.ec_bytes == 4 * small.ec_bytes and big.kv_bytes == 4 * small.kv_bytes
    assert big.encoder.flops == encoder_flops_by_hand(6400)  # attention grows 16×


def test_four_images_and_text(tower, lm):
    img = image_cost(tower, lm, 640, 640)
    p = prompt_state([img] * 4, 400, lm)
    assert p.ec_bytes / MiB == 31.25
    assert p.visual_kv_bytes / MiB == 225
    assert p.text_kv_bytes / MiB == 56.25
    assert p.kv_bytes / MiB == 281.25
    assert p.tokens == 2000


@pytest.mark.parametrize(("size", "expected"), [
    ((640, 640), (640, 640)),
    ((1000, 700), (992, 704)),       # round(31.25)=31, round(21.875)=22 multiples of 32
    ((8192, 8192), (4096, 4096)),    # > longest_edge 4096²: scaled down by 2, floored
    ((100, 100), (256, 256)),        # < shortest_edge 256²: scaled up by 2.56, ceiled
    ((48, 48), (256, 256)),
])
def test_smart_resize(size, expected):
    assert smart_resize(*size, factor=32) == expected


def test_resize_off_needs_multiples(tower, lm):
    assert image_cost(tower, lm, 64, 96, resize=False).tokens == 2 * 3
    with pytest.raises(NapkinError, match="multiples"):
        image_cost(tower, lm, 650, 640, resize=False)
    with pytest.raises(NapkinError, match="multiples"):
        visual_tokens(30, 32, 16, 2)


def test_bad_images():
    with pytest.raises(NapkinError, match="must be >= 32"):
        smart_resize(16, 640, 32)
    with pytest.raises(NapkinError, match="aspect ratio"):
        smart_resize(32, 32 * 201, 32)
