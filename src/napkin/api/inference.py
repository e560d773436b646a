"""One call, decode steps, KV capacity, MoE decode: ``napkin call | decode | capacity | moe``."""

from collections.abc import Sequence

from napkin.accounting.batch import Batch
from napkin.accounting.energy import PowerModel, energy
from napkin.accounting.forward import Precision, forward
from napkin.accounting.series import decode_runs
from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, ModelRef, deployment, has_gpu, load_model
from napkin.catalog.checkpoints import resolve_unquantized
from napkin.errors import NapkinError, require
from napkin.inference.capacity import capacity as capacity_of
from napkin.inference.chain import request_chain
from napkin.inference.decode import decode_table as table_of
from napkin.inference.moe import moe_table
from napkin.report import views
from napkin.specs.model import check_tensor_parallel
from napkin.timing.efficiency import DEFAULT_MBU, DEFAULT_MFU
from napkin.units import GB


def _batches(batch: int | Sequence[int]) -> list[int]:
    values = [batch] if isinstance(batch, int) else list(batch)
    require(bool(values) and all(isinstance(b, int) and b >= 1 for b in values),
            f"batch: values must be integers >= 1, got {batch!r}")
    return values


@checked
def call(model: ModelRef, *, new: int, cached: int = 0, gen: int = 1, batch: int = 1,
         gpu: GpuRef | None = None, gpu_mem_gb: float | None = None,
         gpu_bw_gbs: float | None = None, gpu_tflops: float | None = None,
         weights: str = "bf16", kv_dtype: str = "bf16", read_embedding: bool = False,
         mfu: float = DEFAULT_MFU, mbu: float = DEFAULT_MBU, overhead_ms: float = 0.0,
         calibration: str | None = None, tp: int = 1, unquantized: str | None = None,
         usd_per_kwh: float | None = None, pue: float = 1.0, prefill_power_frac: float = 1.0,
         decode_power_frac: float = 0.43) -> Result:
    """One call of ``batch`` identical sequences: ``cached`` tokens S already in the KV cache,
    ``new`` input tokens P, ``gen`` output tokens G (1 prefill + G − 1 decode steps).

    Always the prefill's operator list (FLOPs, bytes); with a GPU, the request chain's TTFT,
    TPOT and end-to-end at the roofline ``max(FLOPs/(peak·mfu), bytes/(BW·mbu))`` plus
    ``overhead_ms``; with ``calibration`` (vllm, trtllm, sglang or a profile file) also the
    fitted step-time model's times at tensor-parallel size ``tp``, with the profile's band.
    With a catalog GPU that has a board power, the chain's energy
    (:mod:`napkin.accounting.energy`): TDP × (TTFT · ``prefill_power_frac`` + decode seconds ·
    ``decode_power_frac``) × ``pue``, per output token and per million, and its cost at
    ``usd_per_kwh`` when given.
    ``value``: dict with ``prefill`` (ops), ``decode_runs``, ``chain`` (None without GPU) and
    ``energy`` (None without a board power).
    """
    spec = load_model(model)
    require(new >= 1, f"new: must be >= 1 token, got {new}")
    require(batch >= 1, f"batch: must be >= 1, got {batch}")
    require(gen >= 1, f"gen: must be >= 1 token, got {gen}")
    spec.check_context(cached + new + gen - 1)
    precision = Precision.of(weights, kv_dtype, read_embedding,
                             resolve_unquantized(unquantized, spec.name, weights))
    prefill = forward(spec, Batch.uniform(cached, new, batch), precision)
    runs = decode_runs(spec, precision, batch, cached + new, gen - 1)
    dep = chain = None
    if has_gpu(gpu, gpu_mem_gb, gpu_bw_gbs, gpu_tflops):
        dep = deployment(spec, gpu, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs,
                         gpu_tflops=gpu_tflops, weights=weights, kv_dtype=kv_dtype,
                         read_embedding=read_embedding, mfu=mfu, mbu=mbu,
                         overhead_ms=overhead_ms, unquantized=unquantized)
        chain = request_chain(dep, new=new, gen=gen, cached=cached, batch=batch)
    power = PowerModel(prefill_power_frac, decode_power_frac, pue=pue, usd_per_kwh=usd_per_kwh)
    used = None
    if chain is not None and dep is not None and dep.acc.tdp_watts is not None:
        used = energy(dep.acc, 1, chain.ttft_s, chain.decode_s, chain.e2e_s, batch * gen, power)
    elif usd_per_kwh is not None:
        raise NapkinError("usd-per-kwh: needs --gpu, a catalog accelerator with a board power")
    calibrated = None
    if calibration is not None:
        from napkin.calibration.predict import calibrated_call
        from napkin.calibration.profile import load_profile

        require(dep is not None, "calibration: needs --gpu (a catalog accelerator)")
        assert dep is not None
        check_tensor_parallel(spec, tp, "tp")
        calibrated = calibrated_call(load_profile(calibration), spec, dep.acc, precision, new,
                                     gen, cached, batch, tp,
                                     model if isinstance(model, str) else spec.name)
    inputs = {"model": spec.name, "cached_tokens": cached, "new_tokens": new,
              "gen_tokens": gen, "batch": batch, **(
                  {} if dep else {"weights": weights, "kv_dtype": kv_dtype,
                                  "read_embedding": read_embedding,
                                  **views.unquantized_input(precision)})}
    return Result(views.call_doc(spec, prefill, runs, dep, chain, inputs, calibrated, used),
                  {"prefill": prefill, "decode_runs": runs, "chain": chain,
                   "calibrated": calibrated, "energy": used})


