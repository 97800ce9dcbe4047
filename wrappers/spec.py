"""What an LLM agent needs to know about an env: its prompt, its action format, its penalties.

Every registered env names one ``AgentSpec`` (``seed_gym.agent_spec(env_id)``); the templates live in
``wrappers/templates/<env>.py``. Envs never build prompts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Turn:
    """One past step as the prompt shows it."""

    observation: str
    action: str


@dataclass(frozen=True)
class PromptContext:
    """Everything a template may use to render the current user message."""

    task: str  # the task description ("put a clean mug in the coffeemachine")
    observation: str  # the current raw text observation
    history: tuple[Turn, ...]  # the last k steps, oldest first
    step: int  # 1-based number of the step being decided
    admissible_actions: tuple[str, ...] | None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ParsedAction:
    """A completion after parsing: the env action, or ``valid=False`` with the reason."""

    action: str | None
    valid: bool
    thought: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class AgentSpec:
    """Prompt template, parser, history window and invalid-output penalty of one env."""

    render: Callable[[PromptContext], str]
    parse: Callable[[str], ParsedAction]
    history: int
    invalid_penalty: float = 0.1
    stop: tuple[str, ...] = ("</action>",)
    # where SEED inserts the Episode-Level Skill block: right after the line starting with one of
    # these markers, else before the fallback marker
    task_markers: tuple[str, ...] = ("Your task is to:",)
    fallback_marker: str = "Now it's your turn"
    system_prompt: str | None = None


_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL)


def parse_think_action(completion: str) -> ParsedAction:
    """``<think>...</think>`` then exactly one ``<action>...</action>``; anything else is invalid.

    As in the reference suite, an action counts only when both tags are present and well formed.
    Engines must therefore keep the stop string (``</action>``) in the completion.
    """
    if not isinstance(completion, str):
        return ParsedAction(None, False, error="completion is not text")
    text = completion
    thoughts = _THINK.findall(text)
    actions = _ACTION.findall(text)
    if len(thoughts) != 1:
        return ParsedAction(None, False, error="expected one <think>...</think> block")
    if len(actions) != 1:
        return ParsedAction(
            None,
            False,
            thought=thoughts[0].strip(),
            error="expected one <action>...</action> block",
        )
    action = actions[0].strip()
    if not action:
        return ParsedAction(None, False, thought=thoughts[0].strip(), error="empty action")
    if text.index("<think>") > text.index("<action>"):
        return ParsedAction(None, False, error="<think> must come before <action>")
    return ParsedAction(action, True, thought=thoughts[0].strip())
