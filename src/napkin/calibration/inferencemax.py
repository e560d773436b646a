"""InferenceMAX runs: the server flags its launch scripts set, so a replay starts the engine as
the measured run did.

InferenceMAX (github.com/SemiAnalysisAI/InferenceX) launches each engine from a script per
model, precision, GPU and engine (``benchmarks/[single_node/]dsr1_fp8_b200.sh`` …) whose flags
differ from the engine's defaults: SGLang's DeepSeek scripts cap the running requests, size the
chunked prefill, set the static memory fraction and the KV-cache format, and on Blackwell let
the scheduler take in new requests only every 10 (fewer than 16 clients) or 30 decode steps
(``--scheduler-recv-interval``), which adds up to that many decode steps to a TTFT. TensorRT-
LLM's scripts set the step's token budget close to one prompt, leave chunked prefill off, lower
the KV memory fraction and, in some, hold prompts back to batch them. The recipes below are the
flags of those scripts (and of SGLang's Qwen3.5 and GLM-5 scripts, whose Blackwell Qwen3.5 ones
also space the scheduler's intake) at the dates of the silicon sample's runs (2025-10-29 to
2026-04-18; read at InferenceX commits 7daaa8b, 008b91a, d7dbd04, 12ba0ae, 843c625 and the days
around each change; where a script changed within that span the engine version or the run's
date tells the two apart).
Runs no recipe covers keep the engine's defaults.
"""

from napkin.calibration.measurements.records import Launch
from napkin.catalog.checkpoints import declares_fp8_kv
from napkin.specs.releases import version_at_least

FILE_FORMAT = {"fp8": "fp8", "nvfp4": "fp4", "mxfp4": "fp4", "mxfp4-w4a8": "fp4"}
"""The precision in an InferenceMAX script's name (``gptoss_fp4_b200.sh``) of napkin's format."""
SOURCE = "SemiAnalysisAI/InferenceX benchmarks/[single_node/]{script} (2025-10 to 2026-04)"
DEEPSEEK = ("deepseek-r1", "deepseek-v3")


def _sglang(running: int | None, chunk: int | None, memory: float, recv: int, source: str
            ) -> Launch:
    """``--max-running-requests``, ``--chunked-prefill-size``, ``--mem-fraction-static`` and
    ``--scheduler-recv-interval`` as a :class:`Launch`."""
    return Launch(max_num_seqs=running, max_num_batched_tokens=chunk, memory_fraction=memory,
                  scheduler_recv_interval=recv, source=source)


def sglang_deepseek(gpu: str, weights: str, tp: int, concurrency: int, isl: int,
                    osl: int) -> tuple[Launch, str] | None:
    """SGLang's flags and KV-cache format in InferenceMAX's DeepSeek-R1 scripts, or None where
    it has none. ``dsr1_fp8_{b200,b300}.sh``: TP 8 — chunk 32,768, memory 0.82 (its cap of 128
    running requests is left out: the sample's TP-8 runs at 256 and 512 clients ran them all at
    once — mean TTFT 2.1 and 3.1 s at 1k/1k where a cap of 128 queues each request for about
    one request's life, ≈ 29 s — so they were launched without it); TP 4 — 32 running, chunk
    8,192, memory 0.95, recv every 10; FP8 KV.
    ``dsr1_fp4_{b200,b300}.sh``: 256 running, chunk 16,384, memory 0.85, FP8 KV. On Blackwell
    the scheduler takes in requests every 30 decode steps from 16 clients, else every 10.
    ``dsr1_fp8_h200.sh``: 512 running at 1k/1k, else 256; chunk 32,768, memory 0.82, BF16 KV
    (no ``--kv-cache-dtype``), every step."""
    recv = 30 if concurrency >= 16 else 10
    if gpu in ("b200", "b300") and weights == "fp8" and tp in (4, 8):
        script = SOURCE.format(script=f"dsr1_fp8_{gpu}.sh")
        if tp == 8:
            return _sglang(None, 32768, 0.82, recv, script), "fp8"
        return _sglang(32, 8192, 0.95, 10, script), "fp8"
    if gpu in ("b200", "b300") and weights == "nvfp4":
        return _sglang(256, 16384, 0.85, recv, SOURCE.format(script=f"dsr1_fp4_{gpu}.sh")), "fp8"
    if gpu == "h200" and weights == "fp8":
        running = 512 if (isl, osl) == (1024, 1024) else 256
        return _sglang(running, 32768, 0.82, 1, SOURCE.format(script="dsr1_fp8_h200.sh")), "bf16"
    return None


