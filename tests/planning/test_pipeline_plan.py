"""Plans search pipeline stages: candidates, GPU counts, labels and launch flags."""

from napkin.planning.launch import launch_commands
from napkin.planning.spec import PlanFile, candidates

WORKLOAD = {"seed": 0, "classes": {"chat": {"input_tokens": 1000, "output_tokens": 100}},
            "arrivals": {"kind": "poisson", "rate_per_s": 1, "num_requests": 20}}


def _plan(model: str, **search) -> PlanFile:
    return PlanFile.model_validate({"model": model, "workload": WORKLOAD,
                                    "search": {"gpus": ["h100-sxm"], "replicas": [1],
                                               **search}})


def test_a_pipeline_candidate_counts_every_stage_and_launches_with_its_flags():
    """TP 4 × PP 2: 8 GPUs a replica, labelled ``tp4 pp2``; vLLM ``--pipeline-parallel-size
    2``, SGLang ``--pp-size 2``, TensorRT-LLM ``--pp_size 2`` beside the TP flags."""
    cs = candidates(_plan("llama-3.1-70b", tensor_parallel=[4], pipeline_parallel=[1, 2]))
    pp = next(c for c in cs if c.pipeline_parallel == 2)
    assert (pp.gpus, pp.parallel_label) == (8, "tp4 pp2")
    assert [c.gpus for c in cs] == [4, 8]
    cmds = launch_commands(pp, "llama-3.1-70b")
    assert "--pipeline-parallel-size 2" in cmds["vllm"]
    assert "--pp-size 2" in cmds["sglang"] and "--pp_size 2" in cmds["trtllm"]
    assert pp.scenario(_plan("llama-3.1-70b"), _plan("llama-3.1-70b").workload
                       ).engine.pipeline_parallel == 2


def test_pipelines_are_not_combined_with_data_parallel_attention_or_expert_parallelism():
    cs = candidates(_plan("qwen3-30b-a3b", tensor_parallel=[1, 2], pipeline_parallel=[1, 2],
                          data_parallel=[1, 2], expert_parallel=[False, True]))
    assert all(c.data_parallel == 1 and not c.expert_parallel
               for c in cs if c.pipeline_parallel > 1)
    assert any(c.pipeline_parallel == 2 for c in cs)


def test_max_gpus_counts_the_stages():
    cs = candidates(_plan("llama-3.1-70b", tensor_parallel=[4, 8], pipeline_parallel=[1, 2],
                          max_gpus=8))
    assert sorted((c.tensor_parallel, c.pipeline_parallel) for c in cs) == [(4, 1), (4, 2),
                                                                          (8, 1)]
