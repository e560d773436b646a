"""InferenceMAX runs: the server flags its launch scripts set, so a replay starts the engine
as the measured run did.

InferenceMAX (github.com/SemiAnalysisAI/InferenceX) launches each engine from a script per
model, precision, GPU and engine (``benchmarks/[single_node/]dsr1_fp8_b200.sh`` …) whose flags
differ from the engine's defaults: SGLang's DeepSeek scripts cap the running requests, size the
chunked prefill, set the static memory fraction and the KV-cache format, and on Blackwell let
the scheduler take in new requests only every 10 (fewer than 16 clients) or 30 decode steps
(``--scheduler-recv-interval``), which adds up to that many decode steps to a TTFT. The
recipes below are the flags of those scripts, which did not change from 2025-11-10 to
2026-04-17 (the dates of the silicon sample's runs; read at InferenceX commits 7daaa8b,
008b91a, d7dbd04, 12ba0ae). Runs no recipe covers keep the engine's defaults.
"""

from napkin.calibration.measurements import Launch

SOURCE = "SemiAnalysisAI/InferenceX benchmarks/[single_node/]{script} (2025-11 to 2026-04)"
DEEPSEEK = ("deepseek-r1", "deepseek-v3")


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
            return Launch(None, 32768, 0.82, recv, script), "fp8"
        return Launch(32, 8192, 0.95, 10, script), "fp8"
    if gpu in ("b200", "b300") and weights == "nvfp4":
        return Launch(256, 16384, 0.85, recv, SOURCE.format(script=f"dsr1_fp4_{gpu}.sh")), "fp8"
    if gpu == "h200" and weights == "fp8":
        running = 512 if (isl, osl) == (1024, 1024) else 256
        return Launch(running, 32768, 0.82, 1, SOURCE.format(script="dsr1_fp8_h200.sh")), "bf16"
    return None


def launch_of(backend: str, model: str, gpu: str, weights: str, tp: int, concurrency: int,
              isl: int, osl: int) -> tuple[Launch, str] | None:
    """The flags and KV-cache format an InferenceMAX run of this engine, model, GPU, weights,
    TP and load was launched with, where a recipe is known; else None (engine defaults)."""
    if backend == "sglang" and model in DEEPSEEK:
        return sglang_deepseek(gpu, weights, tp, concurrency, isl, osl)
    return None
