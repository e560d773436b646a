"""Launch commands of a chosen configuration for the engine it was planned on, and the others.

Flags are the engines' own (vLLM ``vllm serve``; SGLang ``python -m sglang.launch_server``;
TensorRT-LLM ``trtllm-serve``). One command starts one replica; run it once per replica behind
a load balancer.
"""

from napkin.catalog import MODELS, load_model
from napkin.errors import NapkinError
from napkin.planning.spec import Candidate
from napkin.specs.layout import ParallelLayout

QUANTIZATION = {"fp8": "fp8"}
"""Weight formats that vLLM and SGLang quantize on load (``--quantization``); the others need
a pre-quantized checkpoint."""


def _hf_id(model: str) -> str:
    """The Hugging Face repository of a catalog model; a path or repository id as given."""
    repos = {m.id: m.hf_repo for m in MODELS}
    return repos.get(model.lower(), model)


def launch_commands(c: Candidate, model: str) -> dict[str, str]:
    """``{backend: command}`` for vLLM, SGLang and TensorRT-LLM; the layout's flags are
    :meth:`ParallelLayout.flags` (an engine that cannot spell the layout gets a line saying
    so). ``max_num_seqs`` and the token budget are per data-parallel group, as vLLM's and
    TensorRT-LLM's flags are; SGLang's ``--max-running-requests`` counts the whole replica."""
    hf, layout = _hf_id(model), c.parallel
    mtp = _has_mtp(model)
    quant = [f"--quantization {QUANTIZATION[c.weights]}"] if c.weights in QUANTIZATION else []
    pp = c.pipeline_parallel
    v = [f"vllm serve {hf}", *_flags(layout, "vllm"),
         *([f"--pipeline-parallel-size {pp}"] if pp > 1 else []),
         f"--max-num-seqs {c.max_num_seqs}",
         f"--max-num-batched-tokens {c.max_num_batched_tokens}", *quant]
    if c.kv_dtype != "bf16":
        v.append(f"--kv-cache-dtype {c.kv_dtype}")
    s = [f"python -m sglang.launch_server --model-path {hf}", *_flags(layout, "sglang"),
         *([f"--pp-size {pp}"] if pp > 1 else []),
         f"--max-running-requests {c.max_num_seqs * c.data_parallel}",
         f"--chunked-prefill-size {c.max_num_batched_tokens}", *quant]
    if c.kv_dtype != "bf16":
        s.append(f"--kv-cache-dtype {c.kv_dtype}_e4m3")
    t = [f"trtllm-serve {hf}", *_flags(layout, "trtllm"), *([f"--pp_size {pp}"] if pp > 1 else []),
         f"--max_batch_size {c.max_num_seqs}", f"--max_num_tokens {c.max_num_batched_tokens}"]
    options = layout.trtllm_options()
    if c.speculative is not None:
        k = c.speculative[0]
        if mtp:
            v.append(f"--speculative-config '{{\"method\": \"mtp\", "
                     f"\"num_speculative_tokens\": {k}}}'")
            s += ["--speculative-algorithm EAGLE", f"--speculative-num-steps {k}",
                  "--speculative-eagle-topk 1", f"--speculative-num-draft-tokens {k + 1}"]
            options.append(f"speculative_config: {{decoding_type: MTP, "
                           f"num_nextn_predict_layers: {k}}}")
        else:
            note = (f"# speculative ({k} draft tokens): add the flags of your EAGLE head or "
                    "draft model")
            v.append(note)
            s.append(note)
            t.append(note)
    if options:
        t.append(f"--extra_llm_api_options <(printf '%s\\n' {' '.join(repr(o) for o in options)})")
    return {"vllm": " ".join(v), "sglang": " ".join(s), "trtllm": " ".join(t)}


def _has_mtp(model: str) -> bool:
    """Whether ``model``'s config carries multi-token-prediction modules (its own draft)."""
    return load_model(model).mtp is not None


def _flags(layout: ParallelLayout, engine: str) -> list[str]:
    """The layout's flags, or a note where ``engine`` cannot spell it."""
    try:
        return layout.flags(engine)
    except NapkinError as e:
        return [f"# not expressible: {e}"]
