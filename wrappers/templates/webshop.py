"""WebShop's agent spec: the reference suite's prompt (paraphrased), history 2, think/action tags.

As in the reference, the page text drops everything up to and including the instruction (it is
already the task) and shows each remaining ``[SEP]`` part quoted; the admissible actions are
listed one per line, quoted, with a trailing comma.
"""

from __future__ import annotations

from typing import Any

from seed_gym.wrappers.phrasing import clip, listing
from seed_gym.wrappers.spec import AgentSpec, DemoStep, PromptContext, parse_think_action

SEP = " [SEP] "

INTRO = "You are an expert autonomous agent shopping on the WebShop e-commerce site."
CLOSING = (
    "Now it's your turn to take one action for the current step.\n"
    "First reason step by step about the current situation, and think carefully about which "
    "admissible action brings you closest to the shopping goal; this reasoning MUST be enclosed "
    "within <think> </think> tags. Then choose one admissible action for the current step and "
    "give it within <action> </action> tags."
)


def format_page(observation: str, task: str) -> str:
    """The page parts after the instruction, each quoted and joined by `` [SEP] ``."""
    parts = observation.split(SEP)
    if task in parts:
        parts = parts[parts.index(task) + 1 :]
    return SEP.join(f"'{p}'" for p in parts)


def _history(ctx: PromptContext) -> str:
    lines = []
    first = ctx.step - len(ctx.history)
    for i, turn in enumerate(ctx.history):
        page = format_page(turn.observation, ctx.task)
        lines.append(f"[Observation {first + i}: {page}, Action {first + i}: '{turn.action}']")
    return "\n".join(lines)


def render(ctx: PromptContext) -> str:
    actions = "\n".join(f"'{a}'," for a in (ctx.admissible_actions or ()))
    page = format_page(ctx.observation, ctx.task)
    lines = [INTRO, f"Your task is to: {ctx.task}."]
    if ctx.history:
        lines.append(
            f"Before this step you have taken {ctx.step - 1} step(s). Here are the last "
            f"{len(ctx.history)} observation(s) and the action you took after each:\n{_history(ctx)}"
        )
        lines.append(f"You are now at step {ctx.step} and your current observation is: {page}.")
    else:
        lines.append(f"Your current observation is: {page}.")
    lines.append(f"Your admissible actions in the current situation are:\n[\n{actions}\n].")
    return "\n".join(lines) + "\n\n" + CLOSING


# --- what trainers ask of this env (format warm-up, privileged annotator) ---------------------
def reasoning(step: DemoStep) -> str:
    """Names the kind of move by the page it is made on (search, results, item)."""
    action, page = step.action, str(step.info.get("webshop.page", ""))
    inner = action[action.find("[") + 1 : -1] if action.endswith("]") else action
    if action.startswith("search["):
        return "I search for a product that matches the instruction."
    if inner == "buy now":
        return "The product and its options match the instruction, so I buy it."
    if inner in ("next >", "< prev", "back to search"):
        return f"The product I want is not on this page, so I click {inner}."
    if page == "results":
        return f"Product {inner} looks like what the instruction asks for, so I open it."
    if page == "item":
        return f"The instruction asks for {inner}, so I select it."
    return f"Next I {action}."


def hindsight(info: dict[str, Any], traj: Any) -> str | None:
    parts = []
    if info.get("query"):
        parts.append(f"search for '{clip(info['query'], 80)}'")
    if info.get("attributes"):
        parts.append(f"open an item whose page shows {listing(info['attributes'], 6)}")
    options = info.get("options")
    if options:
        opts = options.items() if isinstance(options, dict) else [(None, o) for o in options]
        parts.append(
            "click the options " + listing([v if k is None else f"{k}: {v}" for k, v in opts], 6)
        )
    if info.get("price_upper"):
        parts.append(f"check the price is below {info['price_upper']}")
    if not parts:
        return None
    return ", ".join(parts) + ", then click buy now"


SPEC = AgentSpec(
    render=render,
    parse=parse_think_action,
    history=2,
    invalid_penalty=0.1,
    stop=("</action>",),
    task_markers=("Your task is to:",),
    reasoning=reasoning,
    hindsight=hindsight,
    score_key="webshop.score",
)
