"""``EpisodeRecorder``: every agent step as one JSON line, images as PNG files beside it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from seed_gym.jsonl import json_line


def _jsonable(value: Any) -> Any:
    """Info values as JSON: numpy scalars and arrays become Python numbers and lists."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


class EpisodeRecorder(gym.Wrapper):
    """Write ``out_dir/steps.jsonl``: one line per ``step`` of the agent env it wraps.

    Description:
        Each line holds ``episode`` (counts resets from 0), ``seed``, ``task_id``, ``task_type``,
        ``step`` (1-based), ``observation`` (the anchor text the step was decided on),
        ``images`` (paths, relative to ``out_dir``, of the PNGs shown with that observation),
        ``completion``, ``parsed_action``, ``reward``, ``env_reward``, ``format_valid``,
        ``action_is_valid``, ``terminated``, ``truncated``, ``won``, and with
        ``record_prompts=True`` the chat ``messages``. Namespaced numeric info extras
        (``webshop.score``) are copied too. Lines are flushed as written, so a killed run keeps
        every finished step.
    """

    def __init__(self, env: gym.Env, out_dir: str | Path, *, record_prompts: bool = False):
        super().__init__(env)
        self.out_dir = Path(out_dir)
        (self.out_dir / "images").mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / "steps.jsonl"
        self.record_prompts = record_prompts
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the env
        self.episode = -1
        self._seed: int | None = None
        self._step = 0
        self._obs: dict[str, Any] = {}
        self._info: dict[str, Any] = {}

    @property
    def agent_spec(self):
        return self.env.get_wrapper_attr("agent_spec")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.episode += 1
        self._seed, self._step = seed, 0
        self._obs, self._info = obs, info
        return obs, info

    def _save_images(self) -> list[str]:
        paths = []
        for i, image in enumerate(self._obs.get("images", [])):
            rel = f"images/ep{self.episode:05d}_step{self._step:03d}_{i}.png"
            image.save(self.out_dir / rel)
            paths.append(rel)
        return paths

    def step(self, completion: str):
        obs, reward, terminated, truncated, info = self.env.step(completion)
        self._step += 1
        record = {
            "episode": self.episode,
            "seed": self._seed,
            "task_id": info.get("task_id"),
            "task_type": info.get("task_type"),
            "step": self._step,
            "observation": self._info.get("anchor"),
            "images": self._save_images(),
            "completion": completion if isinstance(completion, str) else repr(completion),
            "parsed_action": info.get("parsed_action"),
            "reward": float(reward),
            "env_reward": info.get("env_reward"),
            "format_valid": info.get("format_valid"),
            "action_is_valid": info.get("action_is_valid"),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "won": info.get("won"),
        }
        record.update({k: v for k, v in info.items() if "." in k})
        if self.record_prompts:
            record["messages"] = self._obs.get("messages")
        self._file.write(json_line(_jsonable(record)))
        self._file.flush()
        self._obs, self._info = obs, info
        return obs, reward, terminated, truncated, info

    def close(self):
        if not self._file.closed:
            self._file.close()
        super().close()
