"""``mla_layer`` and ``dsa_layer``: the fixed time an MLA or DSA block takes beyond a GQA one,
set on the engines' own timings (``napkin.calibration.mla_blocks``): the charged difference by
hand, the extra time of a point by hand, the basis counting each kind's layers only, the
shipped profiles' values and Blackwell factors traced to the shipped tables, and a malformed
table refused in one line."""

import subprocess
import sys
from pathlib import Path

import pytest

from napkin.calibration.basis import StepBasis, StepModel
from napkin.calibration.mla_blocks import (
    BlockRow,
    architecture_scale,
    charged_difference_s,
    extras,
    holdout,
    layer_s,
    read_mla_blocks,
)
from napkin.calibration.profile import load_profile
from napkin.calibration.terms import TERMS
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError


def test_charged_difference_by_hand():
    """DeepSeek-V3's attention projections hold 187,105,280 parameters a layer (q_a 7168·1536,
    q_b 1536·24576, kv_a 7168·576, kv_b 512·32768, o 16384·7168), of them the query and latent
    down-projections 7168 · (1536 + 576) = 15,138,816, which every rank reads whole;
    Llama-3.1-70B's 150,994,944 (q 8192², k and v 8192·1024 each, o 8192²). BF16 over 8 ranks:
    (374,210,560 − 30,277,632) / 8 + 30,277,632 = 73,269,248 B against 301,989,888 / 8 =
    37,748,736 B: 35,520,512 B more. KV a token and layer: MLA's latent 512 + 64 rotary
    elements read on every rank, GQA's 8 heads · 128 · 2 (K and V) = 2,048 split over 8 ranks
    (256 each): 4 sequences · 1,024 tokens · (576 − 256) · 2 B = 2,621,440 B. At weights and
    KV coefficients 1.0 and 2.0 on the H100's 3.35 TB/s: (35,520,512 + 2 · 2,621,440) /
    3.35e12 = 12.17e-6 s."""
    model = StepModel.of({"weights": 1.0, "kv": 2.0})
    got = charged_difference_s(model, "h100-sxm", 8, 4)
    assert got == pytest.approx((35_520_512 + 2 * 2_621_440) / 3.35e12, rel=1e-9)
    assert got == pytest.approx(12.17e-6, rel=1e-3)


def _point(tp: int, batch: int, mla_us: float, parts_us: tuple[float, float, float]
           ) -> list[BlockRow]:
    names = ("gqa_attention", "gqa_qkv", "gqa_output")
    return [BlockRow("e", "1", "deepseek-v3", tp, batch, "mla_module", mla_us * 1e-6)] + [
        BlockRow("e", "1", "llama-3.1-70b", tp, batch, n, us * 1e-6)
        for n, us in zip(names, parts_us, strict=True)]


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
    assert layer_s(rows, "e", model) == pytest.approx(50e-6)
    h = holdout(rows, "e", model)
    # without: |30/80 − 1| = 0.625, |30/90 − 1| = 0.667, |30/70 − 1| = 0.571 → 0.625; held
    # out: TP 2 with the median of 60 and 40 (50): |80/80 − 1| = 0; TP 4 with that of 50 and
    # 40 (45): |75/90 − 1| = 0.167; TP 8 with that of 50 and 60 (55): |85/70 − 1| = 0.214
    assert h.without == pytest.approx(0.625)
    assert h.held_out == pytest.approx(1 - 75 / 90)
    assert h.points == 3
    assert layer_s(_point(8, 1, 20, (10, 15, 5)), "e", model) == 0.0  # floored at 0


def test_a_point_missing_a_part_is_left_out_and_no_point_is_an_error():
    model = StepModel.of({})
    rows = _point(8, 1, 70, (10, 15, 5)) + _point(4, 1, 90, (10, 15, 5))[:-1]
    assert [e.tp for e in extras(rows, "e", model)] == [8]
    with pytest.raises(NapkinError, match="engine: no MLA block rows of 'other'"):
        extras(rows, "other", model)
    with pytest.raises(NapkinError, match="engine: no DSA block rows of 'e'"):
        extras(rows, "e", model, kind="dsa")
    with pytest.raises(NapkinError, match="kind: 'gqa' not one of mla, dsa"):
        extras(rows, "e", model, kind="gqa")


