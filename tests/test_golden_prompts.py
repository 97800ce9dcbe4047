"""The first agent prompt of every registered env (seed 0, split ``seen``, default modality and
history) equals ``tests/golden/<EnvName>.txt``, and the same prompt with a skill block placed by
SEED's rule (after the task line, else before "Now it's your turn", else at the end) equals
``tests/golden/skill/<EnvName>.txt``, so a prompt never changes by accident.

After an intended change, rewrite the files and review the diff::

    SEED_GYM_UPDATE_GOLDEN=1 pytest tests/test_golden_prompts.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest
from conftest import import_example

import seed_gym
from seed_gym.wrappers.skill import insert_skill

import_example()
GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("SEED_GYM_UPDATE_GOLDEN") == "1"


def golden_name(env_id: str) -> str:
    """``seed_gym/Sokoban-v0`` -> ``Sokoban``."""
    return env_id.rsplit("/", 1)[-1].rsplit("-v", 1)[0]


SKILL = "Golden skill: read the observation, then follow this rule in every step of the episode."


def first_prompt(env_id: str, skill: str | None = None) -> str:
    """The first prompt, with ``skill`` placed by the env's markers (``insert_skill``, the rule
    of SEED's teacher prompts and of skill-in-prompt actors) when given."""
    env = seed_gym.make_agent_env(env_id, split="seen")
    try:
        obs, info = env.reset(seed=0)
        modality = env.unwrapped.modality
        spec = env.agent_spec
    finally:
        env.close()
    lines = [
        f"# env: {env_id}  split: seen  seed: 0  modality: {modality}",
        f"# task_id: {info['task_id']}",
    ]
    messages = obs["messages"]
    if skill is not None:
        messages, where = insert_skill(
            messages, skill, spec.task_markers, spec.fallback_marker, return_where=True
        )
        lines.append(f"# skill placed: {where}")
    for message in messages:
        lines += [f"## {message['role']}", message["content"]]
    for image in obs["images"]:
        lines.append(f"## image: {image.mode} {image.size[0]}x{image.size[1]}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("skill", [None, SKILL], ids=["plain", "skill"])
@pytest.mark.parametrize(
    "env_id", [e for e in seed_gym.list_envs() if e.startswith("seed_gym/")]
)  # the package's envs, not those other test modules register when collected first
def test_first_prompt_matches_golden(env_id, skill):
    folder = GOLDEN if skill is None else GOLDEN / "skill"
    path = folder / f"{golden_name(env_id)}.txt"
    text = first_prompt(env_id, skill)
    if UPDATE:
        folder.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), (
        f"no golden prompt for {env_id}: run SEED_GYM_UPDATE_GOLDEN=1 pytest {__file__} "
        f"and commit {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}"
    )
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"golden/{path.name}",
                tofile="now",
            )
        )
        pytest.fail(
            f"the first prompt of {env_id} changed:\n{diff}\n"
            "if intended: SEED_GYM_UPDATE_GOLDEN=1 pytest tests/test_golden_prompts.py"
        )


def test_golden_names_are_distinct():
    names = [golden_name(e) for e in seed_gym.list_envs()]
    assert len(names) == len(set(names))
