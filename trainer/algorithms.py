"""One object per algorithm: what it shows the actor, where its skills come from, whether it has a
teacher, whether it trains. The loop asks these objects; it never branches on an algorithm's name.

| algorithm       | trains | skills come from                  | skills go to                     |
|-----------------|--------|-----------------------------------|----------------------------------|
| ``grpo``        | yes    | -                                 | -                                |
| ``seed``        | yes    | the policy, analyzing its episodes | the teacher's prompt (OPD)       |
| ``skill-grpo``  | yes    | the policy, analyzing its episodes | the actor's prompt, next visit   |
| ``static-skills`` | yes  | a fixed bank per task type        | the teacher's prompt (OPD)       |
| ``opsd``        | yes    | the privileged annotator          | the teacher's prompt (OPD)       |
| ``prompt``      | no     | -                                 | -                                |

The algorithms whose policy analyzes its own episodes (``self_analyzes``) run SEED Stage 1 first
(``sft.stage1_model``). A new algorithm is a subclass here and one line in ``ALGORITHMS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from seed_gym.trainer import analyzer  # by module: tests replace analyzer.analyzer_generate_fn
from seed_gym.trainer.annotators import PrivilegedAnnotator, StaticSkillAnnotator

if TYPE_CHECKING:
    from seed_gym.trainer.analyzer import Skill
    from seed_gym.trainer.config import TrainConfig
    from seed_gym.trainer.trajectory import Trajectory

# static-skills without --skill-bank: one generic instruction for every task type
DEFAULT_SKILL_BANK = {
    "*": "Read the task and the current observation carefully, write exactly one action in the "
    "required format, and never repeat an action that left the observation unchanged."
}


class Algorithm:
    """GRPO, and the defaults every other algorithm starts from."""

    name: ClassVar[str] = "grpo"
    description: ClassVar[str] = (
        "GRPO: group-normalized returns (step level by default), PPO-clip (dual clip), k3 KL"
    )
    trains: ClassVar[bool] = True  # False: evaluate the starting policy and stop
    self_analyzes: ClassVar[bool] = False  # the policy writes skills: SEED Stage 1 first
    distills: ClassVar[bool] = False  # a teacher: rescoring, then OPD or teacher advantages
    privileged_rollouts: ClassVar[bool] = False  # keep privileged_info() taken at reset

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg

    def bind(self, engine: Any, tokenizer: Any) -> None:
        """Called once the policy is loaded: the engine and tokenizer an analyzer needs."""

    def actor_skills(self, task_ids: Sequence[str]) -> list[str | None] | None:
        """A skill per task for the actor's prompt, or None: the plain prompt."""
        return None

    def skills(
        self, trajs: list[Trajectory], stats: dict[str, float], failures: dict[str, dict]
    ) -> list[Skill | None] | None:
        """One skill (or None) per trajectory of this iteration, or None when the algorithm
        has no skills. ``stats`` receives analyzer metrics, ``failures`` failed analyses."""
        return None

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of the algorithm (plain containers)."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        pass


class Prompt(Algorithm):
    name = "prompt"
    description = "no training: evaluate the model as it is (the prompting baseline)"
    trains = False


class _SelfAnalysis(Algorithm):
    """The current policy, greedy, analyzes each finished trajectory (SEED.md Stage 2 step 3)."""

    self_analyzes = True

    def bind(self, engine: Any, tokenizer: Any) -> None:
        self._generate = analyzer.analyzer_generate_fn(self.cfg, engine)
        self._kwargs = analyzer.analyzer_kwargs(self.cfg.opd.analyzer_budget, tokenizer)

    def skills(self, trajs, stats, failures):
        retry = self.cfg.opd.analyzer_retry
        return analyzer.analyze(
            trajs, self._generate, retry=retry, stats=stats, failures=failures, **self._kwargs
        )


class SEED(_SelfAnalysis):
    name = "seed"
    description = (
        "SEED: Stage 1 SFT of the analyzer, then GRPO + lambda * gated OPD from self-made skills"
    )
    distills = True


class SkillGRPO(_SelfAnalysis):
    """The policy's own skill for a task (its last analysis) goes into the *actor* prompt the
    next time the task comes; a task never analyzed yet gets the most recent skill of any task."""

    name = "skill-grpo"
    description = "GRPO with the policy's own skill (last analysis of the task) in the actor prompt"

    def __init__(self, cfg: TrainConfig):
        super().__init__(cfg)
        self.by_task: dict[str, str] = {}
        self.latest: str | None = None

    def actor_skills(self, task_ids):
        return [self.by_task.get(t, self.latest) for t in task_ids]

    def skills(self, trajs, stats, failures):
        skills = super().skills(trajs, stats, failures)
        groups: dict[str, list[tuple[Trajectory, Skill]]] = {}
        for t, s in zip(trajs, skills, strict=True):
            if s is not None:
                groups.setdefault(t.group_id, []).append((t, s))
        for pairs in groups.values():  # a won episode's skill if the group has one
            won = [s for t, s in pairs if t.won]
            self.by_task[pairs[0][0].task_id] = self.latest = (won or [pairs[0][1]])[0].skill
        return skills

    def state(self):
        return {"by_task": dict(self.by_task), "latest": self.latest}

    def load_state(self, state):
        self.by_task, self.latest = dict(state.get("by_task", {})), state.get("latest")


class StaticSkills(Algorithm):
    name = "static-skills"
    description = "GRPO + gated OPD with a fixed skill bank as the teacher context (SDAR-like)"
    distills = True

    def bind(self, engine, tokenizer):
        path = self.cfg.opd.skill_bank
        bank = StaticSkillAnnotator.from_json(path) if path else None
        self.bank = bank or StaticSkillAnnotator(DEFAULT_SKILL_BANK)

    def skills(self, trajs, stats, failures):
        return self.bank.annotate(trajs)


class OPSD(Algorithm):
    name = "opsd"
    description = (
        "GRPO + gated OPD with privileged env info (solver, gold answer) as the teacher context"
    )
    distills = True
    privileged_rollouts = True  # taken at reset: the solver sees the start state

    def bind(self, engine, tokenizer):
        self.annotator = PrivilegedAnnotator(self.cfg.env)

    def skills(self, trajs, stats, failures):
        return self.annotator.annotate(trajs, [t.privileged or {} for t in trajs])


ALGORITHMS: dict[str, type[Algorithm]] = {
    cls.name: cls for cls in (Algorithm, SEED, SkillGRPO, StaticSkills, OPSD, Prompt)
}
"""``--algo`` name -> class."""


def make_algorithm(cfg: TrainConfig) -> Algorithm:
    return ALGORITHMS[cfg.algo](cfg)
