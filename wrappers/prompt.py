"""``PromptObservation``: the observation becomes chat messages rendered by the env's template."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from seed_gym.images import IMAGE_PLACEHOLDER
from seed_gym.wrappers.spec import AgentSpec, PromptContext


def fix_placeholders(text: str, n_images: int) -> str:
    """``text`` with exactly ``n_images`` ``<image>`` placeholders: unchanged when the template
    placed them all, else every stray one removed and the right number put at the start."""
    if text.count(IMAGE_PLACEHOLDER) == n_images:
        return text
    text = text.replace(IMAGE_PLACEHOLDER, "")
    return IMAGE_PLACEHOLDER * n_images + ("\n" if n_images else "") + text


class PromptObservation(gym.Wrapper):
    """Render ``{"text", "images"}`` plus the turn history into ``{"messages", "images"}``.

    Observation:
        ``{"messages": [{"role": "system" | "user", "content": str}, ...], "images": [...]}``:
        an optional system message (``spec.system_prompt``) and one user message,
        ``spec.render(PromptContext(...))``. The user text holds one ``<image>`` per image, in
        order. The context takes the task and admissible actions from ``info`` (``AnchorInfo``)
        and the window and step number from the ``TurnHistory`` wrapper below.
    """

    def __init__(self, env: gym.Env, spec: AgentSpec):
        super().__init__(env)
        self.agent_spec = spec

    def _messages(self, obs: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
        admissible = info.get("admissible_actions")
        context = PromptContext(
            task=info.get("task", ""),
            observation=obs["text"],
            history=self.env.get_wrapper_attr("history"),
            step=self.env.get_wrapper_attr("step_count") + 1,
            admissible_actions=None if admissible is None else tuple(admissible),
            info=info,
        )
        images = list(obs.get("images", []))
        messages = []
        if self.agent_spec.system_prompt:
            messages.append({"role": "system", "content": self.agent_spec.system_prompt})
        user = fix_placeholders(self.agent_spec.render(context), len(images))
        messages.append({"role": "user", "content": user})
        return {"messages": messages, "images": images}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        return self._messages(obs, info), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._messages(obs, info), reward, terminated, truncated, info
