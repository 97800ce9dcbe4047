"""ALFWorld's agent spec: the reference suite's ALFRED prompt (paraphrased), think/action parsing.

Placeholders follow the reference exactly: ``{task_description}``, ``{step_count}``,
``{history_length}``, ``{action_history}``, ``{current_step}``, ``{current_observation}``,
``{admissible_actions}``. Admissible actions are quoted, one per line, with ``help`` removed; the
first step uses the history-free variant. History window 5; invalid output costs 0.1.
"""

from __future__ import annotations

from typing import Any

from seed_gym.wrappers.phrasing import listing
from seed_gym.wrappers.spec import AgentSpec, DemoStep, PromptContext, parse_think_action

INTRO = "You are an expert agent operating in the ALFRED Embodied Environment."
CLOSING = (
    "Now it's your turn to take an action.\n"
    "First reason step by step about the current situation inside <think> </think> tags. "
    "Then choose one admissible action for the current step and give it inside "
    "<action> </action> tags."
)

# as in the reference, the first prompt states the task only through the observation, whose
# intro ends with the engine's own "Your task is to: ..." line
TEMPLATE_NO_HISTORY = (
    INTRO
    + "\nYour current observation is: {current_observation}\n"
    + "Your admissible actions of the current situation are:\n{admissible_actions}\n\n"
    + CLOSING
)

TEMPLATE = (
    INTRO
    + "\nYour task is to: {task_description}\n"
    + "Before this step you have already taken {step_count} step(s). Here are the most recent "
    + "{history_length} observations and the action you took after each:\n{action_history}\n"
    + "You are now at step {current_step} and your current observation is: {current_observation}\n"
    + "Your admissible actions of the current situation are:\n{admissible_actions}\n\n"
    + CLOSING
)


def format_actions(actions: tuple[str, ...] | None) -> str:
    """Quoted, one per line, without ``help`` (as the reference prompt lists them)."""
    return "\n".join(f"'{a}'" for a in (actions or ()) if a != "help")


def format_history(ctx: PromptContext) -> str:
    first = ctx.step - len(ctx.history)
    return "\n".join(
        f"[Observation {first + i}: '{t.observation.strip()}', Action {first + i}: '{t.action}']"
        for i, t in enumerate(ctx.history)
    )


def render(ctx: PromptContext) -> str:
    values = {
        "task_description": ctx.task,
        "current_observation": ctx.observation.strip(),
        "admissible_actions": format_actions(ctx.admissible_actions),
        "step_count": ctx.step - 1,
        "history_length": len(ctx.history),
        "action_history": format_history(ctx),
        "current_step": ctx.step,
    }
    template = TEMPLATE if ctx.history else TEMPLATE_NO_HISTORY
    return template.format(**values)


# --- what trainers ask of this env (format warm-up, privileged annotator) ---------------------
def reasoning(step: DemoStep) -> str:
    return f"My task is to {step.task.rstrip('.')}. Next I {step.action}."


def hindsight(info: dict[str, Any], traj: Any) -> str | None:
    plan = info.get("expert_plan") or info.get("plan")
    if not plan:
        return None
    return f"the expert order of actions is: {listing(plan, 12)}"


SPEC = AgentSpec(
    render=render,
    parse=parse_think_action,
    history=5,
    invalid_penalty=0.1,
    stop=("</action>",),
    task_markers=("Your task is to:",),
    reasoning=reasoning,
    hindsight=hindsight,
)
