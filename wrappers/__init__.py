"""The LLM-facing layer: prompts, history, parsing, penalties, images, recording, group pools."""

from seed_gym.wrappers.agent import AgentEnv, EncodableInfo, wrap_agent
from seed_gym.wrappers.history import AnchorInfo, TurnHistory
from seed_gym.wrappers.parse import ParseAction
from seed_gym.wrappers.pool import EnvPool, make_group_pool
from seed_gym.wrappers.pool_errors import EnvPoolError, WorkerDiedError
from seed_gym.wrappers.prompt import PromptObservation
from seed_gym.wrappers.record import EpisodeRecorder
from seed_gym.wrappers.reward import InvalidActionPenalty
from seed_gym.wrappers.spec import AgentSpec, ParsedAction, PromptContext, Turn, parse_think_action
from seed_gym.wrappers.vision import AttachImages

__all__ = [
    "AgentEnv",
    "AgentSpec",
    "AnchorInfo",
    "AttachImages",
    "EncodableInfo",
    "EnvPool",
    "EnvPoolError",
    "EpisodeRecorder",
    "InvalidActionPenalty",
    "ParseAction",
    "ParsedAction",
    "PromptContext",
    "PromptObservation",
    "Turn",
    "TurnHistory",
    "WorkerDiedError",
    "make_group_pool",
    "parse_think_action",
    "wrap_agent",
]
