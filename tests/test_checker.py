"""``check_env`` can fail: each broken variant of the example env is caught, with a useful message.

The unbroken example passes (the control), so each failure below is due to the one thing broken.
"""

from __future__ import annotations

import itertools

import gymnasium as gym
import pytest
from conftest import import_example
from gymnasium.wrappers import TimeLimit

from seed_gym import check_env
from seed_gym.checker import EnvCheckError
from seed_gym.core import FreezeAtEnd
from seed_gym.splits import SplitManifest

guess_number = import_example()
Base = guess_number.GuessNumberEnv


def made(cls, split="train"):
    """What ``seed_gym.make`` builds: the env in a ``TimeLimit`` in a ``FreezeAtEnd``."""
    return FreezeAtEnd(TimeLimit(cls(split=split), 12))


class MissingInfoKey(Base):
    def _info(self, **kwargs):
        info = super()._info(**kwargs)
        del info["task_type"]
        return info


class NonDeterministic(Base):
    """Unpinned resets draw from a process-wide counter instead of ``self.np_random``."""

    draws = itertools.count()

    def _choose_task(self, options):
        if options and "task_id" in options:
            return super()._choose_task(options)
        return self.task_ids[next(self.draws) % len(self.task_ids)]


class DriftsAfterAFewSteps(Base):
    """Deterministic for gymnasium's one-step probe; later steps depend on a process-wide
    counter, so two copies with the same seed part ways (seed-gym's longer rollouts see it)."""

    drift = itertools.count()

    def reset(self, *, seed=None, options=None):
        self.steps = 0
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.steps == 3:
            self.secret = 1 if next(self.drift) % 2 else self.top  # "Lower." vs "Higher."
        return super().step(action)


class RaisesOnGarbage(Base):
    def step(self, action):
        return super().step(action.strip())  # AttributeError on non-str actions


class GarbageCountsAsValid(Base):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        info["action_is_valid"] = True
        return obs, reward, terminated, truncated, info


class GarbageIsARefuge(Base):
    """A wrong guess costs 0.5, unparseable output only the 0.1 format penalty: a policy would
    learn never to answer (EZPoints' old rewards had this shape)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if info["action_is_valid"] and not info["won"]:
            reward = -0.5
        return obs, reward, terminated, truncated, info


class PaysAfterTheEnd(Base):
    """Ignores the end of the game: the right guess pays again (Sokoban paid +10 a step)."""

    def step(self, action):
        self.done = False
        return super().step(action)


class WinsAfterTheEnd(Base):
    """Pays nothing after the end but reports the right guess as a win again."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self.done and self._as_action(action) == str(self.secret):
            info["won"] = True
        return obs, reward, terminated, truncated, info


class AcceptsUnknownTasks(Base):
    def _choose_task(self, options):
        if options and options.get("task_id") not in self.task_ids:
            return self.task_ids[0]
        return super()._choose_task(options)


class LeakySplits(Base):
    def manifest(self, split):
        m = super().manifest(split)
        if split == "seen":  # a training task leaks into the held-out split
            return SplitManifest(m.env_id, split, (*m.task_ids, "secret-1"))
        return m


class SameContentOtherId(Base):
    """Ids are disjoint but ``secret-5`` (seen) plays the same game as ``secret-6`` (train), the
    way a generator that draws rooms from overlapping seeds repeats puzzles under new ids."""

    def content_key(self, task_id):
        n = int(task_id.split("-")[1])
        return str(6 if n == 5 else n)


class UnstableManifest(Base):
    calls = itertools.count()

    def manifest(self, split):
        m = super().manifest(split)
        ids = m.task_ids if next(self.calls) < 6 else m.task_ids[::-1]
        return SplitManifest(m.env_id, split, ids)


class NotASeedEnv(gym.Env):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return 0, 0.0, False, False, {}


def test_the_unbroken_example_passes():
    for split in ("train", "seen", "unseen"):
        check_env(made(Base, split))


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (MissingInfoKey, r"info after reset lacks \['task_type'\]"),
        (DriftsAfterAFewSteps, r"seed 0: two runs differ at record"),
        (RaisesOnGarbage, r"step\(None\) raised AttributeError"),
        (GarbageCountsAsValid, r"must set action_is_valid=False"),
        (AcceptsUnknownTasks, r"unknown task_id must raise ValueError"),
        (GarbageIsARefuge, r"unparseable output scores -0.100 .* scores -0.500"),
        (
            PaysAfterTheEnd,
            r"seed 0, after termination, the env class stepped directly: step\('\d+'\) after "
            r"the end paid 1.0; expected 0",
        ),
        (UnstableManifest, r"split manifests are not stable"),
        (SameContentOtherId, r"'secret-5' \(seen\) has the same content as 'secret-6' \(train\)"),
        (NotASeedEnv, r"must subclass seed_gym.SeedEnv"),
    ],
)
def test_check_env_catches(cls, message):
    with pytest.raises(EnvCheckError, match=message):
        check_env(TimeLimit(cls(), 12) if cls is NotASeedEnv else made(cls))


def test_check_env_catches_a_step_limit_without_freeze_at_end():
    """Truncation is the ``TimeLimit``'s, outside the game: behind a bare one the game plays on,
    and the oracle's guess after truncation paid +1 with won=True (the suite paid +10)."""
    with pytest.raises(
        EnvCheckError, match=r"seed 0, after truncation: step\('\d+'\) after the end paid 1.0"
    ):
        check_env(TimeLimit(Base(), 12))
    # a step limit added outside the freeze is just as bare
    with pytest.raises(EnvCheckError, match=r"after truncation: .* paid 1.0"):
        check_env(TimeLimit(made(Base), 5))


class FreezesButWins(FreezeAtEnd):
    """Pays nothing after the end but reports a win on every step after it."""

    def step(self, action):
        over = self.episode_over
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "won": info["won"] or over}


def test_check_env_catches_a_win_after_the_end():
    with pytest.raises(EnvCheckError, match=r"after truncation: .* after the end set won=True"):
        check_env(FreezesButWins(TimeLimit(Base(), 12)))


def test_check_env_catches_nondeterministic_resets():
    # gymnasium's own probe (run first inside check_env) already sees this one
    with pytest.raises(AssertionError, match="Deterministic"):
        check_env(made(NonDeterministic))


def test_check_env_catches_overlapping_splits():
    # check_disjoint reports the leaked id (as ValueError, the splits module's error)
    with pytest.raises(ValueError, match="'secret-1' is in both 'train' and 'seen'"):
        check_env(made(LeakySplits))
