"""How a prefill step's time falls with tensor parallelism, against the engine kernels' own.

Vidur's per-operator profiles of Llama-2-7B on H100 (microsoft/vidur@7d47513, MIT: CUDA-timed
medians of Sarathi-Serve's kernels, a vLLM fork; ``data/profiling/compute/h100/meta-llama/
Llama-2-7b-hf/mlp.csv`` and ``data/profiling/network/h100_dgx/all_reduce.csv``) give one
decoder layer's kernels — the two norms, the fused QKV and output projections, rotary, the
gate/up and down projections, the activation and the residual add — at T tokens on one rank of
TP 1 and TP 8, and the all-reduce of a T × 4,096 BF16 activation over 8 GPUs (two a layer):

    T      TP 1 kernels   TP 8 kernels   all-reduce (TP 8)   TP 1 / TP 8
    1,024  0.657 ms       0.151 ms       0.074 ms            0.657 / 0.299 = 2.20
    2,048  1.266 ms       0.271 ms       0.115 ms            1.266 / 0.501 = 2.53
    4,096  2.592 ms       0.517 ms       0.196 ms            2.592 / 0.909 = 2.85

(attention, not in those files, adds a few per cent at these lengths). Eight GPUs make a layer
2.2–2.9 times faster, not eight: the norms and residual add run whole on every rank and the
all-reduces grow with TP. The shipped vLLM profile's prefill step must fall by about as much.
"""

import pytest

from napkin.accounting.forward import Precision
from napkin.accounting.linear import LinearCost
from napkin.calibration.basis import StepBasis
from napkin.calibration.profile import load_profile
from napkin.catalog import load_accelerator, load_model
from napkin.serving.step import StepShape

VIDUR = {1024: (0.657, 0.151, 0.074), 2048: (1.266, 0.271, 0.115), 4096: (2.592, 0.517, 0.196)}
"""Tokens → (TP 1 layer kernels, TP 8 layer kernels, one TP-8 all-reduce), ms (module
docstring)."""


def _prefill_step_s(tokens: int, tp: int) -> float:
    model, acc = load_model("llama-2-7b"), load_accelerator("h100-sxm")
    precision = Precision.of("bf16", "bf16")
    basis = StepBasis.of(model, acc, "bf16", tp, acc.allreduce_bytes_per_s, False, precision)
    parts = LinearCost.of(model, precision).parts(StepShape(0, 0, [(0, tokens, 1)]))
    return load_profile("vllm").model.time(basis.terms(parts, tokens, prefill=True))


@pytest.mark.parametrize("tokens", sorted(VIDUR))
def test_the_vllm_profiles_prefill_step_falls_with_tp_as_the_kernels_do(tokens):
    one, eight, allreduce = VIDUR[tokens]
    measured = one / (eight + 2 * allreduce)
    steps = [_prefill_step_s(tokens, tp) for tp in (1, 2, 4, 8)]
    assert steps == sorted(steps, reverse=True)  # every doubling helps
    assert steps[0] / steps[3] == pytest.approx(measured, rel=0.2)
