"""napkin: napkin math for LLM systems.

Every figure napkin prints is computed from a model spec (a Hugging Face ``config.json``), an
accelerator spec (with sources) and assumptions that are inputs with printed defaults.
Layers, top to bottom: ``units`` → ``specs`` → ``accounting`` → ``timing`` → domains
(``inference``, ``serving``, ``training``, …) → ``report`` → ``api`` → ``web``, ``cli``.

The stable public surface is :data:`__all__`: one function per CLI command (keyword
arguments, a :class:`~napkin.api.result.Result` back) and the spec loaders. Each name loads its
module on first use, so ``import napkin`` stays fast.
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # specs
    "load_model": "napkin.api.specs",
    "load_gpu": "napkin.api.specs",
    "deployment": "napkin.api.specs",
    "Result": "napkin.api.result",
    # catalog
    "list_models": "napkin.api.catalog",
    "list_gpus": "napkin.api.catalog",
    "describe_model": "napkin.api.catalog",
    # one call, decode, capacity, MoE
    "call": "napkin.api.inference",
    "decode_table": "napkin.api.inference",
    "capacity": "napkin.api.inference",
    "moe": "napkin.api.inference",
    # decisions, cost, evaluation
    "decision": "napkin.api.decision",
    "ced": "napkin.api.decision",
    "cost_success": "napkin.api.cost",
    "cost_price": "napkin.api.cost",
    "cost_escalation": "napkin.api.cost",
    "cost_breakeven": "napkin.api.cost",
    "eval_passk": "napkin.api.evaluation",
    "eval_ci": "napkin.api.evaluation",
    "eval_results": "napkin.api.evaluation",
    "eval_bootstrap": "napkin.api.evaluation",
    "eval_bpb": "napkin.api.evaluation",
    "eval_dpo": "napkin.api.evaluation",
    "eval_grpo": "napkin.api.evaluation",
    # serving, planning, calibration, worked examples
    "demand": "napkin.api.serving",
    "fluid": "napkin.api.serving",
    "simulate": "napkin.api.serving",
    "sweep": "napkin.api.serving",
    "serve_metrics": "napkin.api.serving",
    "serve_little": "napkin.api.serving",
    "plan": "napkin.api.planning",
    "calibrate": "napkin.api.calibration",
    "validate": "napkin.api.calibration",
    "list_examples": "napkin.api.examples",
    "run_examples": "napkin.api.examples",
    # training, RL, scaling, rules of thumb
    "train": "napkin.api.training",
    "rl": "napkin.api.training",
    "run_record": "napkin.api.training",
    "pretrain": "napkin.api.scaling",
    "fit_scaling": "napkin.api.scaling",
    "scaling_optimum": "napkin.api.scaling",
    "lifecycle": "napkin.api.scaling",
    "flops": "napkin.api.rules",
    "speculative": "napkin.api.rules",
    "attention_matrix": "napkin.api.rules",
    "loss_mask": "napkin.api.rules",
    "loss_norm": "napkin.api.rules",
    "lora": "napkin.api.rules",
    "gpu_hours": "napkin.api.rules",
    "tokens": "napkin.api.bank",
    "attention_scale": "napkin.api.bank",
    "objectives": "napkin.api.bank",
    "balance_loss": "napkin.api.bank",
    "rounding": "napkin.api.bank",
    "eval_retrieval": "napkin.api.retrieval",
    "eval_rrf": "napkin.api.retrieval",
    # agents, context, media
    "analyze_trajectory": "napkin.api.agents",
    "context_rounds": "napkin.api.agents",
    "context_edit": "napkin.api.agents",
    "context_growth": "napkin.api.agents",
    "media_vision": "napkin.api.media",
    "media_diffusion": "napkin.api.media",
    "media_audio": "napkin.api.media",
    "media_jitter": "napkin.api.media",
    "media_interrupt": "napkin.api.media",
    "media_drain": "napkin.api.media",
}
"""Public name → the module that defines it."""

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'napkin' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
