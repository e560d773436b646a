"""``mla_layer``: the fixed time an MLA block takes beyond a GQA one, set on the engines' own
timings (``napkin.calibration.mla_blocks``): the charged difference by hand, the extra time of a
point by hand, the basis counting MLA layers only, the shipped profiles' value and Blackwell
factor traced to the shipped tables, and a malformed table refused in one line."""

import pytest

from napkin.calibration.basis import StepBasis, StepModel
from napkin.calibration.mla_blocks import (
    BlockRow,
    architecture_scale,
    charged_difference_s,
    extras,
    holdout,
    mla_layer_s,
    read_mla_blocks,
)
from napkin.calibration.profile import load_profile
from napkin.calibration.terms import TERMS
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError


def test_charged_difference_by_hand():
    """DeepSeek-V3's attention holds 187,107,328 parameters a layer, Llama-3.1-70B's
    150,994,944 (q 8192², k and v 8192·1024 each, o 8192²); BF16 over 8 ranks: (187,107,328 −
    150,994,944) · 2 / 8 = 9,028,096 B. KV a token and layer: MLA's latent 512 + 64 rotary
    elements read on every rank, GQA's 8 heads · 128 · 2 (K and V) = 2,048 split over 8 ranks
    (256 each): 4 sequences · 1,024 tokens · (576 − 256) · 2 B = 2,621,440 B. At weights and
    KV coefficients 1.0 and 2.0 on the H100's 3.35 TB/s: (9,028,096 + 2 · 2,621,440) / 3.35e12
    = 4.26e-6 s."""
    model = StepModel.of({"weights": 1.0, "kv": 2.0})
    got = charged_difference_s(model, "h100-sxm", 8, 4)
    assert got == pytest.approx((9_028_096 + 2 * 2_621_440) / 3.35e12, rel=1e-9)
    assert got == pytest.approx(4.26e-6, rel=1e-3)


def _point(tp: int, batch: int, mla_us: float, parts_us: tuple[float, float, float]
           ) -> list[BlockRow]:
    names = ("mla_module", "gqa_attention", "gqa_qkv", "gqa_output")
    return [BlockRow("e", "1", tp, batch, n, us * 1e-6)
            for n, us in zip(names, (mla_us, *parts_us), strict=True)]


def test_extra_time_and_median_by_hand():
    """A point's extra = MLA module − (attention + QKV + output) − the charged difference; the
    term is their median. With the weights and KV coefficients at 0 nothing is charged: TP 8
    70 − (10 + 15 + 5) = 40 µs, TP 4 90 − 30 = 60 µs, TP 2 80 − 30 = 50 µs → 50 µs; held out by
    TP, each TP's block read with the others' median."""
    model = StepModel.of({})
    rows = (_point(8, 1, 70, (10, 15, 5)) + _point(4, 1, 90, (10, 15, 5))
            + _point(2, 1, 80, (10, 15, 5)))
    assert [e.extra_s for e in extras(rows, "e", model)] == pytest.approx(
        [50e-6, 60e-6, 40e-6])  # sorted by TP: 2, 4, 8
    assert mla_layer_s(rows, "e", model) == pytest.approx(50e-6)
    h = holdout(rows, "e", model)
    # without: |30/80 − 1| = 0.625, |30/90 − 1| = 0.667, |30/70 − 1| = 0.571 → 0.625; held
    # out: TP 2 with the median of 60 and 40 (50): |80/80 − 1| = 0; TP 4 with that of 50 and
    # 40 (45): |75/90 − 1| = 0.167; TP 8 with that of 50 and 60 (55): |85/70 − 1| = 0.214
    assert h.without == pytest.approx(0.625)
    assert h.held_out == pytest.approx(1 - 75 / 90)
    assert h.points == 3
    assert mla_layer_s(_point(8, 1, 20, (10, 15, 5)), "e", model) == 0.0  # floored at 0


def test_a_point_missing_a_part_is_left_out_and_no_point_is_an_error():
    model = StepModel.of({})
    rows = _point(8, 1, 70, (10, 15, 5)) + _point(4, 1, 90, (10, 15, 5))[:-1]
    assert [e.tp for e in extras(rows, "e", model)] == [8]
    with pytest.raises(NapkinError, match="engine: no MLA block rows of 'other'"):
        extras(rows, "other", model)


def test_the_basis_counts_mla_layers_only():
    """DeepSeek-V3: 61 MLA layers; Kimi Linear: 7 of 27 (the rest KDA); Llama: none. The term
    reads the count at the GPU's clock scale, in every step, prefill or not."""
    acc = load_accelerator("h100-sxm")
    i = TERMS.index("mla_layer")
    for name, layers in (("deepseek-v3", 61), ("kimi-linear-48b-a3b", 7), ("llama-3.1-8b", 0)):
        basis = StepBasis.of(load_model(name), acc, "bf16", 1, 450e9)
        for prefill in (False, True):
            x = basis.terms((1e9, 1e6, 1e9, 1e6, 0.0), 4, prefill)
            assert x[i] == layers * acc.fixed_time_scale