SGLANG_B300_SCRIPTS = "2026-04-17"
"""The day InferenceX merged its single-node SGLang B300 scripts
(``qwen3.5_{bf16,fp8,fp4}_b300.sh``, ``glm5_fp8_b300.sh``: commits c0f62a2, 8acbd08, 32274d6,
6c66a00); the sample's B300 runs of Qwen3.5 and GLM-5 from before (3 April 2026, ``wip=True``)
ran unmerged flags napkin cannot read."""


def sglang_qwen35(gpu: str, weights: str, concurrency: int, measured: str
                  ) -> tuple[Launch, str] | None:
    """SGLang's flags and KV-cache format in InferenceMAX's Qwen3.5-397B-A17B scripts over the
    sample's span, or None where none is known.

    ``qwen3.5_{bf16,fp8}_b200.sh`` (from 20 Feb and 3 March 2026) and ``qwen3.5_fp4_b200.sh``
    (8 April): chunk 32,768, memory 0.82 (FP4: 0.85), the scheduler taking in requests every 10
    decode steps below 16 clients, else every 30; FP8 KV (``--kv-cache-dtype fp8_e4m3``) for
    FP8 and FP4 weights, the model's BF16 for BF16. ``qwen3.5_{bf16,fp4}_b300.sh`` (18 April):
    as on B200 with memory 0.82 (BF16) or 0.8 (FP4); ``qwen3.5_fp8_b300.sh`` (17 April): at
    most C requests, chunk 16,384, memory 0.8, every 10 steps, FP8 KV. ``qwen3.5_fp8_h200.sh``
    (4 March): chunk 16,384, memory 0.8, every step, FP8 KV. The scripts' cap of 128 running
    requests is left out, as in :func:`sglang_deepseek`: the sample's B200 FP8 runs at 256
    clients (TP 4, 20 March) measured 2.5 s mean TTFT at 1k/1k, 2.2 s at 1k/8k and 7.6 s at
    8k/1k, where a cap of 128 queues every other request for a whole request's life (30–300 s)."""
    fmt = FILE_FORMAT.get(weights, weights)
    script = SOURCE.format(script=f"qwen3.5_{fmt}_{gpu}.sh")
    recv = 30 if concurrency >= 16 else 10
    kv = "bf16" if weights == "bf16" else "fp8"
    if gpu == "b200" and weights in ("bf16", "fp8", "nvfp4"):
        return _sglang(None, 32768, 0.85 if weights == "nvfp4" else 0.82, recv, script), kv
    if gpu == "b300" and measured >= SGLANG_B300_SCRIPTS and weights == "fp8":
        return _sglang(concurrency, 16384, 0.8, 10, script), kv
    if gpu == "b300" and measured >= SGLANG_B300_SCRIPTS and weights in ("bf16", "nvfp4"):
        return _sglang(None, 32768, 0.82 if weights == "bf16" else 0.8, recv, script), kv
    if gpu == "h200" and weights == "fp8":
        return _sglang(None, 16384, 0.8, 1, script), kv
    return None


def sglang_glm5(gpu: str, weights: str, concurrency: int) -> tuple[Launch, str] | None:
    """SGLang's flags and KV-cache format in InferenceMAX's GLM-5 scripts over the sample's
    span, or None where none is known: ``glm5_fp8_b200.sh`` (20 March 2026) at most C running
    requests, chunk 32,768, memory 0.85, FP8 KV; ``glm5_nvfp4_b200.sh`` (28 March) at most C,
    chunk 131,072, memory 0.80, no KV format set (NVIDIA's NVFP4 checkpoint declares FP8:
    :func:`declares_fp8_kv`); ``glm5_fp8_h200.sh`` (18 March) memory 0.85 and the engine's
    other defaults, no KV format set (BF16: the FP8 checkpoint declares none). None of them
    sets ``--scheduler-recv-interval``. (B300: :data:`SGLANG_B300_SCRIPTS`.)"""
    if gpu == "b200" and weights == "fp8":
        return _sglang(concurrency, 32768, 0.85, 1, SOURCE.format(script="glm5_fp8_b200.sh")), \
            "fp8"
    if gpu == "b200" and weights == "nvfp4":
        kv = "fp8" if declares_fp8_kv("glm-5", weights) else "bf16"
        return _sglang(concurrency, 131072, 0.80, 1,
                       SOURCE.format(script="glm5_nvfp4_b200.sh")), kv
    if gpu == "h200" and weights == "fp8":
        return _sglang(None, None, 0.85, 1, SOURCE.format(script="glm5_fp8_h200.sh")), "bf16"
    return None


