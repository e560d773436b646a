"""Measurement sets shipped with napkin (``napkin/catalog/measurements``; sources in its
README): ``h100`` is ai-dynamo/aiconfigurator's silicon sample, H100 SXM rows of dense
models in aggregated serving (TensorRT-LLM, vLLM, SGLang; Apache-2.0); ``h100-moe`` is the
same sample's vLLM 0.18.0 rows of the MoE gpt-oss-120b on H100 (its MXFP4 experts run as W4A16
on Hopper), which the shipped vLLM profile is fitted on together with ``h100`` (its weight-only
matmul coefficient ``dense_w4a16`` comes from them); ``h100-trtllm-moe`` is the sample's
TensorRT-LLM rows of the MoE Qwen3-235B-A22B on H100 and ``h100-trtllm-gptoss`` its TensorRT-LLM
1.3.0rc1 rows of gpt-oss-120b on H100 (W4A16, attention data parallel), which the shipped
TensorRT-LLM profile is fitted on together with ``h100``; those three are scored as fitted (their
training error). ``splitwise`` is splitwise-sim's prefill and decode times of Llama-2-70B on
A100 and H100 (MIT; a late-2023 vLLM), which the ``vllm-0.2`` profile is fitted on
(cross-validated; ``--by gpu`` leaves one GPU out). ``trtllm-v0.17`` is TensorRT-LLM v0.17's
published offline throughput (Llama 3.1 8B/70B/405B on H100, H200, L40S, A100; Apache-2.0),
which the ``trtllm-compiled`` profile is fitted on (:data:`SET_PROFILES`): cross-validated,
``--by gpu`` leaves one GPU out. ``trtllm-perf-overview`` is TensorRT-LLM's newer perf-overview
H100 offline throughputs (gpt-oss-120b over attention DP 4 with EP, gpt-oss-20b, Qwen3-235B-A22B
over attention DP 8 with EP, Llama-3.3-70B; :mod:`napkin.validation.perf_overview`), which no
profile is fitted on: scored under the shipped TensorRT-LLM profile, held out.
``h100-minimax`` is the silicon sample's vLLM 0.18.0 rows of the MoE MiniMax-M2.5 (FP8, 256
experts) on four H100s as ``tp 4, ep 4`` (InferenceMAX's ``minimaxm2.5_fp8_h100.sh``: BF16 KV,
0.90 of memory, at most 256 requests), which no profile is fitted on: scored under the shipped
vLLM profile, held out — the set vLLM's held routed-expert coefficients were decided on."""


from napkin.calibration.measurements.aiconfigurator import read_aiconfigurator_csv
from napkin.calibration.measurements.records import Measurement
from napkin.calibration.measurements.splitwise import read_splitwise_csv
from napkin.catalog import measurement_file
from napkin.errors import NapkinError
from napkin.validation.perf_overview import PERF_OVERVIEW_TABLE, perf_overview_rows
from napkin.validation.trtllm_bench import V017_TABLE, v017_throughput_rows

SETS: dict[str, str] = {"h100": "aiconfigurator_h100.csv",
                        "h100-moe": "aiconfigurator_h100_moe.csv",
                        "h100-trtllm-moe": "aiconfigurator_h100_trtllm_moe.csv",
                        "h100-trtllm-gptoss": "aiconfigurator_h100_trtllm_gptoss.csv",
                        "splitwise": "splitwise_perf_model.csv",
                        "trtllm-v0.17": V017_TABLE,
                        "trtllm-perf-overview": PERF_OVERVIEW_TABLE,
                        "h100-minimax": "aiconfigurator_h100_vllm_minimax.csv"}
FITTED: tuple[str, ...] = ("h100", "splitwise", "trtllm-v0.17")
"""Sets the shipped profiles are fitted on (cross-validated by napkin validate); the others
are scored under the shipped profiles as they are."""
TRAINING: tuple[str, ...] = ("h100-moe", "h100-trtllm-moe", "h100-trtllm-gptoss")
"""Sets a shipped profile was fitted on together with ``h100``, scored as fitted (their
training error; the cross-validated residuals are in the profile's bands)."""


SET_PROFILES: dict[str, str] = {"trtllm-v0.17": "trtllm-compiled", "splitwise": "vllm-0.2"}
"""Sets scored by a profile other than their backend's own."""


def load_set(name: str) -> list[Measurement]:
    """The rows of shipped set ``name``."""
    if name not in SETS:
        raise NapkinError(f"set: unknown {name!r}; shipped: {', '.join(SETS)}")
    if name == "trtllm-v0.17":
        return v017_throughput_rows()
    if name == "trtllm-perf-overview":
        return perf_overview_rows()
    reader = read_splitwise_csv if name == "splitwise" else read_aiconfigurator_csv
    return reader(str(measurement_file(SETS[name])))