@checked
def decode_table(model: ModelRef, *, gpu: GpuRef | None = None,
                 batch: int | Sequence[int] = 1, context: int = 4096, reserve_gb: float = 0.0,
                 gpu_mem_gb: float | None = None, gpu_bw_gbs: float | None = None,
                 gpu_tflops: float | None = None, weights: str = "bf16",
                 kv_dtype: str = "bf16", read_embedding: bool = False,
                 mfu: float = DEFAULT_MFU, mbu: float = DEFAULT_MBU, overhead_ms: float = 0.0,
                 calibration: str | None = None, tp: int = 1,
                 unquantized: str | None = None) -> Result:
    """Decode steps over batch sizes at ``context`` cached tokens per sequence: memory held
    (weights + KV, GB), whether it fits (keeping ``reserve_gb`` free), bytes moved per step
    (weights read + KV read and written) and FLOPs per step, their ratio (FLOPs/byte) against
    the GPU's ridge point ``peak FLOP/s ÷ bandwidth``, step time, tokens/s, the question
    bank's ``2N`` FLOPs per token beside the counted ones, and the compute/memory crossover
    (question bank task 2). ``value``: the table rows."""
    dep = deployment(model, gpu, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs,
                     gpu_tflops=gpu_tflops, weights=weights, kv_dtype=kv_dtype,
                     read_embedding=read_embedding, mfu=mfu, mbu=mbu, overhead_ms=overhead_ms,
                     unquantized=unquantized)
    batches = _batches(batch)
    table = table_of(dep, batches, context, reserve_gb * GB)
    inputs = {"model": dep.model.name, "context_tokens": context,
              "reserve_bytes": reserve_gb * GB}
    calibrated = None
    if calibration is not None:
        from napkin.calibration.predict import calibrated_decode
        from napkin.calibration.profile import load_profile

        check_tensor_parallel(dep.model, tp, "tp")
        profile = load_profile(calibration)
        calibrated = (profile, calibrated_decode(profile, dep.model, dep.acc, dep.precision,
                                                 batches, context, tp), tp)
    return Result(views.decode_doc(dep, table, inputs, calibrated), table)


@checked
def capacity(model: ModelRef, *, gpu: GpuRef | None = None, count: int = 1,
             context: int = 4096, avg_context: int | None = None, reserve_gb: float = 0.0,
             gpu_mem_gb: float | None = None, gpu_bw_gbs: float | None = None,
             gpu_tflops: float | None = None, weights: str = "bf16",
             kv_dtype: str = "bf16", unquantized: str | None = None) -> Result:
    """Users whose KV fits at ``context`` tokens (and at ``avg_context``) on ``count``
    accelerators with the weights sharded, keeping ``reserve_gb`` free on each (question bank
    task 3). ``value``: the capacity record."""
    dep = deployment(model, gpu, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs,
                     gpu_tflops=gpu_tflops, weights=weights, kv_dtype=kv_dtype,
                     unquantized=unquantized)
    cap = capacity_of(dep, count, context, avg_context, reserve_gb * GB)
    inputs = {"model": dep.model.name, "count": count, "context_tokens": context,
              "avg_context_tokens": avg_context, "reserve_bytes_per_device": reserve_gb * GB}
    return Result(views.capacity_doc(dep, cap, inputs), cap)


@checked
def moe(model: ModelRef, *, batch: int | Sequence[int] = (1, 4, 16, 64), context: int = 1,
        gpu: GpuRef = "h100-sxm", gpu_mem_gb: float | None = None,
        gpu_bw_gbs: float | None = None, gpu_tflops: float | None = None,
        weights: str = "bf16", kv_dtype: str = "bf16", read_embedding: bool = False,
        mfu: float = DEFAULT_MFU, mbu: float = DEFAULT_MBU, overhead_ms: float = 0.0,
        ep: int = 1, balancedness: float | None = None) -> Result:
    """MoE decode over batch sizes: experts touched per layer ``E·(1 − (1 − k/E)^T)``, bytes
    per step, FLOPs per token, the batch where the step turns compute-bound; with ``ep`` > 1,
    the busiest GPU of the batch spread over ``ep`` GPUs (DEP: its load over the mean, the
    experts it touches, its bytes and all-to-all, the step), its routed load at least mean /
    ``balancedness`` when a measured balance is given. ``value``: rows."""
    dep = deployment(model, gpu, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs,
                     gpu_tflops=gpu_tflops, weights=weights, kv_dtype=kv_dtype,
                     read_embedding=read_embedding, mfu=mfu, mbu=mbu, overhead_ms=overhead_ms)
    require(isinstance(ep, int) and not isinstance(ep, bool) and 1 <= ep <= 4096,
            f"ep: must be a whole number of GPUs in [1, 4096], got {ep!r}")
    if balancedness is not None:
        require(isinstance(balancedness, int | float) and not isinstance(balancedness, bool)
                and 0.01 <= balancedness <= 1,
                f"balancedness: a number in [0.01, 1], got {balancedness!r}")
        require(ep > 1, "balancedness: applies with ep > 1 (a DEP layout)")
    table = moe_table(dep, _batches(batch), context, ep, balancedness=balancedness)
    inputs = {"model": dep.model.name, "context_tokens": context,
              **({"ep": ep} if ep > 1 else {}),
              **({"balancedness": balancedness} if balancedness is not None else {})}
    return Result(views.moe_doc(dep, table, inputs), table)
