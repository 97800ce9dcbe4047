"""The Episode-Level Skill block and where it goes in an agent prompt (SEED.md, Stage 2 step 4).

``insert_skill`` places the block, in the first non-assistant message whose text has a match:
1. as its own paragraph right after the line holding one of the spec's ``task_markers``
   ("Your task is to:", "Your question:"): templates with a task line (ALFWorld, WebShop, Search);
2. else right before the ``fallback_marker`` "Now it's your turn", i.e. next to where the model
   starts writing (Sokoban, EZPoints: their templates have no task line, as the reference's);
3. else at the end of the prompt (the last user message), as the reference does when a template
   has neither marker.

The teacher prompts of SEED's rescoring, the actor prompts of Stage 1's reruns and of
``skill-grpo`` all use this one rule, with the env's ``AgentSpec`` markers.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

SKILL_HEADER = (
    "**Episode-Level Skill**\n"
    "Refer to this episode-level skill when deciding what action to take in the current episode:\n"
)
DEFAULT_TASK_MARKERS = ("Your task is to:", "Your question:")
DEFAULT_FALLBACK_MARKER = "Now it's your turn"


def skill_block(skill: str) -> str:
    """The exact block of SEED.md (concatenated, so braces in a skill are safe)."""
    return SKILL_HEADER + "[" + skill + "]"


def _insert_into_text(
    text: str, block: str, task_markers: Sequence[str], fallback_marker: str | None
) -> tuple[str, str] | None:
    """(new text, where) or None when the text has no marker."""
    hits = [text.find(m) for m in task_markers if m and m in text]
    if hits:
        pos = min(hits)
        eol = text.find("\n", pos)
        if eol == -1:
            return text + "\n\n" + block, "task"
        rest = text[eol:].lstrip("\n")  # the block is its own paragraph: one blank line each side
        return text[:eol] + "\n\n" + block + "\n\n" + rest, "task"
    if fallback_marker and fallback_marker in text:
        pos = text.find(fallback_marker)
        before = text[:pos].rstrip(" \t")
        lead = "" if not before or before.endswith("\n") else "\n\n"
        return before + lead + block + "\n\n" + text[pos:], "fallback"
    return None


def insert_skill(
    messages: Sequence[dict[str, Any]],
    skill: str | None,
    task_markers: Sequence[str] = DEFAULT_TASK_MARKERS,
    fallback_marker: str | None = DEFAULT_FALLBACK_MARKER,
    *,
    return_where: bool = False,
) -> list[dict[str, Any]] | tuple[list[dict[str, Any]], str]:
    """A copy of ``messages`` with the skill block inserted (see the module docstring for where).

    ``skill`` None or "" inserts nothing. With ``return_where`` also returns
    ``"task" | "fallback" | "append" | "none"``.
    """
    out = copy.deepcopy(list(messages))
    where = "none"
    if skill:
        block = skill_block(skill)
        texts = [i for i, m in enumerate(out) if isinstance(m.get("content"), str)]
        for stage in ("task", "fallback"):
            for i in texts:
                if out[i].get("role") == "assistant":
                    continue  # never rewrite what the model said
                markers = task_markers if stage == "task" else ()
                fallback = fallback_marker if stage == "fallback" else None
                hit = _insert_into_text(out[i]["content"], block, markers, fallback)
                if hit is not None:
                    out[i]["content"], where = hit
                    break
            if where != "none":
                break
        if where == "none":
            users = [i for i in texts if out[i].get("role") == "user"]
            if not users:
                raise ValueError("insert_skill: no text user message to put the skill into")
            i = users[-1]
            out[i]["content"] = out[i]["content"].rstrip("\n") + "\n\n" + block
            where = "append"
    return (out, where) if return_where else out
