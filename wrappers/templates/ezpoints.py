"""EZPoints' agent spec: the reference (gym-cards) prompt, paraphrased; JSON or think/action.

The reference prompt asks for ``{"thoughts": ..., "action": ...}``. ``SPEC`` ends the prompt with
the suite-wide think/action instruction; ``SPEC_JSON`` asks for the reference JSON. Both parse
either form, so a model trained on one still scores under the other.
"""

from __future__ import annotations

import json
import re
from typing import Any

from seed_gym.envs.ezpoints import TARGET_POINTS
from seed_gym.images import IMAGE_PLACEHOLDER
from seed_gym.wrappers.phrasing import listing
from seed_gym.wrappers.spec import (
    AgentSpec,
    DemoStep,
    ParsedAction,
    PromptContext,
    parse_think_action,
    too_long,
)

INTRO = (
    "You are an expert card game player. Build a math formula that evaluates to 12 using the "
    "numbers on the two playing cards {where}."
)
RULES = """# Card rules
1. Number cards (2-10) count as their number; face cards (J, Q, K) count as 10; an Ace (A) \
counts as 1.
2. Use only the two card numbers, each exactly once; no other numbers are allowed.

# Formula rules
1. Each step you append ONE token to the end of the formula: a number (1-10), '+', '*' or '='.
2. Appending '=' evaluates the formula ('*' before '+') and ends the game.
3. The formula may hold at most 5 tokens before '='.

# Rewards
+10 if the finished formula equals 12 and uses both cards; 0 and the game ends for a wrong \
formula; nothing changes for an illegal token (a number you do not hold or already used)."""
CLOSING_TAGS = (
    "Now it's your turn: choose the next token.\n"
    "First reason step by step inside <think> </think> tags, then give the token inside "
    "<action> </action> tags."
)
CLOSING_JSON = (
    "Now it's your turn: choose the next token.\n"
    "Your response should be a valid JSON object in this format:\n"
    '{"thoughts": "first read the two card numbers, then reason step by step about which '
    'token to append", "action": "the token"}'
)


def _history(ctx: PromptContext) -> str:
    if not ctx.history:
        return ""
    first = ctx.step - len(ctx.history)
    lines = [f"Your last {len(ctx.history)} step(s):"]
    for i, turn in enumerate(ctx.history):
        obs = turn.observation.replace(IMAGE_PLACEHOLDER, "[image]").strip() or "[image]"
        lines.append(f"[Observation {first + i}: {obs}\nAction {first + i}: {turn.action}]")
    return "\n".join(lines) + "\n"


def _render(ctx: PromptContext, closing: str) -> str:
    where = "shown in the image" if IMAGE_PLACEHOLDER in ctx.observation else "described below"
    current = (
        "# Current step\n"
        + _history(ctx)
        + f"You are at step {ctx.step}. Current observation:\n{ctx.observation.strip()}"
    )
    return "\n\n".join([INTRO.format(where=where), RULES, current, closing])


def render(ctx: PromptContext) -> str:
    return _render(ctx, CLOSING_TAGS)


def render_json(ctx: PromptContext) -> str:
    return _render(ctx, CLOSING_JSON)


_FENCE = re.compile(r"```(?:json)?", re.IGNORECASE)


MAX_JSON_STARTS = 64
"""Braces tried as the start of a JSON object. Each try may scan to the end of the text, so an
unbounded number made ``'{"k":' * 20_000`` quadratic; an answer's object comes early."""


def _json_objects(text: str):
    decoder = json.JSONDecoder()
    i = text.find("{")
    for _ in range(MAX_JSON_STARTS):
        if i == -1:
            return
        try:
            obj, _ = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):  # deep nesting is garbage too, not a crash
            obj = None
        if isinstance(obj, dict):
            yield obj
        i = text.find("{", i + 1)


