"""Launch commands of a chosen configuration for the engine it was planned on, and the others.

Flags are the engines' own (vLLM ``vllm serve``; SGLang ``python -m sglang.launch_server``;
TensorRT-LLM ``trtllm-serve``). One command starts one replica; run it once per replica behind
a load balancer.
"""

from napkin.catalog import MODELS
from napkin.planning.spec import Candidate

QUANTIZATION = {"fp8": "fp8"}
"""Weight formats that vLLM and SGLang quantize on load (``--quantization``); the others need
a pre-quantized checkpoint."""


def _hf_id(model: str) -> str:
    """The Hugging Face repository of a catalog model; a path or repository id as given."""
    repos = {m.id: m.hf_repo for m in MODELS}
    return repos.get(model.lower(), model)


def launch_commands(c: Candidate, model: str) -> dict[str, str]:
    """``{backend: command}`` for vLLM, SGLang and TensorRT-LLM."""
    hf = _hf_id(model)
    v = [f"vllm serve {hf}", f"--tensor-parallel-size {c.tensor_parallel}",
         f"--max-num-seqs {c.max_num_seqs}",
         f"--max-num-batched-tokens {c.max_num_batched_tokens}"]
    if c.weights in QUANTIZATION:
        v.append(f"--quantization {QUANTIZATION[c.weights]}")
    if c.kv_dtype != "bf16":
        v.append(f"--kv-cache-dtype {c.kv_dtype}")
    if c.expert_parallel:
        v.append("--enable-expert-parallel")
    s = [f"python -m sglang.launch_server --model-path {hf}", f"--tp {c.tensor_parallel}",
         f"--max-running-requests {c.max_num_seqs}",
         f"--chunked-prefill-size {c.max_num_batched_tokens}"]
    if c.weights in QUANTIZATION:
        s.append(f"--quantization {QUANTIZATION[c.weights]}")
    if c.kv_dtype != "bf16":
        s.append(f"--kv-cache-dtype {c.kv_dtype}_e4m3")
    if c.expert_parallel:
        s.append(f"--ep-size {c.tensor_parallel}")
    t = [f"trtllm-serve {hf}", f"--tp_size {c.tensor_parallel}",
         f"--max_batch_size {c.max_num_seqs}", f"--max_num_tokens {c.max_num_batched_tokens}"]
    if c.expert_parallel:
        t.append(f"--ep_size {c.tensor_parallel}")
    return {"vllm": " ".join(v), "sglang": " ".join(s), "trtllm": " ".join(t)}
