"""ALFWorld on the real alfworld + textworld engine, with an offline suite generated from the wheel.

Modules: ``env`` (the gymnasium env), ``engine`` (textworld's PddlEnv + AlfredDemangler, errors),
``accel`` (memoised translation and template parsing), ``expert`` (privileged state expert),
``generate`` (ALFRED-style PDDL problems), ``build`` (the suite), ``layout`` / ``realdata`` (the
official ``json_2.1.1`` layout and ``$ALFWORLD_DATA``).
"""

from __future__ import annotations

# realdata first: it records the user's $ALFWORLD_DATA before anything imports alfworld (which
# overwrites it with its own default).
from seed_gym.envs.alfworld import realdata  # noqa: F401, I001
from seed_gym.envs.alfworld.env import ALFWorldEnv
from seed_gym.envs.alfworld.generate import GENERATOR_VERSION, TASK_TYPES

__all__ = ["ALFWorldEnv", "GENERATOR_VERSION", "TASK_TYPES"]