def _token(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    if isinstance(value, float):
        value = int(value) if value.is_integer() else value
    token = str(value).strip().strip("'\"`").strip()
    return token or None


def parse(completion: str) -> ParsedAction:
    """``<think>..</think><action>..</action>`` or a JSON object with an ``action`` key (and
    optional ``thoughts``), possibly inside a ```json fence or surrounded by prose. The action
    may be a string or a number; quotes around it are dropped."""
    tagged = parse_think_action(completion)
    if isinstance(completion, str) and too_long(completion) is not None:
        return tagged
    if tagged.valid:
        token = _token(tagged.action)
        if token is None:
            return ParsedAction(None, False, thought=tagged.thought, error="empty action")
        return ParsedAction(token, True, thought=tagged.thought)
    if not isinstance(completion, str):
        return tagged
    for obj in _json_objects(_FENCE.sub("", completion)):
        keys = {str(k).lower(): k for k in obj}
        if "action" not in keys:
            continue
        token = _token(obj[keys["action"]])
        thought = obj.get(keys.get("thoughts", keys.get("thought", "")))
        thought = thought if isinstance(thought, str) else None
        if token is None:
            return ParsedAction(
                None, False, thought=thought, error="empty or non-scalar JSON action"
            )
        return ParsedAction(token, True, thought=thought)
    return ParsedAction(
        None,
        False,
        thought=tagged.thought,
        error='expected <think>/<action> tags or a JSON object {"thoughts": ..., "action": ...}',
    )


# --- what trainers ask of this env (format warm-up, privileged annotator) ---------------------
_CARD = re.compile(r"the (\w+) of \w+")
_FACE = {"Ace": 1, "Jack": 10, "Queen": 10, "King": 10}


def reasoning(step: DemoStep) -> str:
    """The card values (as the rules define them), the formula so far, the token to append.
    When the formula is one card (the operator comes next) the sum replaces the formula, and the
    product follows unless the sum is the target: the arithmetic that picks the operator, written
    out so that the clone learns to compute it rather than to remember which card pairs take
    ``*`` (the unseen pairs are never dealt in train; docs/training.md measures the difference)."""
    parts = []
    cards = _CARD.findall(step.anchor)
    values = [int(_FACE.get(c, c)) for c in cards] if len(cards) == 2 else []
    if values:
        parts.append(f"The cards count {values[0]} and {values[1]}.")
    formula = re.search(r"Formula:(.*)", step.anchor)
    so_far = formula.group(1).strip() if formula else ""
    if values and so_far in {str(v) for v in values}:  # one card down: the operator is next
        a = int(so_far)
        b = values[1] if values[0] == a else values[0]
        total = f"{a} + {b} = {a + b}"
        if a + b == TARGET_POINTS:
            parts.append(f"{total}.")
        else:
            parts.append(f"{total}, not {TARGET_POINTS}; {a} * {b} = {a * b}.")
    else:
        parts.append(f"The formula so far is '{so_far}'." if so_far else "The formula is empty.")
    parts.append(f"I append {step.action}.")
    return " ".join(parts)


def hindsight(info: dict[str, Any], traj: Any) -> str | None:
    solution = info.get("solution")
    if not solution:
        return None
    cards = info.get("cards")
    values = info.get("card_values")
    held = (
        f"with {' and '.join(map(str, cards))} (values {listing(values, 4)}) "
        if cards and values
        else ""
    )
    end = "" if str(solution).rstrip().endswith("=") else ", then '='"
    return f"{held}append '{solution}' one token per step{end}, using each card value exactly once"


SPEC = AgentSpec(
    render=render,
    parse=parse,
    history=0,
    invalid_penalty=0.1,
    stop=("</action>",),
    task_markers=(),  # no task line (as the reference): the skill goes before "Now it's your turn"
    reasoning=reasoning,
    hindsight=hindsight,
)

SPEC_JSON = AgentSpec(
    render=render_json,
    parse=parse,
    history=0,
    invalid_penalty=0.1,
    stop=(),
    task_markers=(),  # no task line (as the reference): the skill goes before "Now it's your turn"
)
