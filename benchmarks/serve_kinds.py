"""The scenario kinds ``serve_speed_vs.py`` times, as plain data (no napkin import).

Each kind is one or more rows: a label and a scenario mapping (what a scenario YAML file
parses to), sized so that one simulation takes about 1–3 s on the 2-core development machine.
Both trees of a comparison validate the same mapping, so neither tree's catalog scenarios
enter; the models and calibration profiles named are the catalog's (the script notes any that
differ between the trees).

- ``vllm``: ``serve_speed.py``'s workload (Qwen3-8B, one H100, lognormal lengths, Poisson
  10/s) on the roofline and on the shipped vLLM profile, at ``--sizes``;
- ``trtllm``, ``sglang``: the same workload under each backend's shipped profile, and with
  the feature that backend alone has (TensorRT-LLM's batch waiting, SGLang's receive
  interval of 4 steps);
- ``prefix-caching``: vLLM with prefix caching, two classes with 1,024- and 512-token system
  prompts;
- ``windows``: gpt-oss-20b (sliding-window layers of 128 tokens) on the roofline;
- ``disaggregated``: one prefill and two decode replicas, Poisson 20/s;
- ``multi-replica``: four replicas at Poisson 40/s, round-robin and least-KV routing;
- ``closed-loop``: 64 clients without think time;
- ``speculative``: two draft tokens a step (acceptance 0.8, a draft costs 0.05 decode steps);
- ``static``: static batching at Poisson 5/s.

Basis recording is an engine argument (calibration fits), not a scenario field, so no kind
times it.
"""

from collections.abc import Callable
from typing import Any

Mapping = dict[str, Any]

ROOFLINE: Mapping = {"calibration": "roofline", "mfu": 0.7, "mbu": 0.95, "step_overhead_ms": 4}
"""``serve_speed.py``'s roofline (before calibration profiles existed)."""


def lognormal(n: int, rate: float = 10, **classes: Mapping) -> Mapping:
    """``serve_speed.py``'s workload of ``n`` requests at ``rate`` a second: lognormal lengths
    (input median 1,000 tokens, output 250, σ 1; at most 16,000 and 4,000), one class ``chat``
    or ``classes`` (each that class's extra fields, such as a shared prefix)."""
    lengths = {
        "input_tokens": {"dist": "lognormal", "median": 1000, "sigma": 1.0, "max": 16000},
        "output_tokens": {"dist": "lognormal", "median": 250, "sigma": 1.0, "max": 4000}}
    return {"seed": 1,
            "classes": {name: {**lengths, **extra}
                        for name, extra in (classes or {"chat": {}}).items()},
            "arrivals": {"kind": "poisson", "rate_per_s": rate, "num_requests": n}}


def qwen(n: int, timing: Mapping, engine: Mapping | None = None,
         workload: Mapping | None = None) -> Mapping:
    """Qwen3-8B BF16 on one H100 SXM, ``serve_speed.py``'s engine (256 sequences, an
    8,192-token budget) with ``engine``'s settings over it."""
    return {"name": "bench", "model": "qwen3-8b", "gpu": "h100-sxm", **timing,
            "engine": {"max_num_seqs": 256, "max_num_batched_tokens": 8192, **(engine or {})},
            "workload": workload or lognormal(n)}


def profile(name: str) -> Mapping:
    """Step times from the shipped profile ``name``."""
    return {"calibration": name}


SYSTEM: Mapping = {"shared_prefix_tokens": 1024}
TOOL: Mapping = {"shared_prefix_tokens": 512}
"""The prefix-caching kind's classes: their shared system prompts."""

Row = tuple[str, int, Callable[[int], Mapping]]
"""A row of a kind: its label, its default request count and its scenario at a count."""

KINDS: dict[str, list[Row]] = {
    "vllm": [
        ("vllm, roofline", 50_000, lambda n: qwen(n, ROOFLINE)),
        ("vllm, vLLM profile", 50_000, lambda n: qwen(n, profile("vllm")))],
    "trtllm": [
        ("trtllm, profile", 50_000, lambda n: qwen(n, profile("trtllm"), {"backend": "trtllm"})),
        ("trtllm, batch waiting", 30_000, lambda n: qwen(n, profile("trtllm"), {
            "backend": "trtllm", "batch_wait_timeout_iters": 4,
            "batch_wait_max_tokens_ratio": 0.5}))],
    "sglang": [
        ("sglang, profile", 40_000, lambda n: qwen(n, profile("sglang"), {"backend": "sglang"})),
        ("sglang, receive interval 4", 30_000, lambda n: qwen(n, profile("sglang"), {
            "backend": "sglang", "scheduler_recv_interval": 4}))],
    "prefix-caching": [
        ("prefix caching", 15_000, lambda n: qwen(n, ROOFLINE, {"enable_prefix_caching": True},
                                                  lognormal(n, system=SYSTEM, tool=TOOL)))],
    "windows": [
        ("sliding windows, gpt-oss-20b", 5_000, lambda n: {
            **qwen(n, ROOFLINE), "model": "gpt-oss-20b"})],
    "disaggregated": [
        ("disaggregated, 1 prefill + 2 decode", 15_000, lambda n: qwen(n, ROOFLINE, {
            "disaggregated": {"prefill_replicas": 1, "decode_replicas": 2}},
            lognormal(n, rate=20)))],
    "multi-replica": [
        (f"4 replicas, {router}", size, lambda n, router=router: qwen(n, ROOFLINE, {
            "replicas": 4, "router": router}, lognormal(n, rate=40)))
        for router, size in (("round_robin", 30_000), ("least_kv", 20_000))],
    "closed-loop": [
        ("closed loop, 64 clients", 10_000, lambda n: qwen(n, ROOFLINE, workload={
            **lognormal(n), "arrivals": {"kind": "closed_loop", "clients": 64,
                                         "num_requests": n}}))],
    "speculative": [
        ("speculative, 2 draft tokens", 30_000, lambda n: qwen(n, ROOFLINE, {"speculative": {
            "draft_tokens": 2, "acceptance": 0.8, "draft_cost": 0.05}}))],
    "static": [
        ("static batching", 40_000, lambda n: qwen(n, ROOFLINE, {"batching": "static"},
                                                   lognormal(n, rate=5)))],
}