def test_the_basis_counts_each_kinds_layers_only():
    """DeepSeek-V3: 61 MLA layers; Kimi Linear: 7 of 27 (the rest KDA); DeepSeek-V3.2 61 and
    GLM-5 78 DSA layers; Llama: none. Each term reads its count at the GPU's clock scale, in
    every step, prefill or not."""
    acc = load_accelerator("h100-sxm")
    mla, dsa = TERMS.index("mla_layer"), TERMS.index("dsa_layer")
    for name, m, d in (("deepseek-v3", 61, 0), ("kimi-linear-48b-a3b", 7, 0),
                       ("deepseek-v3.2", 0, 61), ("glm-5", 0, 78), ("llama-3.1-8b", 0, 0)):
        basis = StepBasis.of(load_model(name), acc, "bf16", 1, 450e9)
        for prefill in (False, True):
            x = basis.terms((1e9, 1e6, 1e9, 1e6, 0.0), 4, prefill)
            assert (x[mla], x[dsa]) == (m * acc.fixed_time_scale, d * acc.fixed_time_scale)


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


def test_dsa_charged_difference_and_extra_by_hand():
    """DeepSeek-V3.2's attention projections hold 201,064,448 parameters a layer (its MLA's
    187,105,280 and its indexer's q_b 1536·8192, k 7168·128 and weights 7168·64), its
    down-projections' 15,138,816 read whole on every rank: BF16 over 4 ranks (402,128,896 −
    30,277,632) / 4 + 30,277,632 = 123,240,448 B against Llama-3.1-70B's 301,989,888 / 4 =
    75,497,472 B: 47,742,976 B more. KV a token and layer: the 576-element
    latent and the indexer's 128-element key, read on every rank, against GQA's 2,048 elements
    over 4 ranks (512 each): 2 sequences · 1,024 · (704 − 512) · 2 B = 786,432 B; weights and
    KV at 1.0 on 3.35 TB/s: 14.49e-6 s. GLM-5 and DeepSeek-V3.2 points share the GQA block at
    their TP and batch."""
    model = StepModel.of({"weights": 1.0, "kv": 1.0})
    got = charged_difference_s(model, "h100-sxm", 4, 2, "deepseek-v3.2")
    assert got == pytest.approx((47_742_976 + 786_432) / 3.35e12, rel=1e-9)
    gqa = [BlockRow("e", "1", "llama-3.1-70b", 4, 2, n, us * 1e-6)
           for n, us in (("gqa_attention", 10), ("gqa_qkv", 15), ("gqa_output", 5))]
    rows = [*gqa, BlockRow("e", "1", "deepseek-v3.2", 4, 2, "dsa_module", 130e-6),
            BlockRow("e", "1", "glm-5", 4, 2, "dsa_module", 200e-6),
            BlockRow("e", "1", "deepseek-v3", 4, 2, "mla_module", 70e-6)]
    points = {e.model: e for e in extras(rows, "e", model, kind="dsa")}
    assert set(points) == {"deepseek-v3.2", "glm-5"}
    assert points["deepseek-v3.2"].extra_s == pytest.approx(100e-6 - got)
    assert points["glm-5"].extra_s == pytest.approx(
        170e-6 - charged_difference_s(model, "h100-sxm", 4, 2, "glm-5"))
    assert [e.model for e in extras(rows, "e", model)] == ["deepseek-v3"]
    # held out by model, each model's block is read with the other's extra
    h = holdout(rows, "e", model, kind="dsa", by="model")
    assert h.points == 2 and h.held_out < h.without