TRTLLM_MAX_BATCH = 2048
"""trtllm-serve's ``--max_batch_size`` when a script does not set it."""


def trtllm_launch(model: str, gpu: str, weights: str, version: str, tp: int,
                  concurrency: int, isl: int, osl: int) -> tuple[Launch, str] | None:
    """TensorRT-LLM's flags and KV-cache format in InferenceMAX's scripts (none enables chunked
    prefill, which trtllm-serve leaves off), or None where it has none.

    DeepSeek-R1 (``dsr1_{fp8,fp4}_b200_trt.sh``, ``dsr1_fp8_h200_trt.sh``): ``max_num_tokens``
    = ⌊(C + ISL + 127) / 64⌋·64 (with a floor of 8,192 from the TensorRT-LLM 1.2 scripts on,
    January 2026), free-memory fraction 0.8 (B200) or 0.75 (H200), FP8 KV; from 1.2 the B200
    FP8 script holds prompts back at 1k/1k from 64 clients (40 steps or 0.8 of the budget) and
    sets 0.75 at 8k/1k on TP 4 and 0.7 at 1k/8k from 256 clients. gpt-oss-120b
    (``gptoss_fp4_{b200,h200}_trt.sh``): 20,000 tokens, fraction 0.85, at most 512 (B200) or C
    (H200) requests; FP8 KV on B200 only. Llama-3.1-70B (``70b_{fp8,fp4}_{b200,h200}_trt``,
    October 2025): 16,384 tokens, FP8 KV, at 1k/1k below TP 8 prompts held 20 steps or 0.9 of
    the budget. DeepSeek's and gpt-oss's B200 runs with attention DP balance it
    (:data:`ADP_BALANCE`)."""
    tokens = (concurrency + isl + 127) // 64 * 64
    one_two = version_at_least(version, (1, 2))
    if model in DEEPSEEK and (gpu, weights) in (("b200", "fp8"), ("b200", "nvfp4"),
                                                 ("h200", "fp8")):
        tokens = max(tokens, 8192) if one_two else tokens
        fraction, wait = (0.75 if gpu == "h200" else 0.8), (0, 0.0)
        if one_two and (gpu, weights) == ("b200", "fp8"):
            if (isl, osl) == (1024, 1024) and concurrency >= 64:
                wait = (40, 0.8)
            elif (isl, osl) == (1024, 8192) and concurrency >= 256:
                fraction = 0.7
            elif (isl, osl) == (8192, 1024) and tp == 4:
                fraction = 0.75
        script = f"dsr1_{'fp8' if weights == 'fp8' else 'fp4'}_{gpu}_trt.sh"
        return (_trtllm(TRTLLM_MAX_BATCH, tokens, fraction, wait, script, ADP_BALANCE[model]),
                "fp8")
    if model == "gpt-oss-120b" and gpu in ("b200", "h200"):
        batch = 512 if gpu == "b200" else concurrency
        balance = ADP_BALANCE[model] if gpu == "b200" else (0, 0)
        return (_trtllm(batch, 20000, 0.85, (0, 0.0), f"gptoss_fp4_{gpu}_trt.sh", balance),
                "fp8" if gpu == "b200" else "bf16")
    if model == "llama-3.1-70b" and gpu in ("b200", "h200"):
        wait = (20, 0.9) if (isl, osl) == (1024, 1024) and tp < 8 else (0, 0.0)
        return (_trtllm(TRTLLM_MAX_BATCH, 16384, None, wait,
                        f"70b_{FILE_FORMAT.get(weights, weights)}_{gpu}_trt"), "fp8")
    return None


ADP_BALANCE = {"deepseek-r1": (60, 0), "deepseek-v3": (60, 0), "gpt-oss-120b": (50, 10)}
"""TensorRT-LLM's attention-DP balancing in InferenceMAX's scripts (every version since
September 2025), as (``timeout_iters``, ``batching_wait_iters``): ``dsr1_{fp8,fp4}_{b200,h200}
_trt.sh`` write ``attention_dp_config: {batching_wait_iters: 0, enable_balance: true,
timeout_iters: 60}`` when the run has attention DP; ``gptoss_fp4_b200_trt.sh`` writes
``enable_balance: true`` alone, so TensorRT-LLM's defaults hold (``AttentionDpConfig``: 50 and
10). It acts only in an engine over attention-DP ranks."""


def _trtllm(batch: int, tokens: int, fraction: float | None, wait: tuple[int, float],
            script: str, balance: tuple[int, int] = (0, 0)) -> Launch:
    """``max_batch_size``, ``max_num_tokens``, ``free_gpu_memory_fraction``, batch waiting
    (steps, token ratio) and attention-DP balancing (:data:`ADP_BALANCE`), chunked prefill off,
    as a :class:`Launch`."""
    return Launch(max_num_seqs=batch, max_num_batched_tokens=tokens,
                  memory_fraction=fraction, chunked_prefill=False,
                  batch_wait_timeout_iters=wait[0], batch_wait_max_tokens_ratio=wait[1],
                  attention_dp_timeout_iters=balance[0],
                  attention_dp_batching_wait_iters=balance[1],
                  source=SOURCE.format(script=script))


VLLM_CHANGES = {("minimax-m2.5", "b200", "fp8"): "2026-04-03T16:31:35",
                ("kimi-k2.5", "b200", "nvfp4"): "2026-04-20T14:22:32",
                ("gpt-oss-120b", "b200", "mxfp4-w4a8"): "2025-12-05T21:49:06"}
"""When a vLLM script changed within the sample's span (UTC commit times: InferenceX bddbf40
"B200 Minimax FP8 vllm upgrade", 6c3aceb "Update Kimi K2.5 FP4 B200 vLLM server launch args",
25506e8 gpt-oss B200 FP8 KV cache); a run measured later ran the new flags."""


VLLM_AUTO_KV_FROM_CHECKPOINT = (0, 14)
"""From this vLLM release on, a server launched without ``--kv-cache-dtype`` runs the KV-cache
format a ModelOpt checkpoint declares (``kv_cache_quant_algo``; vllm-project/vllm PR #30785,
merged 2025-12-16, "Load kv-cache dtype from hf_quant_config.json automatically"; issue #34752
lists the unset flag as taking the checkpoint's FP8). Before it, the cache was the model's
dtype (BF16). 0.14 is the first release branched after the merge."""


def vllm_auto_kv(model: str, weights: str, version: str) -> str:
    """The KV-cache format of a vLLM server whose script sets no ``--kv-cache-dtype``: the
    checkpoint's FP8 where it declares one (:func:`declares_fp8_kv`) and the release reads it
    (:data:`VLLM_AUTO_KV_FROM_CHECKPOINT`), else BF16."""
    reads = version_at_least(version, VLLM_AUTO_KV_FROM_CHECKPOINT)
    return "fp8" if reads and declares_fp8_kv(model, weights) else "bf16"


