"""The base class of every seed-gym env: seeding, task choice, the info vocabulary, invalid input;
and ``FreezeAtEnd``, the wrapper that makes every step after the end a no-op.

A subclass implements ``reset`` and ``step`` with the gymnasium signatures and leans on four
helpers: ``_choose_task`` (pinned ``options["task_id"]`` or a seeded draw from the split),
``_observation`` (text plus, for image modalities, ``render_image()``), ``_info`` (the shared
vocabulary plus namespaced extras) and ``_invalid`` (the no-op answer to garbage input).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from seed_gym.spaces import MODALITIES, FreeText, observation_space
from seed_gym.splits import SPLITS, SplitManifest

INFO_KEYS = ("task_id", "task_type", "split", "won", "action_is_valid", "admissible_actions")
"""Keys present in every ``info`` dict, on reset and on every step."""

INVALID_ACTION_FEEDBACK = "Invalid action."


class SeedEnv(gym.Env[dict, str]):
    """Base env. Subclasses set ``env_id``, ``modalities``, ``image_shape`` and implement
    ``manifest``, ``reset``, ``step`` (and ``render_image`` for image modalities,
    ``oracle_action`` for the oracle policy).
    """

    env_id: ClassVar[str] = ""
    modalities: ClassVar[tuple[str, ...]] = ("text",)
    default_modality: ClassVar[str] = "text"
    image_shape: ClassVar[tuple[int, int] | None] = None
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self, split: str = "train", modality: str | None = None, render_mode: str | None = None
    ):
        modality = modality or self.default_modality
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of {SPLITS}")
        if modality not in MODALITIES or modality not in self.modalities:
            raise ValueError(
                f"{type(self).__name__} supports modalities {self.modalities}, not {modality!r}"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r}")
        self.split = split
        self.modality = modality
        self.render_mode = render_mode
        self.observation_space = observation_space(modality, self.image_shape)
        self.action_space = FreeText()
        self.task_id: str | None = None
        self.task_type: str = ""
        self.task_description: str = ""
        self._task_ids: tuple[str, ...] | None = None
        self._task_index: dict[str, int] | None = None

    # --- splits -------------------------------------------------------------------------------
    def manifest(self, split: str) -> SplitManifest:
        """The split manifest: task ids of ``split`` in a fixed order, with a content hash."""
        raise NotImplementedError

    @property
    def task_ids(self) -> tuple[str, ...]:
        if self._task_ids is None:
            self._task_ids = tuple(self.manifest(self.split).task_ids)
            self._task_index = {t: i for i, t in enumerate(self._task_ids)}
        return self._task_ids

    def content_key(self, task_id: str) -> str | None:
        """What a task *is*, independent of its id (e.g. a room's start state, a question's
        text); two tasks with the same key are the same task. ``check_env`` uses it to verify
        that splits are disjoint by content, not only by id. None (the default): not exposed."""
        return None

    def _choose_task(self, options: dict[str, Any] | None) -> str:
        """``options["task_id"]`` if given (must be in this split), else a draw from ``np_random``."""
        ids = self.task_ids
        task_id = (options or {}).get("task_id")
        if task_id is None:
            return ids[int(self.np_random.integers(len(ids)))]
        assert self._task_index is not None
        if task_id not in self._task_index:
            raise ValueError(
                f"task_id {task_id!r} is not in the {self.split!r} split of {self.env_id} "
                f"({len(ids)} tasks, e.g. {ids[0]!r})"
            )
        return task_id

    # --- observation and info -----------------------------------------------------------------
    def _observation(self, text: str) -> dict[str, Any]:
        obs: dict[str, Any] = {"text": text}
        if self.modality != "text":
            obs["image"] = self.render_image()
        return obs

    def _info(
        self,
        *,
        won: bool = False,
        action_is_valid: bool = True,
        admissible_actions: list[str] | None = None,
        **extras: Any,
    ) -> dict[str, Any]:
        info = {
            "task_id": self.task_id,
            "task_type": self.task_type,
            "split": self.split,
            "won": bool(won),
            "action_is_valid": bool(action_is_valid),
            "admissible_actions": None if admissible_actions is None else list(admissible_actions),
        }
        info.update(extras)
        return info

    def _require_reset(self, ready: bool) -> None:
        """Raise ``RuntimeError`` unless an episode is loaded (``ready``): an ``assert`` would
        vanish under ``python -O`` and leave a ``TypeError`` deeper down."""
        if not ready:
            raise RuntimeError(f"call reset() before using {type(self).__name__}")

    @staticmethod
    def _as_action(action: Any) -> str | None:
        """The action as a stripped string, or None for non-strings (which are invalid input)."""
        return action.strip() if isinstance(action, str) else None

    # --- rendering ----------------------------------------------------------------------------
    def render_image(self) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} has no image rendering")

    def render_text(self) -> str:
        raise NotImplementedError

    def render(self):
        if self.render_mode == "rgb_array":
            return self.render_image()
        if self.render_mode == "ansi":
            return self.render_text()
        return None

    # --- policies -----------------------------------------------------------------------------
    def oracle_action(self) -> str:
        """The privileged expert's next action (uses state the agent never sees)."""
        raise NotImplementedError(f"{type(self).__name__} has no oracle")

    def oracle_can_win(self) -> bool:
        """Whether ``oracle_action`` can still win from here (False once, say, a Sokoban box is
        pushed into a corner); demonstrations stop cloning the oracle then."""
        return True

    def reward_potential(self) -> float | None:
        """Φ of the current state when the reward holds potential-based shaping
        ``r = r' + Φ(s') - Φ(s)`` (Ng et al., 1999; Sokoban's ±1 for a box on or off a target),
        else None. ``check_env`` compares rewards net of it: undoing progress costs what it paid,
        which is not a penalty that unparseable output must stay below."""
        return None

    def privileged_info(self) -> dict[str, Any]:
        """What the agent never sees but a hindsight annotator may use (expert plan, solver
        solution, gold answer, goal attributes). JSON-serialisable; empty if the env has none."""
        return {}

    def sample_action(self, rng: np.random.Generator, admissible_actions: list[str] | None) -> str:
        """A uniformly random action: one of the admissible actions when the env lists them."""
        if admissible_actions:
            return admissible_actions[int(rng.integers(len(admissible_actions)))]
        self.action_space.seed(int(rng.integers(2**31)))
        return self.action_space.sample()