@pytest.mark.parametrize("engine", ["trtllm", "vllm"])
def test_shipped_dsa_terms_are_the_tables(engine):
    """TensorRT-LLM's and vLLM's ``dsa_layer`` and Blackwell factor are their tables'; held out
    by model (DeepSeek-V3.2 against GLM-5) the term still reads the block far better than
    without it. SGLang's is 0: held out by model it reads no better (GLM-5's DSA block takes
    about twice DeepSeek-V3.2's there)."""
    model = load_profile(engine).model
    h, b = read_mla_blocks(), read_mla_blocks(gpu="b200")
    assert model.as_dict()["dsa_layer"] == pytest.approx(
        layer_s(h, engine, model, kind="dsa"), rel=1e-5)
    factor = dict(dict(model.architecture_scales)["blackwell"])["dsa_layer"]
    assert factor == pytest.approx(architecture_scale(h, b, engine, model, "b200", "dsa"),
                                   rel=1e-3)
    by_model = holdout(h, engine, model, kind="dsa", by="model")
    assert by_model.held_out < 0.1 < by_model.without
    sglang = load_profile("sglang").model
    assert sglang.as_dict()["dsa_layer"] == 0.0
    held = holdout(h, "sglang", sglang, kind="dsa", by="model")
    assert held.held_out > held.without - 0.05


@pytest.mark.parametrize("engine", ["trtllm", "vllm", "sglang"])
def test_shipped_profiles_hold_the_tables_value(engine):
    """Each shipped profile's ``mla_layer`` and Blackwell factor are the shipped tables' (six
    and four significant digits in the file): TensorRT-LLM's and vLLM's from their MLA
    modules, SGLang's from its MLA kernels summed."""
    model = load_profile(engine).model
    h, b = read_mla_blocks(), read_mla_blocks(gpu="b200")
    assert model.as_dict()["mla_layer"] == pytest.approx(layer_s(h, engine, model),
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
    rows = [BlockRow("s", "1", "deepseek-v3", 8, 1, k, us * 1e-6)
            for k, us in zip(kernels, (10, 5, 5, 20, 8, 12), strict=True)]
    rows += [BlockRow("s", "1", "llama-3.1-70b", 8, 1, k, us * 1e-6)
             for k, us in (("gqa_attention", 10), ("gqa_qkv", 15), ("gqa_output", 5))]
    (e,) = extras(rows, "s", model)
    assert (e.block_s, e.gqa_s, e.extra_s) == pytest.approx((60e-6, 30e-6, 30e-6))
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
    assert 5e-6 < got.extra_s < 40e-6  # 67.5 µs against 39.0 µs, less 13 µs charged


HEAD = "engine,version,model,tp,batch,part,latency_ms\n"


@pytest.mark.parametrize(("text", "message"), [
    (HEAD + "e,1,m,8,1,nope,0.05\n", "part: 'nope' not one"),
    (HEAD + "e,1,m,0,1,mla_module,0.05\n", "tp"),
    (HEAD + "e,1,m,8,1,mla_module,nan\n", "latency_ms"),
    (HEAD + "e,1,m,8,1,mla_module,5000\n", "below 1000"),
    ("engine,version,model,tp,batch,part\ne,1,m,8,1,mla_module\n", "latency_ms"),
])
def test_a_malformed_table_is_one_error(tmp_path, text, message):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(NapkinError, match=message):
        read_mla_blocks(path)


def test_a_gpu_without_a_table_is_one_error():
    with pytest.raises(NapkinError, match="gpu: no shipped MLA block table for 'a100-sxm'"):
        read_mla_blocks(gpu="a100-sxm")


def test_a_refit_keeps_the_table_set_terms_and_factors():
    """``benchmarks/fit_profiles.py`` sets, after each serving fit, what its rows cannot: a
    shipped profile stripped of ``mla_layer``, ``dsa_layer`` and every Blackwell factor comes
    back as shipped (run as the script runs, in a fresh interpreter)."""
    root = Path(__file__).resolve().parents[2]
    code = """
import sys
sys.path.insert(0, "benchmarks")
from dataclasses import replace
import fit_profiles
from napkin.calibration.basis import StepModel
from napkin.calibration.profile import load_profile
for name in ("trtllm", "vllm", "sglang"):
    shipped = load_profile(name)
    c = {**shipped.model.as_dict(), "mla_layer": 0.0, "dsa_layer": 0.0}
    bare = replace(shipped, sources=(), model=replace(
        shipped.model, coefficients=StepModel.of(c).coefficients, architecture_scales=()))
    got = fit_profiles.blackwell_and_latent(name, bare).model
    assert got.coefficients == shipped.model.coefficients, name
    assert got.architecture_scales == shipped.model.architecture_scales, name
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr
