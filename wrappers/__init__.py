"""The LLM-facing layer: prompts, history, parsing, penalties, images, recording."""

from seed_gym.wrappers.spec import AgentSpec, ParsedAction, PromptContext, Turn, parse_think_action

__all__ = ["AgentSpec", "ParsedAction", "PromptContext", "Turn", "parse_think_action"]