def vllm_launch(model: str, gpu: str, weights: str, concurrency: int, isl: int,
                measured: str, version: str = "") -> tuple[Launch, str] | None:
    """vLLM's flags and KV-cache format in InferenceMAX's scripts, or None where it has none.

    MiniMax-M2.5 (``minimaxm2.5_{fp8,fp4}_{b200,b300,h200}.sh``): memory 0.90, FP8 KV and a
    2·ISL token budget on Blackwell (B200 FP8 until its April 2026 upgrade: 0.95, BF16 KV),
    0.95 and BF16 KV on H200; on H100 (``minimaxm2.5_fp8_h100.sh``, March 2026: ``tp 4, ep 4``)
    0.90, at most 256 requests and no KV format set — MiniMax's own FP8 checkpoint declares
    none, so the cache is BF16. Kimi-K2.5 (``kimik2.5_{int4,fp4}_…``): at most C requests;
    INT4 0.95, FP4 0.90, no KV format set (B200 FP4 from 20 April 2026: FP8 KV, 2·ISL tokens),
    so NVIDIA's NVFP4 checkpoint runs the FP8 cache it declares on vLLM ≥ 0.14
    (:func:`vllm_auto_kv`) and INT4 a BF16 one.
    gpt-oss-120b (``gptoss_fp4_{b200,h200}.sh``): 0.9, 8,192 tokens, at most 512 (B200) or C
    (H200) requests, FP8 KV on B200 from December 2025; ``gptoss_fp4_h100.sh`` (March 2026) as on
    H200: 8,192 tokens, 0.9, at most C requests and no KV format set (BF16: gpt-oss's MXFP4
    checkpoint declares none). Llama-3.1-70B (``70b_{fp8,fp4}_…``,
    October 2025): 0.9, 8,192 tokens, at most 512 (B200) or C (H200), FP8 KV."""
    changed = VLLM_CHANGES.get((model, gpu, weights))
    new = changed is None or measured >= changed
    fmt = FILE_FORMAT.get(weights, "int4")
    prefix = {"minimax-m2.5": "minimaxm2.5", "kimi-k2.5": "kimik2.5", "gpt-oss-120b": "gptoss",
              "llama-3.1-70b": "70b"}.get(model, model)
    script = f"{prefix}_{fmt}_{gpu.removesuffix('-sxm')}.sh"
    if model == "minimax-m2.5" and gpu in ("b200", "b300") and new:
        return _vllm(None, 2 * isl, 0.90, script), "fp8"
    if model == "minimax-m2.5" and gpu in ("b200", "h200"):
        return _vllm(None, None, 0.95, script), "bf16"
    if model == "minimax-m2.5" and gpu == "h100-sxm":
        return _vllm(256, None, 0.90, script), "bf16"
    if model == "kimi-k2.5" and gpu in ("b200", "b300", "h200"):
        if weights == "nvfp4" and gpu == "b200" and new:
            return _vllm(concurrency, 2 * isl, 0.90, script), "fp8"
        return (_vllm(concurrency, None, 0.90 if weights == "nvfp4" else 0.95, script),
                vllm_auto_kv(model, weights, version))
    if model == "gpt-oss-120b" and gpu == "h100-sxm":
        return _vllm(concurrency, 8192, 0.9, script), "bf16"
    if model in ("gpt-oss-120b", "llama-3.1-70b") and gpu in ("b200", "h200"):
        fp8_kv = model == "llama-3.1-70b" or (gpu == "b200" and new)
        return (_vllm(512 if gpu == "b200" else concurrency, 8192, 0.9, script),
                "fp8" if fp8_kv else "bf16")
    return None


def _vllm(seqs: int | None, tokens: int | None, memory: float, script: str) -> Launch:
    """``--max-num-seqs``, ``--max-num-batched-tokens`` and ``--gpu-memory-utilization`` as a
    :class:`Launch`."""
    return Launch(max_num_seqs=seqs, max_num_batched_tokens=tokens, memory_fraction=memory,
                  source=SOURCE.format(script=script))


def launch_of(backend: str, model: str, gpu: str, weights: str, version: str, tp: int,
              concurrency: int, isl: int, osl: int, measured: str = ""
              ) -> tuple[Launch, str] | None:
    """The flags and KV-cache format an InferenceMAX run of this engine (and version), model,
    GPU, weights, TP and load was launched with, where a recipe is known; else None (the
    engine's defaults). ``measured``: the run's UTC time (``2026-04-03T02:34:11``; a date
    alone counts as the start of that day; empty: before every change)."""
    if backend == "sglang" and model in DEEPSEEK:
        return sglang_deepseek(gpu, weights, tp, concurrency, isl, osl)
    if backend == "sglang" and model == "qwen3.5-397b-a17b":
        return sglang_qwen35(gpu, weights, concurrency, measured)
    if backend == "sglang" and model == "glm-5":
        return sglang_glm5(gpu, weights, concurrency)
    if backend == "trtllm":
        return trtllm_launch(model, gpu, weights, version, tp, concurrency, isl, osl)
    if backend == "vllm":
        return vllm_launch(model, gpu, weights, concurrency, isl, measured, version)
    return None
