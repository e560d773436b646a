"""Models an RL method holds, and their memory (question bank q33: GRPO drops PPO's critic).

PPO holds a trainable policy and a trainable critic (value model, here the policy's size), a
frozen reference and a frozen reward model; GRPO a trainable policy and a frozen reference
(the group mean replaces the critic), plus a reward model only if rewards are not rules;
DPO a trainable policy and a frozen reference. Trainable models take the recipe's bytes per
parameter, frozen ones their weights (BF16).
"""

from dataclasses import dataclass

from napkin.errors import NapkinError
from napkin.specs.model import ModelSpec
from napkin.training.memory import Recipe, StateMemory, state_memory


@dataclass(frozen=True)
class RoleMemory:
    role: str
    params: int
    trainable: bool
    memory: StateMemory


def rl_memory(method: str, policy: ModelSpec, rec: Recipe,
              reward_model: ModelSpec | None = None, devices: int = 1,
              zero: int = 0) -> tuple[RoleMemory, ...]:
    """Per-device parameter state of every model ``method`` (ppo, grpo, dpo) keeps loaded."""
    roles: list[tuple[str, ModelSpec, bool]] = [("policy", policy, True)]
    if method == "ppo":
        roles += [("critic", policy, True), ("reference", policy, False),
                  ("reward", reward_model or policy, False)]
    elif method == "grpo":
        roles.append(("reference", policy, False))
        if reward_model is not None:
            roles.append(("reward", reward_model, False))
    elif method == "dpo":
        roles.append(("reference", policy, False))
    else:
        raise NapkinError(f"method: unknown RL method {method!r}; allowed: ppo, grpo, dpo")
    return tuple(
        RoleMemory(role, m.params, trains,
                   state_memory(m.params if trains else 0, 0 if trains else m.params, rec,
                                devices, zero))
        for role, m, trains in roles)
