"""``Algorithm``: what one training algorithm decides, in one object. The loop (``train.py``)
and the update (``update.py``) call these methods and branch on no algorithm's name or flag.

The defaults are GRPO's: no skills, no teacher, group-normalised advantages, the PPO-clip loss
as it is. An algorithm overrides what it changes:

| method | called | default (GRPO) |
|---|---|---|
| ``check(cfg)`` | when a config is built | nothing to check |
| ``start_model(cfg, base, run_dir, device, build)`` | once, before the policy loads | start from ``base`` |
| ``bind(engine, policy)`` | once the policy is loaded | - |
| ``actor_skills(task_ids)`` | before each rollout | plain prompts |
| ``skills(trajs, stats, failures)`` | after each rollout | no skills |
| ``teacher(policy, spec, trajs, skills, iteration)`` | before the update (pi_old) | no teacher |
| ``advantages(trajs)`` | before the update | GRPO (``--advantage``, ``--std-normalize``) |
| ``token_advantages(adv, ...)`` | in every micro-batch's loss | unchanged |
| ``extra_loss(logprobs, ...)`` | in every micro-batch's loss | none |
| ``state()`` / ``load_state(d)`` | checkpoint / resume | nothing |

Loss pieces are built from ``losses.py``'s pure functions. A new algorithm is a subclass in one
file with ``@register_algorithm``; ``seed-gym train --import FILE --algo NAME`` finds it
(docs/adding_an_algorithm.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from seed_gym.trainer.advantages import grpo_advantages
from seed_gym.trainer.trajectory import Trajectory


@dataclass
class Teacher:
    """An algorithm's teacher for one iteration: logprobs of every step's sampled response tokens
    under the teacher's context (``per_step[i][t]``, None where step t of trajectory i has none),
    each trajectory's mean teacher gap (for the skill log) and the metrics it measured."""

    per_step: list[list[list[float] | None]]
    gaps: list[float | None] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # what an algorithm keeps for itself


class Algorithm:
    """GRPO, and the defaults every other algorithm starts from."""

    name: ClassVar[str] = "grpo"
    description: ClassVar[str] = (
        "GRPO: group-normalized returns (step level by default), PPO-clip (dual clip), k3 KL"
    )
    trains: ClassVar[bool] = True  # False: evaluate the starting policy and stop
    privileged_rollouts: ClassVar[bool] = False  # keep privileged_info() taken at reset
    has_teacher: ClassVar[bool] = False  # True: --positive-only / --teacher-advantage apply

    def __init__(self, cfg: Any):
        self.cfg = cfg

    # --- configuration and the starting policy ------------------------------------------------
    @classmethod
    def check(cls, cfg: Any) -> None:
        """Raise ``ValueError`` naming the field when ``cfg`` does not suit this algorithm:
        group advantages need groups, and the teacher's flags need a teacher."""
        if cls.trains and cfg.rollout.group_size < 2:
            raise ValueError(
                f"--group-size must be >= 2 for --algo {cls.name} (a group of one has no "
                f"advantage), not {cfg.rollout.group_size}"
            )
        if not cls.has_teacher and (cfg.opd.positive_only or cfg.opd.teacher_advantage):
            raise ValueError(
                f"--positive-only / --teacher-advantage need a teacher; --algo {cls.name} has none "
                "(seed, static-skills and opsd have one)"
            )

    def start_model(
        self, cfg: Any, base: str, run_dir: Any, device: str, build: Callable[..., Any]
    ) -> str | None:
        """The model folder to start from instead of ``base`` (SEED: its Stage 1), or None.
        ``build(fn, *args)`` runs a one-off build (in a child process by default)."""
        return None

    def bind(self, engine: Any, policy: Any) -> None:
        """Called once the policy (``backends.models.LoadedModel``) and its engine exist."""

    # --- per iteration ------------------------------------------------------------------------
    def actor_skills(self, task_ids: Sequence[str]) -> list[str | None] | None:
        """A skill per task for the actor's prompt, or None: the plain prompt."""
        return None

    def skills(
        self, trajs: list[Trajectory], stats: dict[str, float], failures: dict[str, dict]
    ) -> list[Any] | None:
        """One skill (or None) per trajectory of this iteration, or None when the algorithm has
        no skills. ``stats`` receives analyzer metrics, ``failures`` failed analyses."""
        return None

    def teacher(
        self, policy: Any, spec: Any, trajs: list[Trajectory], skills: Any, iteration: int
    ) -> Teacher | None:
        """Teacher logprobs of the sampled tokens, scored by pi_old (the model before this
        iteration's update), or None: no teacher."""
        return None

    def advantages(self, trajs: list[Trajectory]) -> list[list[float]]:
        """One advantage per step of every trajectory."""
        return grpo_advantages(
            trajs, mode=self.cfg.optim.advantage, std_normalize=self.cfg.optim.std_normalize
        )

    # --- in the loss --------------------------------------------------------------------------
    def token_advantages(
        self,
        advantages: torch.Tensor,
        *,
        teacher_logprobs: torch.Tensor | None,
        old_logprobs: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """The advantage of every response token, [n, L] -> [n, L] (``mask``: response tokens
        with a teacher)."""
        return advantages

    def extra_loss(
        self,
        logprobs: torch.Tensor,
        *,
        teacher_logprobs: torch.Tensor | None,
        response_mask: torch.Tensor,
        teacher_mask: torch.Tensor | None,
        num_teacher_tokens: float,
    ) -> tuple[torch.Tensor | None, dict[str, float]]:
        """A term added to the PPO-clip loss (with its graph) and its statistics; (None, {}):
        none. logprobs, teacher_logprobs, response_mask, teacher_mask: [n, L]."""
        return None, {}

    # --- checkpoints --------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of the algorithm (plain containers)."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        pass
