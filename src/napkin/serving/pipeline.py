"""Pipeline parallelism in serving: a replica's layers split over ``stages`` groups of GPUs.

Engines with pipeline parallelism (vLLM ``--pipeline-parallel-size``, TensorRT-LLM
``pp_size``, SGLang ``--pp-size``) keep as many batches in flight as there are stages
(vLLM V1: ``max_concurrent_batches`` = the PP size, a batch queue): while stage 2 runs one
micro-batch, stage 1 runs the next. A request takes part in one in-flight batch at a time, so a
replica of p stages behaves as p *virtual engines*, each holding about 1/p of the running
requests and stepping once per pass through the pipeline:

    t_step(batch) = Σ over stages of the stage's work + (p − 1) · boundary transfer
                  = the whole model's step time at the replica's TP (summed layer by layer)
                    + (p − 1) · (latency + tokens · hidden · 2 B / t / link)

(each of the t tensor-parallel ranks sends its 1/t of the hidden activations across a
boundary: :func:`~napkin.accounting.collectives.stage_boundary_bytes_per_token`). The pipeline
bubble is what this gives at low load: with fewer in-flight batches than stages the others'
GPUs idle, and one request's TPOT is a whole pass, not one stage's time. Each virtual engine
gets ``1/p`` of the replica's KV blocks, of ``max_num_seqs`` and of a host KV tier, and the
whole token budget per step. What this leaves out: the stages' uneven split of the layers
(the embedding and the head on the first and last), a micro-batch waiting on a slower one ahead
of it in the pipeline, and one KV pool shared by the micro-batches (here each holds its
share)."""

from typing import TYPE_CHECKING

from napkin.accounting.ranks import Parts
from napkin.serving.wrapped_timer import WrappedTimer
from napkin.timing.series import StepSeries

if TYPE_CHECKING:
    from napkin.serving.engine_spec import StepTimer


class PipelineTimer(WrappedTimer):
    """A virtual engine's step over ``stages`` pipeline stages: ``inner`` (the whole model at
    the replica's TP) plus ``stages − 1`` boundary transfers of ``boundary_bytes_per_token``
    per token over ``link_bytes_per_s``, each after ``latency_s``."""

    def __init__(self, inner: "StepTimer", stages: int, boundary_bytes_per_token: float,
                 link_bytes_per_s: float, latency_s: float) -> None:
        super().__init__(inner)
        self.stages = stages
        self.boundary_bytes_per_token = boundary_bytes_per_token
        self.link_bytes_per_s, self.latency_s = link_bytes_per_s, latency_s

    def boundary_s(self, tokens: int) -> float:
        """The step's transfers between stages: ``(p − 1)·(latency + T·bytes/link)``."""
        return (self.stages - 1) * (self.latency_s + tokens * self.boundary_bytes_per_token
                                    / self.link_bytes_per_s)

    def step_s(self, parts: Parts, tokens: int, prefill: bool = False) -> float:
        return self.inner.step_s(parts, tokens, prefill) + self.boundary_s(tokens)

    def series(self, parts0: Parts, parts1: Parts | None, tokens: int,
               prefill: bool = False) -> StepSeries:
        return self.inner.series(parts0, parts1, tokens, prefill).plus(self.boundary_s(tokens))
