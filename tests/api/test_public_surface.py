"""napkin's stable Python surface: every CLI command has a public function, and the names and
signatures of ``napkin.__all__`` change only on purpose (update SURFACE below with the change)."""

import inspect

import napkin
from napkin.api.result import Result
from napkin.cli.main import command

EXCEPTIONS = {("models",): "list_models", ("gpus",): "list_gpus", ("model",): "describe_model",
              ("decode",): "decode_table", ("agent",): "analyze_trajectory",
              ("examples", "list"): "list_examples", ("examples", "run"): "run_examples",
              ("scaling", "fit"): "fit_scaling", ("scaling", "optimum"): "scaling_optimum",
              ("serve", "demand"): "demand", ("serve", "fluid"): "fluid",
              ("serve", "simulate"): "simulate", ("serve", "sweep"): "sweep",
              ("web",): None}
"""CLI command path → public function, where the name is not the path joined by ``_``
(``napkin web`` serves the API; it has no function of its own)."""


def _leaves(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if not subs:
        yield path
        return
    for name, sub in subs.items():
        yield from _leaves(sub, (*path, name))


def test_every_cli_command_has_a_public_function():
    missing = []
    for path in _leaves(command()):
        name = EXCEPTIONS.get(path, "_".join(path).replace("-", "_"))
        if name is not None and name not in napkin.__all__:
            missing.append(f"napkin {' '.join(path)} → napkin.{name}")
    assert not missing, missing


def _signature(fn) -> str:
    """Parameter names, kinds (positional or keyword-only) and defaults; not annotations."""
    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = ("*" if p.kind is p.VAR_POSITIONAL else "") + p.name
        if p.default is not p.empty:
            text += f"={p.default!r}"
        parts.append(text)
    return ", ".join(parts)


def test_every_public_function_returns_a_result_and_is_documented():
    for name in napkin.__all__:
        obj = getattr(napkin, name)
        if not inspect.isfunction(obj):
            continue
        assert obj.__doc__ and len(obj.__doc__.split()) >= 5, f"napkin.{name} has no docstring"
        if name not in ("load_model", "load_gpu", "deployment"):
            hint = inspect.signature(obj).return_annotation
            assert hint in (Result, "Result"), f"napkin.{name} returns {hint}"


def test_surface_is_unchanged():
    actual = {name: _signature(getattr(napkin, name)) for name in napkin.__all__
              if inspect.isfunction(getattr(napkin, name))}
    assert actual == SURFACE, {k: v for k, v in actual.items() if SURFACE.get(k) != v}


SURFACE: dict[str, str] = {
    'load_model': 'model',
    'load_gpu': 'gpu=None, *, gpu_mem_gb=None, gpu_bw_gbs=None, gpu_tflops=None',
    'deployment': (
        'model, gpu=None, *, gpu_mem_gb=None, gpu_bw_gbs=None, gpu_tflops=None, '
        "weights='bf16', kv_dtype='bf16', read_embedding=False, mfu=1.0, mbu=1.0, "
        'overhead_ms=0.0, unquantized=None'),
    'list_models': '',
    'list_gpus': '',
    'describe_model': ("model, *, weights='bf16', kv_dtype='bf16', read_embedding=False, "
                       'unquantized=None'),
    'call': (
        'model, *, new, cached=0, gen=1, batch=1, gpu=None, gpu_mem_gb=None, '
        "gpu_bw_gbs=None, gpu_tflops=None, weights='bf16', kv_dtype='bf16', "
        'read_embedding=False, mfu=1.0, mbu=1.0, overhead_ms=0.0, calibration=None, tp=1, '
        'unquantized=None, usd_per_kwh=None, pue=1.0, prefill_power_frac=1.0, '
        'decode_power_frac=0.43'),
    'decode_table': (
        'model, *, gpu=None, batch=1, context=4096, reserve_gb=0.0, gpu_mem_gb=None, '
        "gpu_bw_gbs=None, gpu_tflops=None, weights='bf16', kv_dtype='bf16', "
        'read_embedding=False, mfu=1.0, mbu=1.0, overhead_ms=0.0, calibration=None, tp=1, '
        'unquantized=None'),
    'capacity': (
        'model, *, gpu=None, count=1, context=4096, avg_context=None, reserve_gb=0.0, '
        "gpu_mem_gb=None, gpu_bw_gbs=None, gpu_tflops=None, weights='bf16', kv_dtype='bf16', "
        'unquantized=None'),
    'moe': (
        "model, *, batch=(1, 4, 16, 64), context=1, gpu='h100-sxm', gpu_mem_gb=None, "
        "gpu_bw_gbs=None, gpu_tflops=None, weights='bf16', kv_dtype='bf16', "
        'read_embedding=False, mfu=1.0, mbu=1.0, overhead_ms=0.0, ep=1, balancedness=None'),
    'decision': (
        "model, *, prompt=1929, questions=8, gen=64, gpu='h100-sxm', weights='bf16', "
        "kv_dtype='bf16', mfu=0.4, mbu=0.5, usd_per_gpu_hour=2.0, decode_batch=64, "
        'gen_range=(), request_usd=None, usd_per_million_input=None, llm_usd=None, '
        'ced=False, encoder_layers=None, replay=128'),
    'ced': '*, prompt=8192, encoder_layers=20, decoder_layers=20, replay=128',
    'cost_success': '*, cost, success, verification=None, tools=None, environment=None',
    'cost_price': '*, price_ratio, tokens_ratio, success_old, success_new',
    'cost_escalation': '*, decision_cost, llm_cost, share=(0.01, 0.05)',
    'cost_breakeven': "*, extra_upfront, saving, tasks=(), unit='usd'",
    'eval_passk': '*, n=10, c=2, k=5',
    'eval_ci': '*, p=0.6, n=500, p2=None',
    'eval_results': 'results, *, k=1, model=None',
    'eval_bootstrap': 'results, *, resamples=10000, seed=0, level=0.95',
    'eval_bpb': '*, loss=2.0, tokens=250, n_bytes=1000',
    'eval_dpo': '*, chosen=0.0, rejected=0.0, beta=0.1',
    'eval_grpo': "*, rewards=None, std='population', p=None, group=None",
    'demand': 'workload, *, window_s=None',
    'fluid': (
        "workload, *, capacity_steps_s=None, gpu=None, count=1, model='qwen3-8b', batch=64, "
        "context=None, weights='bf16', mbu=1.0, window_s=None"),
    'simulate': (
        'scenarios, *, overrides=(), mode=None, seed=None, export=None, parquet=False, '
        'progress=None, on_scenario=None'),
    'sweep': 'scenario, *, rates=None, seeds=1, overrides=()',
    'serve_metrics': 'log, *, percentiles=(50.0, 90.0, 95.0, 99.0)',
    'serve_little': ("*, rate_per_s, wait_s, state_gib=None, model=None, context=None, "
                     "kv_dtype='bf16'"),
    'plan': (
        "plan, *, jobs=0, top=15, export=None, executor='process', ray_address=None, "
        'progress=None'),
    'calibrate': (
        'files, *, backend, out, gpu=None, model=None, tp=None, weights=None, rounds=4, '
        "harness='steady', terms='all', campaign=(), jobs=0, progress=None"),
    'validate': (
        'sets=None, *, calibration=None, gpu=None, model=None, tp=None, weights=None, '
        "jobs=0, progress=None, by='group'"),
    'list_examples': '',
    'run_examples': 'ids=None',
    'train': (
        'model, *, seq=4096, docs=None, micro_batch=1, accumulation=1, labels=None, '
        "head='all', recompute='none', freeze=(), lora_rank=0, qlora=False, "
        "optimizer='adamw', zero=0, offload=False, devices=1, gpu='h100-sxm', "
        'gpu_mem_gb=None, gpu_bw_gbs=None, gpu_tflops=None, mfu=None, link_gbs=None, '
        'grad_dtype=None, flash=True, pipeline=1, virtual_stages=1, sequence_parallel=False, '
        'tp=1, gpus_per_node=None, inter_node_gbs=50.0, host_link_gbs=32.0, cpu_mem_gbs=100.0, '
        'tokens=None, epochs=None, dataset_tokens=None, usd_per_gpu_hour=None, '
        "precision='bf16', compiled=False, async_tp=False, cp=1, ep=1, allocator_overhead=None, "
        'eval_share=0.0, checkpoint_s=0.0, checkpoint_interval_s=1800.0, '
        'failures_per_gpu_hour=None, restart_s=0.0, offload_activations=False, '
        'offload_params=False, optimizer_in_backward=False, overlap_ep=False, '
        "activations='ffn'"),
    'rl': (
        'model, *, prompt_len=1024, gen_len=256, keep=16, keep_rate=None, generate=None, '
        "reference=True, teacher=None, reward_model=None, head='all', replicas=0, "
        "method='grpo', optimizer='adamw', gpu=None, count=8, separate=False, "
        "rollout_gpus=None, rollout_tp=1, mfu=0.4, calibration='auto', usd_per_gpu_hour=None, "
        "compare_generate=None"),
    'run_record': "path, *, kind='train'",
    'pretrain': (
        "*, gpu='rtx-4080', count=4, days=30.0, mfu=0.4, law='chinchilla', alt=(), "
        'gpu_mem_gb=None, gpu_bw_gbs=None, gpu_tflops=None'),
    'fit_scaling': (
        "path, *, n_col='params', d_col='tokens', loss_col='loss', holdout_min_n=None, "
        "grid='coarse', out=None, fix_E=None"),
    'scaling_optimum': "*, flops, law='chinchilla'",
    'lifecycle': (
        "*, target_loss, sizes, prompt=512, gen=128, gpu='h100-sxm', mfu=0.4, "
        "law='chinchilla', mix=None"),
    'flops': 'model=None, *, params=None, tokens=None, context=None',
    'speculative': '*, alpha=0.8, k=4, draft_cost=0.0',
    'attention_matrix': "model, *, seq=8192, batch=1, dtype='bf16'",
    'loss_mask': '*, prompt=3000, answer=100',
    'loss_norm': '*, tokens, mean_losses=None, loss_sums=None',
    'lora': "model=None, *, rank=8, d_in=None, d_out=None, proj='attn/q'",
    'gpu_hours': "hours, *, gpu='h100-sxm', devices=1, as_gpu=()",
    'tokens': "text=None, *, file=None, tokenizer='gpt2'",
    'attention_scale': 'model=None, *, d_k=None, var_q=1.0, var_k=1.0',
    'objectives': '*, seq=1000, mask_rate=0.15, bos=False',
    'balance_loss': 'f, *, p=None, alpha=0.01',
    'rounding': 'value, *, add=None',
    'eval_retrieval': "queries=None, *, ranked=(), relevant=(), k=5",
    'eval_rrf': 'lists, *, k=60, top=10',
    'analyze_trajectory': (
        'trajectories, *, speedup=(), model=None, gpu=None, weights=None, kv_dtype=None, '
        'mfu=None, mbu=None'),
    'context_rounds': "model, *, rounds, weights='bf16', kv_dtype='bf16'",
    'context_edit': '*, context, edits',
    'context_growth': (
        '*, system, step, steps, model=None, usd_per_m_input=0.0, usd_per_m_cached=0.0'),
    'media_vision': (
        "*, images=((640, 640),), model='qwen3-vl-4b', text_tokens=0, file_mb=None, "
        'resize=True, gpu=None, mfu=1.0'),
    'media_diffusion': (
        "*, size=(1024, 1024), model='qwen-image-2512', steps=50, true_cfg=True, "
        'text_tokens=512, vae_factor=8, gpu=None, mfu=1.0'),
    'media_audio': (
        "*, slow='fish-s2-pro-slow', fast='fish-s2-pro-fast', codebooks=10, "
        "sample_rate=44100, hop=2048, context=1000, gpu='h100-sxm', weights='bf16', mfu=1.0, "
        'mbu=1.0'),
    'media_jitter': (
        '*, buffer_ms=(40, 60), block_ms=20, blocks=8, process_ms=12, send_ms=1, '
        'network_ms=5, network=((3, 50),), sample_rate=24000, channels=1, '
        'bytes_per_sample=2, clock_ratio=1.0'),
    'media_interrupt': (
        '*, command_ms=123, control_ms=5, poll_ms=10, phase_ms=0, stop_compute_ms=None, '
        'free_state_ms=None'),
    'media_drain': '*, buffered_s=0.3, arrival_rate=0.9',
}
