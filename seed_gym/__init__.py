"""seed-gym: multi-turn Gymnasium envs for LLM agents, and a SEED / GRPO trainer."""

from __future__ import annotations

from seed_gym.checker import check_env
from seed_gym.core import INFO_KEYS, FreezeAtEnd, SeedEnv
from seed_gym.registration import (
    agent_spec,
    list_envs,
    make,
    register,
    split_manifest,
    task_ids,
)
from seed_gym.spaces import FreeText
from seed_gym.splits import SPLITS, SplitManifest
from seed_gym.wrappers.agent import make_agent_env

__version__ = "0.4.0"

__all__ = [
    "INFO_KEYS",
    "SPLITS",
    "FreeText",
    "FreezeAtEnd",
    "SeedEnv",
    "SplitManifest",
    "agent_spec",
    "check_env",
    "list_envs",
    "make",
    "make_agent_env",
    "register",
    "split_manifest",
    "task_ids",
]
