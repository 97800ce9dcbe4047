"""What an LLM agent needs to know about an env: its prompt, its action format, its penalties,
and what a trainer may ask of it (demonstration reasoning, hindsight phrasing, its score).

Every registered env names one ``AgentSpec`` (``seed_gym.agent_spec(env_id)``); the templates live in
``wrappers/templates/<env>.py``. Envs never build prompts. Everything env-specific a trainer uses
lives here, so adding an env never means editing the trainer.
"""

from __future__ import annotations

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
class DemoStep:
    """What a demonstration's reasoning may look at: the visible observation, the task, the
    action taken (for SearchQA the whole ``<search>``/``<answer>`` tag) and the step's info."""

    anchor: str
    task: str
    action: str
    info: dict[str, Any] = field(default_factory=dict)


def think_action(think: str, action: str) -> str:
    """The suite's completion format: ``<think>...</think><action>...</action>``."""
    return f"<think>{think}</think><action>{action}</action>"


def next_action(step: DemoStep) -> str:
    """The reasoning of an env that names none: just the move."""
    return f"Next I {step.action}."


Hindsight = Callable[[dict[str, Any], Any], "str | None"]
"""(privileged info at reset, the finished trajectory) -> how the task is done, one clause
("append '3 * 4 =' one token per step"), or None when the info holds nothing usable."""


@dataclass(frozen=True)
class AgentSpec:
    """Prompt template, parser, history window and invalid-output penalty of one env, and the
    env knowledge trainers use: demonstration reasoning, hindsight phrasing, score key."""

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
    # a demonstrated step as a completion: the short reasoning it shows (restating what the
    # observation shows, never privileged facts) and the layout (reasoning, action) -> text that
    # ``parse`` accepts (the format warm-up)
    reasoning: Callable[[DemoStep], str] = next_action
    format_completion: Callable[[str, str], str] = think_action
    # the privileged annotator's env-specific clause (SEED Stage 1, opsd); None: a generic one
    hindsight: Hindsight | None = None
    # the info key of the env's raw score next to ``won`` (``webshop.score``), if it has one
    score_key: str | None = None

    def demo_completion(self, step: DemoStep) -> str:
        """The completion a demonstration of ``step`` writes."""
        return self.format_completion(self.reasoning(step), step.action)


MAX_COMPLETION_CHARS = 100_000
"""Parsers refuse longer completions (invalid output, the format penalty applies): a model's
answer is a few thousand characters; a megabyte of text is a runaway generation, not an action."""


def tag_spans(text: str, tag: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each ``<tag>…</tag>`` block, left to right, not overlapping: the
    matches of ``re.finditer(r"<tag>(.*?)</tag>", text, re.DOTALL)``, found in linear time.
    The lazy regex rescans to the end of the text from every unclosed ``<tag>``, which is
    quadratic (``"<action>" * 8000`` took 5.4 s; a 1 MB completion about 20 minutes)."""
    opening, closing = f"<{tag}>", f"</{tag}>"
    spans: list[tuple[int, int]] = []
    pos = 0
    while (start := text.find(opening, pos)) != -1:
        end = text.find(closing, start + len(opening))
        if end == -1:  # no later opening tag can find a closing one either
            break
        pos = end + len(closing)
        spans.append((start, pos))
    return spans


def tag_blocks(text: str, tag: str) -> list[str]:
    """The contents of the ``<tag>…</tag>`` blocks (``re.findall`` semantics, linear time)."""
    inner = len(tag) + 2
    return [text[a + inner : b - inner - 1] for a, b in tag_spans(text, tag)]


def remove_tag_blocks(text: str, tag: str, replacement: str = " ") -> str:
    """``text`` with every ``<tag>…</tag>`` block replaced (``re.sub`` semantics, linear time)."""
    parts, pos = [], 0
    for a, b in tag_spans(text, tag):
        parts += [text[pos:a], replacement]
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


def too_long(completion: str) -> ParsedAction | None:
    """The invalid parse of a completion over ``MAX_COMPLETION_CHARS``, else None."""
    if len(completion) <= MAX_COMPLETION_CHARS:
        return None
    return ParsedAction(None, False, error=f"completion over {MAX_COMPLETION_CHARS:,} characters")


def parse_think_action(completion: str) -> ParsedAction:
    """``<think>...</think>`` then exactly one ``<action>...</action>``; anything else is invalid.

    As in the reference suite, an action counts only when both tags are present and well formed.
    Engines must therefore keep the stop string (``</action>``) in the completion. Linear time;
    completions over ``MAX_COMPLETION_CHARS`` are invalid.
    """
    if not isinstance(completion, str):
        return ParsedAction(None, False, error="completion is not text")
    if (refused := too_long(completion)) is not None:
        return refused
    text = completion
    thoughts = tag_blocks(text, "think")
    actions = tag_blocks(text, "action")
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
