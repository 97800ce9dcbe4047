"""The records a rollout produces: one ``StepSample`` per agent step, grouped into trajectories.

Response tokens are stored exactly as sampled (ids and their logprobs) and never re-tokenized;
``messages`` keeps the chat messages of the prompt so SEED can rebuild it with a skill inserted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class StepSample:
    messages: list[dict[str, Any]]  # chat messages that produced prompt_ids
    prompt_ids: list[int]
    response_ids: list[int]  # as sampled, stop string included
    old_logprobs: list[float]  # sampling-policy logprob of each response id
    response_text: str
    observation: str  # raw text observation the step was decided on (the "anchor")
    action: str | None  # parsed env action; None when the output was invalid
    valid: bool
    reward: float  # env reward of this step, invalid-output penalty included
    images: list[Any] = field(default_factory=list)  # PIL images attached to the prompt
    penalty: float = 0.0  # the format penalty charged on this step (included in ``reward``)


@dataclass
class Trajectory:
    traj_id: str  # unique in a run, e.g. "it3-b1-g5"
    group_id: str  # trajectories with the same group_id share task and seed
    task_id: str
    task_type: str
    task: str  # task description
    seed: int
    steps: list[StepSample] = field(default_factory=list)
    won: bool = False
    score: float | None = None  # env-specific raw score (webshop.score, search.f1) if any
    truncated: bool = False
    error: str | None = None  # set when the episode failed for a non-game reason (worker crash)
    privileged: dict[str, Any] | None = None  # privileged_info() at reset
    actor_skill: str | None = None  # skill in the actor prompt (skill-grpo)

    @property
    def episode_return(self) -> float:
        """Env rewards plus the format penalties of every step."""
        return float(sum(s.reward for s in self.steps))

    @property
    def env_return(self) -> float:
        """Env rewards alone (the reference's episode return R; penalties stay on their step)."""
        return float(sum(s.reward + s.penalty for s in self.steps))

    @property
    def invalid_steps(self) -> int:
        return sum(not s.valid for s in self.steps)
