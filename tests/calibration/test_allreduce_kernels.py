"""The engines' all-reduce kernel latency on H100, from aiconfigurator's kernel timings."""

import pytest

from napkin.calibration.allreduce_kernels import (
    AllreduceTiming,
    allreduce_latency_s,
    read_allreduce_kernels,
)
from napkin.errors import NapkinError


def test_tensorrt_llms_small_all_reduces_take_about_3_5_us_at_any_tp():
    """TensorRT-LLM 1.2.0rc5 on H100 SXM, BF16 messages of 128–4,096 elements, sorted (µs):
    3.114, 3.120, 3.143, 3.201, 3.240, 3.242, 3.301, 3.343, 3.430 | 3.470, 3.472, 3.506, 3.541,
    3.560, 3.578, 3.765, 3.857, 3.886 (TP 2: 3.11–3.51, TP 4: 3.20–3.58, TP 8: 3.47–3.89):
    the median of the 18 is (3.42976 + 3.47008) / 2 = 3.44992 µs."""
    rows = read_allreduce_kernels()
    assert allreduce_latency_s(rows, "trtllm") == pytest.approx(3.44992e-6, rel=1e-6)
    small = [r for r in rows if r.kernel == "trtllm" and r.message_elements <= 4096]
    assert len(small) == 18 and {r.gpus for r in small} == {2, 4, 8}


def test_the_shipped_tensorrt_llm_profile_holds_that_latency():
    from napkin.calibration.profile import load_profile

    p = load_profile("trtllm")
    assert "allreduce" not in p.terms
    assert p.model.as_dict()["allreduce"] == pytest.approx(3.44992e-6, rel=1e-5)


def test_a_bad_table_is_one_line(tmp_path):
    path = tmp_path / "ar.csv"
    path.write_text("engine,version,kernel,dtype,gpus,message_elements,latency_ms\n"
                    "trtllm,1.2,trtllm,bf16,two,128,0.003\n")
    with pytest.raises(NapkinError, match="line 2: gpus: 'two' is not an integer"):
        read_allreduce_kernels(path)
    with pytest.raises(NapkinError, match="no all-reduce of 'nccl'"):
        allreduce_latency_s([AllreduceTiming("x", "1", "trtllm", 2, 128, 3e-6)], "nccl")
