"""Sokoban's agent spec: the reference suite's prompt (paraphrased), think/action parsing.

One template serves every modality: it shows the symbol legend when the observation carries the
text grid and describes the tiles when it carries an ``<image>``. History turns show the past
grids (an image turn shows ``[image]``: only the current picture is attached).
"""

from __future__ import annotations

from typing import Any

from seed_gym.images import IMAGE_PLACEHOLDER
from seed_gym.wrappers.phrasing import listing
from seed_gym.wrappers.spec import AgentSpec, DemoStep, PromptContext, parse_think_action

ACTIONS = ("up", "down", "left", "right")

INTRO = (
    "You are an expert agent playing Sokoban. Your goal is to push every box onto a target "
    "spot; once all boxes are on targets, you win."
)
RULES = """# Rules
- You can only push boxes, never pull them, so plan ahead to avoid getting stuck.
- You cannot walk through walls, and you cannot push a box into a wall or into another box.
- Do not push boxes into corners or along walls where they can no longer be moved."""
SYMBOLS = """# Symbols
In the grid, `#` is a wall, `_` floor, `O` a target, `X` a box, `√` a box on a target, `P` you \
(the player) and `S` you standing on a target. Rows run top to bottom, columns left to right."""
PICTURE = """# Picture
You are the small green figure with two antennae and black eyes. A box is a yellow crate with an \
orange X (green once it sits on a target). A target is a dark tile outlined in red with a red \
diamond in the middle. Brown brick tiles are walls."""
CLOSING = (
    "Now it's your turn to make a move (choose ONE action for the current step).\n"
    "First reason step by step about the current situation inside <think> </think> tags, then "
    "give your chosen action inside <action> </action> tags."
)


def _history(ctx: PromptContext) -> str:
    if not ctx.history:
        return ""
    lines = [
        f"Before this step you took {ctx.step - 1} step(s). Your last {len(ctx.history)} "
        "observation(s) and the action taken after each:"
    ]
    first = ctx.step - len(ctx.history)
    for i, turn in enumerate(ctx.history):
        obs = turn.observation.replace(IMAGE_PLACEHOLDER, "[image]").strip() or "[image]"
        lines.append(f"[Observation {first + i}:\n{obs}\nAction {first + i}: {turn.action}]")
    return "\n".join(lines) + "\n"


def render(ctx: PromptContext) -> str:
    has_image = IMAGE_PLACEHOLDER in ctx.observation
    has_grid = "#" in ctx.observation.replace(IMAGE_PLACEHOLDER, "")
    parts = [INTRO, RULES]
    if has_grid:
        parts.append(SYMBOLS)
    if has_image:
        parts.append(PICTURE)
    actions = ", ".join(f'"{a}"' for a in (ctx.admissible_actions or ACTIONS))
    parts.append(
        "# Current step\n"
        + _history(ctx)
        + f"You are now at step {ctx.step} and your current observation is:\n"
        + ctx.observation.strip()
        + f"\nYour admissible actions are [{actions}]."
    )
    parts.append(CLOSING)
    return "\n\n".join(parts)


# --- what trainers ask of this env (format warm-up, privileged annotator) ---------------------
def _cells(grid: str, symbols: str) -> list[tuple[int, int]]:
    rows = [line.split() for line in grid.strip().splitlines()]
    return [(r, c) for r, row in enumerate(rows) for c, s in enumerate(row) if s in symbols]


def _where(cells: list[tuple[int, int]]) -> str:
    return ", ".join(f"({r}, {c})" for r, c in cells)


def reasoning(step: DemoStep) -> str:
    """Player, boxes and targets read off the grid (row, column from the top left), then the move."""
    grid = step.anchor
    if "#" not in grid:  # image-only observation: nothing to read off as text
        return f"I move {step.action}."
    player = _cells(grid, "PS")
    boxes = _cells(grid, "X")
    placed = _cells(grid, "√")
    targets = _cells(grid, "OS")
    parts = [f"I am at {_where(player)}." if player else ""]
    if boxes:
        parts.append(f"Box{'es' if len(boxes) > 1 else ''} at {_where(boxes)}.")
    if placed:
        parts.append(f"On target: {_where(placed)}.")
    if targets:
        parts.append(f"Target{'s' if len(targets) > 1 else ''} at {_where(targets)}.")
    parts.append(f"I move {step.action}.")
    return " ".join(p for p in parts if p)


def hindsight(info: dict[str, Any], traj: Any) -> str | None:
    plan = info.get("solution")
    if not plan:
        return None
    return (
        f"a shortest solution from the start is {len(plan)} moves: {listing(plan, 20)}; plan each push "
        "so the box never ends against a wall away from the target"
    )


SPEC = AgentSpec(
    render=render,
    parse=parse_think_action,
    history=2,
    invalid_penalty=0.1,
    stop=("</action>",),
    task_markers=(),  # no task line (as the reference): the skill goes before "Now it's your turn"
    reasoning=reasoning,
    hindsight=hindsight,
)
