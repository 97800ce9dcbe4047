"""The loop learns, on a task where learning is cheap to see: a one-turn env whose reward depends
on the text, the random tiny model, tens of seconds. These tests can fail: GRPO must take sampled
success from chance to >= 0.9, and the same run with the advantage sign flipped (or lr 0) must
not; with no GRPO signal at all, OPD alone must move the student towards its teacher."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import run_metrics  # noqa: E402

import seed_gym  # noqa: E402
from seed_gym.splits import SplitManifest  # noqa: E402
from seed_gym.trainer import train as train_module  # noqa: E402
from seed_gym.trainer.algorithms import register_algorithm  # noqa: E402
from seed_gym.trainer.algorithms.grpo import GRPO  # noqa: E402
from seed_gym.trainer.config import TrainConfig, tiny  # noqa: E402
from seed_gym.wrappers.spec import AgentSpec, ParsedAction  # noqa: E402

SAY_E = "test/SayE-v0"
CONSTANT = "test/Constant-v0"


class SayE(seed_gym.SeedEnv):
    """Description: one turn, say anything. Rewards: 1 (won) if the text contains the letter e,
    else 0. The random tiny model, two tokens at T = 1, says an e about a third of the time."""

    env_id = SAY_E
    pays = True

    def manifest(self, split):
        return SplitManifest(self.env_id, split, tuple(f"{split}-{i}" for i in range(8)))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.task_id = self._choose_task(options)
        self.task_description = "say something with the letter e"
        return self._observation("Speak."), self._info()

    def step(self, action):
        won = self.pays and "e" in (self._as_action(action) or "")
        return self._observation("Done."), float(won), True, False, self._info(won=won)


class Constant(SayE):
    """SayE that never pays: every group ties, GRPO has nothing to learn from."""

    env_id = CONSTANT
    pays = False


def _spec() -> AgentSpec:
    return AgentSpec(
        render=lambda ctx: f"Your task is to: {ctx.task}\n{ctx.observation}",
        parse=lambda text: ParsedAction(text, True),
        history=0,
    )


for _cls in (SayE, Constant):
    if _cls.env_id not in seed_gym.list_envs():
        seed_gym.register(_cls.env_id, _cls, max_episode_steps=1, agent_spec=_spec())


def _cfg(tmp_path, name: str, **overrides) -> TrainConfig:
    base = tiny().to_dict()
    base.update(
        env=SAY_E,
        out=str(tmp_path / name),
        iterations=20,
        tasks_per_iter=4,
        group_size=8,
        max_new_tokens=2,
        lr=1e-2,
        kl_coef=0.0,
        ent_coef=0.0,
        mini_batch_size=32,
        micro_batch=32,
        eval_at_start=True,
        eval_tasks=8,
        eval_samples=16,
        eval_temperature=1.0,
        eval_splits=("seen",),
        eval_max_new_tokens=2,
        save_hf=False,
        tensorboard=False,
        save_trajectories=False,
        progress=False,
    )
    base.update(overrides)
    return TrainConfig.from_dict(base)


def _success(run_dir) -> tuple[float, float]:
    evals = [m for m in run_metrics(run_dir) if "eval/seen/success" in m]
    return evals[0]["eval/seen/success"], evals[-1]["eval/seen/success"]


def test_grpo_takes_success_from_chance_to_09(tmp_path):
    train_module.train(_cfg(tmp_path, "grpo"))
    start, end = _success(tmp_path / "grpo")
    assert start < 0.6, f"chance level should be well below 0.9, got {start}"
    assert end >= 0.9, f"GRPO ended at sampled success {end} (start {start})"


@register_algorithm
class FlippedGRPO(GRPO):
    """GRPO with every advantage's sign flipped: an algorithm plug-in that must unlearn."""

    name = "test-grpo-flipped"

    def advantages(self, trajs):
        return [[-a for a in row] for row in super().advantages(trajs)]


def test_no_learning_with_the_sign_flipped_or_lr_0(tmp_path):
    train_module.train(_cfg(tmp_path, "lr0", lr=0.0))
    start, end = _success(tmp_path / "lr0")
    assert end == start  # same eval episodes, same weights: the same numbers

    train_module.train(_cfg(tmp_path, "flipped", algo=FlippedGRPO.name))
    start, end = _success(tmp_path / "flipped")
    assert end < 0.5 and end <= start, f"the flipped update reached {end} (start {start})"


SKILL = "Answer with the single letter e."


def _skill_aware_model(path) -> str:
    """The tiny model taught that the skill means "say e": under the skill P(e) ~ 0.99, under the
    plain prompt ~ 0.4. A teacher-student gap, which OPD should close."""
    from seed_gym.trainer.algorithms.seed.stage1 import sft_train
    from seed_gym.trainer.backends.models import load_policy, save_policy
    from seed_gym.wrappers.skill import insert_skill

    policy = load_policy("tiny", seed=0)
    env = seed_gym.make_agent_env(CONSTANT, split="train")
    plain = env.reset(seed=0)[0]["messages"]
    skilled = insert_skill(plain, SKILL)
    rows = [{"messages": skilled, "completion": "e"}] * 4
    rows += [{"messages": plain, "completion": "x"}] * 3 + [{"messages": plain, "completion": "e"}]
    sft_train(
        policy.model, policy.tokenizer, rows * 8, epochs=6, lr=5e-3, batch_size=8, val_fraction=0
    )
    save_policy(policy, path)
    return str(path)


def test_opd_alone_closes_the_teacher_student_gap(tmp_path):
    # every episode returns 0 (no GRPO signal); the teacher is the same model with the skill in
    # its prompt (static-skills); lambda = 1 so OPD is the whole update
    import json

    model = _skill_aware_model(tmp_path / "skill-aware")
    bank = tmp_path / "bank.json"
    bank.write_text(json.dumps({"*": SKILL}))
    gaps = {}
    for coef in (1.0, 0.0):
        cfg = _cfg(tmp_path, f"opd{coef}", env=CONSTANT, algo="static-skills", model=model,
                   skill_bank=str(bank), opd_coef=coef, iterations=12, eval_at_start=False)  # fmt: skip
        train_module.train(cfg)
        rows = run_metrics(tmp_path / f"opd{coef}")
        assert all(m["rollout/return"] == 0.0 for m in rows)
        gaps[coef] = [m["opd/teacher_gap_mean"] for m in rows]
    # teacher_gap_mean = E[teacher_lp - student_lp] over sampled tokens, about -KL(student||teacher)
    first, last = gaps[1.0][0], sum(gaps[1.0][-3:]) / 3
    assert first < -0.5, f"the skill-aware model should start with a gap, got {first}"
    assert abs(last) < 0.2 * abs(first), f"OPD left the gap at {last} (from {first})"
    assert sum(gaps[0.0][-3:]) / 3 < -0.5, "without OPD the gap must stay"
