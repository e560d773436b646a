"""The calibrated call and decode at tensor parallel tp: a linear-attention state splits over
every rank, the KV of the full-attention layers over ``min(tp, kv_heads)`` — hand-worked on
Qwen3-Next-80B-A3B and checked against the simulator's engine.

Qwen3-Next-80B-A3B (config.json): 48 layers, every 4th full attention (12 layers, 2 KV heads of
256), the other 36 Gated DeltaNet (32 value heads and 16 key heads of 128, a 4-tap convolution
over 2·16·128 + 32·128 = 8,192 channels). In BF16:

- KV per token: 12 layers × (K + V) × 2 heads × 256 × 2 B = 24,576 B;
- state per sequence and GDN layer: 32·128·128 FP32 numbers (2,097,152 B) plus the convolution's
  last 3 inputs of 8,192 channels in BF16 (49,152 B) = 2,146,304 B; × 36 layers = 77,266,944 B.

A decode step of B = 4 sequences at context 1,000 reads 4·1,000 cached tokens' KV and writes 4
new tokens' (4·1,001·24,576 = 98,402,304 B), and reads and writes each sequence's state
(2·4·77,266,944 = 618,135,552 B). Per GPU at tp: the KV over min(tp, 2) GPUs, the state over
tp GPUs:

====  ==========================  ==========================  ===========
tp    KV / min(tp, 2)             state / tp                  per GPU
====  ==========================  ==========================  ===========
1     98,402,304                  618,135,552                 716,537,856
2     49,201,152                  309,067,776                 358,268,928
8     49,201,152                  77,266,944                  126,468,096
====  ==========================  ==========================  ===========

(Counting the state over the KV's 2 GPUs, as the calibrated path did before, put TP 8 at the
TP 2 figure, 358,268,928 B.) A profile whose only coefficient is ``kv`` = 1 times a step as
those bytes / 4.8 TB/s (H200).
"""

import pytest

from napkin.accounting import Batch, Precision, forward
from napkin.accounting.linear import LinearCost, state_tp_scale, tp_cost
from napkin.calibration.basis import StepBasis, StepModel
from napkin.calibration.predict import calibrated_call, calibrated_decode
from napkin.calibration.profile import Profile
from napkin.calibration.terms import TERMS
from napkin.catalog import load_accelerator, load_model
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.timing.efficiency import Efficiency

NEXT, ACC, BF16 = load_model("qwen3-next-80b-a3b"), load_accelerator("h200"), Precision.of()
BW = 4.8e12  # H200 SXM HBM3e, B/s
B, CONTEXT = 4, 1000

KV_PER_TOKEN = 12 * 2 * 2 * 256 * 2
STATE_PER_SEQUENCE = 36 * (32 * 128 * 128 * 4 + 8192 * 3 * 2)
KV = B * (CONTEXT + 1) * KV_PER_TOKEN
STATE = 2 * B * STATE_PER_SEQUENCE  # read and written once per sequence
KV_TERM = TERMS.index("kv")


def _kv_only() -> Profile:
    """A step takes its KV-like bytes per GPU / bandwidth, nothing else."""
    return Profile("kv", "vllm", StepModel.of({"kv": 1.0}))


def test_the_hand_figures():
    assert KV_PER_TOKEN == 24_576 and STATE_PER_SEQUENCE == 77_266_944
    assert KV == 98_402_304 and STATE == 618_135_552
    assert ACC.mem_bytes_per_s == BW


@pytest.mark.parametrize(("tp", "kv_gpus", "per_gpu"), [
    (1, 1, 716_537_856), (2, 2, 358_268_928), (8, 2, 126_468_096)])
def test_decode_state_per_gpu_is_the_state_over_tp(tp: int, kv_gpus: int, per_gpu: int):
    """The calibrated decode step and the calibrated call's TPOT (gen 2: one decode step at
    context 1,000) move KV/min(tp, 2) + state/tp bytes on each GPU."""
    assert KV / kv_gpus + STATE / tp == per_gpu
    step = calibrated_decode(_kv_only(), NEXT, ACC, BF16, [B], CONTEXT, tensor_parallel=tp)[0]
    assert step.step_s * BW == pytest.approx(per_gpu, rel=1e-12)
    call = calibrated_call(_kv_only(), NEXT, ACC, BF16, new=CONTEXT, gen=2, batch=B,
                           tensor_parallel=tp)
    assert call.tpot_s * BW == pytest.approx(per_gpu, rel=1e-12)


def test_the_state_scale_by_hand():
    """kv_devices(tp)/tp: 1 at tp 1 and 2 (the KV and the state both over tp), 2/4 and 2/8
    past the 2 KV heads; 1 for a model whose KV heads cover tp (Qwen3-8B: 8)."""
    assert [state_tp_scale(NEXT, tp) for tp in (1, 2, 4, 8)] == [1.0, 1.0, 0.5, 0.25]
    assert state_tp_scale(load_model("qwen3-8b"), 8) == 1.0


def test_a_dense_model_is_unchanged():
    """Qwen3-8B (36 layers, 8 KV heads of 128, no state) at TP 8: KV per token 36 × 2 × 8 ×
    128 × 2 B = 147,456 B; the step of 4 sequences at context 1,000 moves 4·1,001·147,456 =
    590,413,824 B, an eighth per GPU (73,801,728 B) — what the op list's KV part gives."""
    dense = load_model("qwen3-8b")
    kv = B * (CONTEXT + 1) * 36 * 2 * 8 * 128 * 2
    assert kv == 590_413_824 and kv / 8 == 73_801_728
    assert tp_cost(dense, BF16, 8) == LinearCost.of(dense, BF16)
    step = calibrated_decode(_kv_only(), dense, ACC, BF16, [B], CONTEXT, tensor_parallel=8)[0]
    assert step.step_s * BW == pytest.approx(73_801_728, rel=1e-12)
    assert forward(dense, Batch.decode(CONTEXT, B), BF16).parts[3] == pytest.approx(kv,
                                                                                  rel=1e-12)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_the_simulator_and_the_calibrated_path_agree_on_the_state(tp: int):
    """The engine's decode step (4 sequences, 4,000 cached tokens in all) and the calibrated
    path's step on the same batch give the same parts, so the same ``kv`` basis term: per GPU
    KV/min(tp, 2) + state/tp."""
    engine = Engine(NEXT, ACC, BF16, Efficiency(), EngineSpec(num_blocks=1000,
                                                              tensor_parallel=tp), record=True)
    simulated = engine.cost.decode_parts(B, B * CONTEXT)
    analytic = tp_cost(NEXT, BF16, tp).parts(Batch.decode(CONTEXT, B))
    assert simulated == pytest.approx(analytic, rel=1e-12)
    basis = StepBasis.of(NEXT, ACC, "bf16", tp, ACC.allreduce_bytes_per_s)
    assert engine.basis is not None
    kv = engine.basis.terms(simulated, B)[KV_TERM] * BW
    assert kv == pytest.approx(basis.terms(analytic, B)[KV_TERM] * BW, rel=1e-12)
    assert kv == pytest.approx(KV / min(tp, 2) + STATE / tp, rel=1e-12)
