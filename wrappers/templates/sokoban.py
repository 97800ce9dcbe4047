"""Sokoban's agent spec: the reference suite's prompt (paraphrased), think/action parsing.

One template serves every modality: it shows the symbol legend when the observation carries the
text grid and describes the tiles when it carries an ``<image>``. History turns show the past
grids (an image turn shows ``[image]``: only the current picture is attached).
"""

from __future__ import annotations

from seed_gym.wrappers.spec import AgentSpec, PromptContext, parse_think_action

IMAGE = "<image>"
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
        obs = turn.observation.replace(IMAGE, "[image]").strip() or "[image]"
        lines.append(f"[Observation {first + i}:\n{obs}\nAction {first + i}: {turn.action}]")
    return "\n".join(lines) + "\n"


def render(ctx: PromptContext) -> str:
    has_image = IMAGE in ctx.observation
    has_grid = "#" in ctx.observation.replace(IMAGE, "")
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


SPEC = AgentSpec(
    render=render,
    parse=parse_think_action,
    history=2,
    invalid_penalty=0.1,
    stop=("</action>",),
    task_markers=("You are an expert agent playing Sokoban",),
)
