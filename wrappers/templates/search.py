"""Search QA's agent spec: the Search-R1 / verl-agent search prompt (paraphrased), history 4.

The model reasons inside ``<think> </think>`` (optional for validity), then gives exactly one
``<search> query </search>`` or ``<answer> … </answer>``; the parser passes that tag through as
the env action, so the raw env and the agent layer judge validity by the same rules
(``seed_gym.envs.search.protocol``). Invalid output costs 0.01, as in the reference.
History shows each past action followed by what it returned, oldest first.

``CLOSED_BOOK_SPEC`` is the closed-book baseline for models: same task line, no search engine,
only ``<answer>`` is valid.
"""

from __future__ import annotations

import re
from typing import Any

from seed_gym.envs.search.protocol import parse_command
from seed_gym.wrappers.phrasing import clip
from seed_gym.wrappers.spec import (
    AgentSpec,
    DemoStep,
    ParsedAction,
    PromptContext,
    remove_tag_blocks,
    tag_blocks,
    too_long,
)

TASK_MARKER = "Your question:"

INTRO = "You are an expert agent tasked with answering the given question step-by-step."
CLOSING = """Now it's your turn to respond for the current step.
You should first conduct a reasoning process. This process MUST be enclosed within <think> </think> tags.
After completing your reasoning, choose only one of the following actions (do not perform both):
(1) If you find you lack some knowledge, you can call a search engine to get more external \
information using format: <search> your query </search>.
(2) If you have enough knowledge to answer the question confidently, provide your final answer \
within <answer> </answer> tags, without detailed illustrations. For example, <answer>Beijing</answer>."""

CLOSED_BOOK_CLOSING = """Answer from your own knowledge; there is no search engine.
You should first conduct a reasoning process enclosed within <think> </think> tags, then give \
your final answer within <answer> </answer> tags, without detailed illustrations. For example, \
<answer>Beijing</answer>."""


def _history(ctx: PromptContext) -> str:
    """Each past action followed by the observation it produced (the next turn's, or the
    current observation for the last one)."""
    results = [t.observation for t in ctx.history[1:]] + [ctx.observation]
    lines = [
        f"{turn.action}\n{result.strip()}"
        for turn, result in zip(ctx.history, results, strict=True)
    ]
    return (
        f"Prior to this step, you have already taken {ctx.step - 1} step(s). Below is the "
        "interaction history where <search> </search> wrapped your past search queries and "
        "<information> </information> wrapped the corresponding search results returned by the "
        "external search engine. History:\n" + "\n".join(lines)
    )


def render(ctx: PromptContext) -> str:
    parts = [INTRO, f"{TASK_MARKER} {ctx.task}"]
    if ctx.history:
        parts.append(_history(ctx))
    elif ctx.step > 1:  # no history window: still show what the last action returned
        parts.append(
            f"Prior to this step, you have already taken {ctx.step - 1} step(s). Latest result:\n{ctx.observation.strip()}"
        )
    parts.append(CLOSING)
    return "\n\n".join(parts)


def render_closed_book(ctx: PromptContext) -> str:
    return "\n\n".join([INTRO, f"{TASK_MARKER} {ctx.task}", CLOSED_BOOK_CLOSING])


def _thought(text: str) -> str | None:
    thoughts = tag_blocks(text, "think")
    return thoughts[0].strip() if thoughts else None


def parse(completion: str) -> ParsedAction:
    """Exactly one ``<search>`` or ``<answer>`` tag (``<think>`` allowed, not required).
    Linear time; completions over ``MAX_COMPLETION_CHARS`` are invalid."""
    if not isinstance(completion, str):
        return ParsedAction(None, False, error="completion is not text")
    if (refused := too_long(completion)) is not None:
        return refused
    # a tag quoted inside the reasoning is not an action
    command = parse_command(remove_tag_blocks(completion, "think"))
    if not command.valid:
        return ParsedAction(None, False, thought=_thought(completion), error=command.error)
    return ParsedAction(command.render(), True, thought=_thought(completion))


def parse_closed_book(completion: str) -> ParsedAction:
    parsed = parse(completion)
    if parsed.valid and not parsed.action.startswith("<answer>"):
        return ParsedAction(
            None, False, thought=parsed.thought, error="closed book: answer without searching"
        )
    return parsed


# --- what trainers ask of this env (format warm-up, privileged annotator) ---------------------
def reasoning(step: DemoStep) -> str:
    m = re.match(r"\s*<(search|answer)>(.*)</\1>", step.action, re.DOTALL)
    if m and m.group(1) == "search":
        return f"I lack some knowledge, so I search for {m.group(2).strip()}."
    if m:
        return "The retrieved information is enough to answer the question."
    return "I decide my next step."


def hindsight(info: dict[str, Any], traj: Any) -> str | None:
    answers = [str(a) for a in info.get("golden_answers") or info.get("answers") or []]
    docs = info.get("supporting_docs") or []
    queries = info.get("oracle_queries") or []
    seen = " ".join(s.observation for s in traj.steps).lower()
    parts = []
    if queries:
        parts.append(f"search for '{clip(queries[0], 80)}'")
    titles = [d.get("title") for d in docs if isinstance(d, dict) and d.get("title")]
    if titles:
        parts.append(f"the document titled '{clip(titles[0], 80)}' holds the answer")
    # name the answer only when the agent's own retrievals showed it, so the skill stays something
    # an analyzer could have read off the trajectory
    shown = [a for a in answers if a and a.lower() in seen]
    if shown:
        parts.append(f"answer '{clip(shown[0], 60)}' as soon as a document states it")
    elif answers:
        parts.append("answer only with the exact entity a retrieved document states")
    return ", ".join(parts) or None


def search_completion(think: str, action: str) -> str:
    """SearchQA's action is already a ``<search>``/``<answer>`` tag; it follows the reasoning."""
    return f"<think>{think}</think>{action}"


SPEC = AgentSpec(
    render=render,
    parse=parse,
    history=4,
    invalid_penalty=0.01,
    stop=("</search>", "</answer>"),
    task_markers=(TASK_MARKER,),
    reasoning=reasoning,
    hindsight=hindsight,
    score_key="search.f1",
    format_completion=search_completion,
)

CLOSED_BOOK_SPEC = AgentSpec(
    render=render_closed_book,
    parse=parse_closed_book,
    history=0,
    invalid_penalty=0.01,
    stop=("</answer>",),
    task_markers=(TASK_MARKER,),
    score_key="search.f1",
)