def test_a_decode_step_of_an_mla_model_pays_the_term_per_layer():
    """Two profiles that differ only in ``mla_layer`` time a DeepSeek-V3 step 61 × its value
    apart, a Llama step alike."""
    acc = load_accelerator("h100-sxm")
    parts = (1e11, 1e9, 5e10, 1e9, 0.0)
    for name, layers in (("deepseek-v3", 61), ("llama-3.1-8b", 0)):
        basis = StepBasis.of(load_model(name), acc, "bf16", 8, 450e9)
        x = basis.terms(parts, 4)
        a = StepModel.of({"dense": 1.3, "weights": 1.0, "layer": 5e-5})
        b = StepModel.of({"dense": 1.3, "weights": 1.0, "layer": 5e-5, "mla_layer": 2e-5})
        assert b.time(x) - a.time(x) == pytest.approx(layers * 2e-5, abs=1e-15)


@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_shipped_profiles_hold_the_tables_value(engine):
    """Each shipped profile's ``mla_layer`` and Blackwell factor are the shipped tables' (six
    and four significant digits in the file): TensorRT-LLM's and vLLM's from their MLA
    modules, SGLang's from its MLA kernels summed."""
    model = load_profile(engine).model
    h, b = read_mla_blocks(), read_mla_blocks(gpu="b200")
    assert model.as_dict()["mla_layer"] == pytest.approx(mla_layer_s(h, engine, model),
                                                         rel=1e-5)
    factor = dict(dict(model.architecture_scales)["blackwell"])["mla_layer"]
    assert factor == pytest.approx(architecture_scale(h, b, engine, model, "b200"), rel=1e-3)
    assert holdout(h, engine, model).held_out < holdout(h, engine, model).without
    parts = {r.part for r in h if r.engine == engine}
    assert ("mla_module" in parts) == (engine != "sglang")


def test_a_block_of_summed_kernels_counts_every_kernel():
    """Where no module is timed, the MLA block is its six kernels summed: 10 + 5 + 5 + 20 + 8
    + 12 = 60 µs against a GQA block of 30 µs: 30 µs extra; a point missing one kernel is left
    out."""
    model = StepModel.of({})
    kernels = ("mla_attention", "mla_bmm_pre", "mla_bmm_post", "mla_qkv_a", "mla_q_b",
               "mla_output")
    rows = [BlockRow("s", "1", 8, 1, k, us * 1e-6)
            for k, us in zip(kernels, (10, 5, 5, 20, 8, 12), strict=True)]
    rows += [BlockRow("s", "1", 8, 1, k, us * 1e-6)
             for k, us in (("gqa_attention", 10), ("gqa_qkv", 15), ("gqa_output", 5))]
    (e,) = extras(rows, "s", model)
    assert (e.mla_s, e.gqa_s, e.extra_s) == pytest.approx((60e-6, 30e-6, 30e-6))
    with pytest.raises(NapkinError, match="no MLA block rows"):
        extras([r for r in rows if r.part != "mla_q_b"], "s", model)


def test_the_shipped_values_by_hand_from_one_table_point():
    """TensorRT-LLM's TP 8 point at 4 sequences, from the shipped table: the MLA module less
    the GQA block's three parts less the charged difference is one of the extras the median
    is taken over."""
    rows = [r for r in read_mla_blocks() if r.engine == "trtllm" and r.tp == 8 and r.batch == 4]
    t = {r.part: r.latency_s for r in rows}
    model = load_profile("trtllm").model
    want = (t["mla_module"] - t["gqa_attention"] - t["gqa_qkv"] - t["gqa_output"]
            - charged_difference_s(model, "h100-sxm", 8, 4))
    got = next(e for e in extras(read_mla_blocks(), "trtllm", model) if e.tp == 8
               and e.batch == 4)
    assert got.extra_s == pytest.approx(want)
    assert 10e-6 < got.extra_s < 40e-6  # 67.5 µs against 39.0 µs, less 4 µs charged


@pytest.mark.parametrize(("text", "message"), [
    ("engine,version,tp,batch,part,latency_ms\ne,1,8,1,nope,0.05\n", "part: 'nope' not one"),
    ("engine,version,tp,batch,part,latency_ms\ne,1,0,1,mla_module,0.05\n", "tp"),
    ("engine,version,tp,batch,part,latency_ms\ne,1,8,1,mla_module,nan\n", "latency_ms"),
    ("engine,version,tp,batch,part,latency_ms\ne,1,8,1,mla_module,5000\n", "below 1000"),
    ("engine,version,tp,batch,part\ne,1,8,1,mla_module\n", "latency_ms"),
])
def test_a_malformed_table_is_one_error(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(NapkinError, match=message):
        read_mla_blocks(path)


def test_a_gpu_without_a_table_is_one_error():
    with pytest.raises(NapkinError, match="gpu: no shipped MLA block table for 'a100-sxm'"):
        read_mla_blocks(gpu="a100-sxm")
