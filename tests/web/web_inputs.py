"""Small inputs the web tests share: a short scenario window, a small plan."""

SMALL_WINDOWS = ("workload.arrivals.windows=[{duration_s: 30, requests: 40, "
                 "mix: {long_input: 1, long_output: 1}}]")
SMALL_PLAN = """
name: small plan
model: llama-3.1-70b
weights: fp8
workload:
  name: 8 req/s, 2000 in / 300 out
  seed: 0
  classes:
    chat: {input_tokens: 2000, output_tokens: 300}
  arrivals: {kind: poisson, rate_per_s: 8, duration_s: 20}
slo: {ttft_s: 1.0, tpot_s: 0.05, share: 0.95}
search:
  gpus: [h200, b200]
  tensor_parallel: [1, 2]
  replicas: [1, 2, 3]
  max_num_seqs: [128]
  backends: [vllm]
seeds: 1
"""
