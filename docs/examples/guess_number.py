"""Guess the number: a complete seed-gym env registered from user code (see docs/adding_an_env.md)."""

from __future__ import annotations

import seed_gym
from seed_gym.splits import SplitManifest
from seed_gym.wrappers import AgentSpec, parse_think_action


class GuessNumberEnv(seed_gym.SeedEnv):
    """Description: find a secret integer; every guess is answered "Higher." or "Lower.".
    Observation: {"text": feedback}. Actions: a whole number as text ("42").
    Rewards: +1 for the right guess, else 0 (text that is not a number is a no-op that pays 0: the
    agent wrapper alone charges its format penalty).
    Termination: the right guess (later steps pay 0); truncated after 12 steps. Version History:
    v0: initial.
    Splits: secrets 1..100 not divisible by 5 (train), divisible by 5 (seen); 101..1000 (unseen)."""

    env_id = "example/GuessNumber-v0"

    def manifest(self, split: str) -> SplitManifest:
        numbers = {"train": range(1, 101), "seen": range(5, 101, 5), "unseen": range(101, 1001, 9)}
        ids = [f"secret-{n}" for n in numbers[split] if split != "train" or n % 5]
        return SplitManifest(self.env_id, split, tuple(ids))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.task_id = self._choose_task(options)  # a seeded draw, or options["task_id"]
        self.secret = int(self.task_id.split("-")[1])
        self.top = 100 if self.secret <= 100 else 1000
        self.task_type = f"range-{self.top}"
        self.task_description = f"Guess the secret whole number between 1 and {self.top}."
        self.done = False
        return self._observation("Make your first guess."), self._info()

    def step(self, action):
        text = self._as_action(action)  # None unless a str: garbage must never raise
        if self.done:  # nothing is paid after the end
            return self._observation("Game over."), 0.0, True, False, self._info(won=True)
        if not (text and text.isascii() and text.isdigit() and len(text) < 7):
            obs = self._observation("Invalid action: answer with one whole number.")
            return obs, 0.0, False, False, self._info(action_is_valid=False)
        guess = int(text)
        won = self.done = guess == self.secret
        verdict = "Correct!" if won else ("Higher." if guess < self.secret else "Lower.")
        return self._observation(f"{guess}? {verdict}"), float(won), won, False, self._info(won=won)

    def content_key(self, task_id: str) -> str:  # what a task is: its secret
        return task_id.split("-")[1]

    def oracle_action(self) -> str:  # the privileged expert knows the secret
        return str(self.secret)

    def privileged_info(self) -> dict:  # what a hindsight annotator may know (SEED Stage 1)
        return {"secret": self.secret}

    def sample_action(self, rng, admissible_actions) -> str:  # the `random` policy's guess
        return str(int(rng.integers(1, self.top + 1)))


def render(ctx) -> str:  # ctx: seed_gym.wrappers.PromptContext
    past = "".join(f"- {t.observation} You guessed {t.action}.\n" for t in ctx.history) or "-\n"
    return (
        f"Your task is to: {ctx.task}\nYour last guesses:\n{past}Step {ctx.step}. "
        f"{ctx.observation}\nNow it's your turn: reason inside <think> </think>, then give one "
        "number inside <action> </action>."
    )


SPEC = AgentSpec(
    render=render,
    parse=parse_think_action,
    history=3,
    # for trainers: the reasoning a demonstration shows (format warm-up) and how the task is done
    # in hindsight (SEED's privileged annotator)
    reasoning=lambda step: f"The last answer was: {step.anchor} I guess {step.action}.",
    hindsight=lambda info, traj: f"the secret was {info['secret']}; halve the range each guess",
)
seed_gym.register(GuessNumberEnv.env_id, GuessNumberEnv, max_episode_steps=12, agent_spec=SPEC)
