"""One RL cycle in seconds and dollars (chapter 3.5.3): rollouts through the serving simulator,
the teacher-forced reads and the update at MFU, the weight sync.

Rollout: the cycle's ``n`` answers (P-token prompt, G-token answer) arrive at once at the
rollout pool's ``replicas`` engines (TP ``tp`` each) and decode in continuous batches; its time
is the simulated makespan, under a calibration profile (``auto``: the backend's) or the
roofline. Decode is memory-bound, so the rollout usually dominates the cycle.
Reads (reference, teacher, reward model) and the update: ``FLOPs / (train GPUs · peak · MFU)``.
Sync: the policy's weights to each rollout replica over the GPU link (separate pools); colocated,
the trainer's weights are re-laid in place: ``weights / HBM bandwidth``.
Colocated (one pool takes turns): ``cycle = rollout + reads + update + sync``. Separate pools
(rollout of the next batch overlaps this update, one step off-policy):
``cycle = max(rollout, reads + update + sync)``. GPU-hours = all GPUs × cycle.
"""

from dataclasses import dataclass
from pathlib import Path

from napkin.catalog import load_accelerator
from napkin.errors import require
from napkin.reinforcement.cycle import RLCycle
from napkin.serving.scenario import Scenario, build
from napkin.specs.model import ModelSpec
from napkin.training.schedule import step_time_s
from napkin.units import HOUR_S


@dataclass(frozen=True)
class RLPools:
    """Where a cycle runs: ``rollout_gpus`` serving GPUs (``rollout_gpus / tp`` replicas) and
    ``train_gpus`` training GPUs; ``colocated`` when one pool does both in turn."""

    gpu: str
    train_gpus: int
    rollout_gpus: int
    tp: int = 1
    colocated: bool = True
    mfu: float = 0.4
    calibration: str = "auto"
    weights: str = "bf16"
    mbu: float = 0.8
    """Roofline rollouts only (``calibration: roofline``): achieved share of bandwidth."""

    def __post_init__(self) -> None:
        require(self.train_gpus >= 1, f"count: must be >= 1, got {self.train_gpus}")
        require(self.rollout_gpus >= 1, f"rollout-gpus: must be >= 1, got {self.rollout_gpus}")
        require(self.tp >= 1 and self.rollout_gpus % self.tp == 0,
                f"rollout-tp: must divide the {self.rollout_gpus} rollout GPUs, got {self.tp}")
        require(not self.colocated or self.rollout_gpus == self.train_gpus,
                "rollout-gpus: a colocated pool rolls out on the training GPUs (give "
                "--separate for a rollout pool of its own)")
        require(0 < self.mfu <= 1, f"mfu: must be in (0, 1], got {self.mfu}")
        require(0 < self.mbu <= 1, f"mbu: must be in (0, 1], got {self.mbu}")

    @property
    def gpus(self) -> int:
        return self.train_gpus if self.colocated else self.train_gpus + self.rollout_gpus


@dataclass(frozen=True)
class RLTiming:
    """Seconds of each phase of one cycle, and its GPU-hours and dollars."""

    pools: RLPools
    rollout_s: float
    read_s: float
    update_s: float
    sync_s: float
    kept: int
    usd_per_gpu_hour: float
    calibration_used: str
    warnings: tuple[str, ...] = ()

    @property
    def cycle_s(self) -> float:
        train = self.read_s + self.update_s + self.sync_s
        if self.pools.colocated:
            return self.rollout_s + train
        return max(self.rollout_s, train)

    @property
    def rollout_share(self) -> float:
        """The rollout's share of the colocated sum (of the critical pool when separate)."""
        return self.rollout_s / (self.rollout_s + self.read_s + self.update_s + self.sync_s)

    @property
    def gpu_hours(self) -> float:
        return self.pools.gpus * self.cycle_s / HOUR_S

    @property
    def usd(self) -> float:
        return self.gpu_hours * self.usd_per_gpu_hour

    @property
    def usd_per_kept(self) -> float:
        return self.usd / self.kept

    @property
    def gpu_hours_per_kept(self) -> float:
        return self.gpu_hours / self.kept


def rollout_scenario(policy: ModelSpec, prompt_tokens: int, gen_tokens: int, answers: int,
                     pools: RLPools) -> Scenario:
    """The rollout as a serving scenario: ``answers`` requests at once on the rollout pool."""
    roofline = {"mfu": pools.mfu, "mbu": pools.mbu} if pools.calibration == "roofline" else {}
    return Scenario.model_validate({
        "name": "rl rollout", "model": policy.name, "gpu": pools.gpu,
        "weights": pools.weights, "calibration": pools.calibration, **roofline,
        "engine": {"tensor_parallel": pools.tp, "replicas": pools.rollout_gpus // pools.tp},
        "workload": {"seed": 0, "classes": {"rollout": {"input_tokens": prompt_tokens,
                                                         "output_tokens": gen_tokens}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 1e9,
                                  "num_requests": answers}}})


def rl_timing(policy: ModelSpec, cycle: RLCycle, prompt_tokens: int, gen_tokens: int,
              pools: RLPools, usd_per_gpu_hour: float) -> RLTiming:
    """Time and cost of ``cycle`` on ``pools`` (module docstring)."""
    require(usd_per_gpu_hour >= 0 and usd_per_gpu_hour < float("inf"),
            f"usd-per-gpu-hour: must be a finite number >= 0, got {usd_per_gpu_hour}")
    built = build(rollout_scenario(policy, prompt_tokens, gen_tokens, cycle.generated, pools),
                  Path("."))
    run = built.simulate()
    r = run.records
    rollout_s = float(r.finish_s.max() - r.arrival_s.min())
    acc = load_accelerator(pools.gpu)
    reads = cycle.reference_flops + cycle.teacher_flops + cycle.reward_flops
    if pools.colocated:
        sync_s = cycle.weight_bytes / pools.train_gpus / acc.mem_bytes_per_s
    else:
        sync_s = (pools.rollout_gpus // pools.tp) * cycle.weight_bytes / acc.allreduce_bytes_per_s
    return RLTiming(pools, rollout_s,
                    step_time_s(reads, acc, pools.train_gpus, pools.mfu),
                    step_time_s(cycle.update_flops, acc, pools.train_gpus, pools.mfu), sync_s,
                    cycle.kept, usd_per_gpu_hour, built.calibration, built.warnings)