class FreezeAtEnd(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Every step after the end of an episode is a no-op that pays nothing.

    Description:
        Gymnasium leaves steps after ``terminated`` or ``truncated`` undefined, and a game only
        knows its own end: behind the step limit (the registry's ``TimeLimit``, outside the env)
        every seed-gym env played on, and 20 oracle steps after truncation paid +10.5 (Sokoban),
        +10 (EZPoints, ALFWorld, WebShop) or +1 (SearchQA) with ``won=True``. Here, once a step
        has returned ``terminated`` or ``truncated`` (the env's or any step limit's inside this
        wrapper), the inner env is not stepped again until ``reset``. ``seed_gym.register``
        puts it around the ``TimeLimit`` of every made env (``seed_gym.make``, ``gym.make``),
        and ``wrap_agent`` around the agent layer. An env class stepped directly has no step
        limit, and its own termination must still be final (``check_env`` checks both).
    Rewards:
        0.0 after the end: no win, no step cost, no penalty.
    Termination:
        After the end, every step returns the last observation and the same ``terminated`` and
        ``truncated`` as the step that ended the episode.
    Info:
        The last step's info (``won`` as it was), with ``action_is_valid=False`` (the action was
        not played) and each key of ``zeroed`` set to 0.0 (per-step charges such as the agent
        layer's ``format_penalty``, which must not be repeated).
    """

    def __init__(self, env: gym.Env, zeroed: tuple[str, ...] = ()):
        gym.utils.RecordConstructorArgs.__init__(self, zeroed=tuple(zeroed))
        gym.Wrapper.__init__(self, env)
        self.zeroed = tuple(zeroed)
        self._end: tuple[Any, bool, bool, dict[str, Any]] | None = None

    @property
    def episode_over(self) -> bool:
        """Whether the episode has ended (steps are no-ops until ``reset``)."""
        return self._end is not None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._end = None
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any):
        if self._end is not None:
            obs, terminated, truncated, info = self._end
            info = {**info, "action_is_valid": False, **dict.fromkeys(self.zeroed, 0.0)}
            return obs, 0.0, terminated, truncated, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self._end = (obs, bool(terminated), bool(truncated), dict(info))
        return obs, reward, terminated, truncated, info
