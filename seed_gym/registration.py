"""Every ``register()`` call, and ``make`` / ``list_envs`` / ``task_ids`` / ``import_env_modules``
(the chat-facing ``make_agent_env`` lives in ``seed_gym.wrappers.agent``).

Env ids live in gymnasium's registry under the ``seed_gym`` namespace, so ``gymnasium.make``
works too. Each id also names its *agent spec* (prompt template, parser, history window, penalty;
see ``seed_gym.wrappers.spec``) by import path, so heavy env modules load only when used.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

from seed_gym.core import FreezeAtEnd
from seed_gym.splits import SPLITS, SplitManifest

NAMESPACE = "seed_gym"
FREEZE_AT_END = WrapperSpec(
    name=FreezeAtEnd.class_name(),
    entry_point=f"{FreezeAtEnd.__module__}:{FreezeAtEnd.__name__}",
    kwargs={"zeroed": ()},
)
_AGENT_SPECS: dict[str, str | Any] = {}


def register(
    id: str,
    entry_point: str | type,
    *,
    max_episode_steps: int,
    agent_spec: str | Any,
    kwargs: dict[str, Any] | None = None,
) -> None:
    """Register an env (also from user code). ``agent_spec`` is an ``AgentSpec`` or its import
    path ``"module:NAME"``. ``id`` must look like ``namespace/Name-vN``. A made env is the env
    in a ``TimeLimit`` of ``max_episode_steps`` in a ``FreezeAtEnd`` (steps after the end, by
    termination or truncation, pay nothing)."""
    gym.register(
        id=id,
        entry_point=entry_point,
        max_episode_steps=max_episode_steps,
        kwargs=kwargs or {},
        disable_env_checker=True,  # seed_gym.check_env is stricter; run it in tests instead
        # outside the TimeLimit, so it sees truncation too (gymnasium applies these last)
        additional_wrappers=(FREEZE_AT_END,),
    )
    _AGENT_SPECS[id] = agent_spec


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def agent_spec(env_id: str):
    """The ``AgentSpec`` registered for ``env_id``."""
    _require(env_id)
    spec = _AGENT_SPECS[env_id]
    if isinstance(spec, str):
        spec = _AGENT_SPECS[env_id] = _load(spec)
    return spec


def list_envs() -> list[str]:
    """Every env id with an agent spec (seed-gym's own and those registered by user code)."""
    return sorted(_AGENT_SPECS)


def _require(env_id: str) -> None:
    if env_id not in _AGENT_SPECS:
        known = ", ".join(list_envs())
        raise gym.error.UnregisteredEnv(f"no seed-gym env {env_id!r}; registered: {known}")


def make(env_id: str, split: str = "train", modality: str | None = None, **kwargs: Any) -> gym.Env:
    """Make the raw game: the env in a ``TimeLimit`` in a ``FreezeAtEnd`` (nothing is played or
    paid after the end). Extra kwargs go to the env constructor (``max_episode_steps`` to the
    ``TimeLimit``: a limit of your own goes here, as a ``TimeLimit`` outside the freeze would
    end episodes it never sees)."""
    _require(env_id)
    if modality is not None:
        kwargs["modality"] = modality
    return gym.make(env_id, split=split, **kwargs)


def import_env_modules(modules: list[str]) -> None:
    """Import user modules (names or ``.py`` paths) so their ``seed_gym.register`` and
    ``register_algorithm`` calls run (the CLI's ``--import``).

    Raises ``ImportError`` with one line naming the module and what went wrong, whatever failed:
    a missing file or module, a syntax error, or any exception the module's own code raised (a
    user's file is input to the command, so its failure is a usage error, not a traceback)."""
    for spec in modules:
        path = Path(spec)
        try:
            if spec.endswith(".py") or path.is_file():
                if not path.is_file():
                    raise FileNotFoundError("no such file")
                # by module name from its folder, so its envs pickle into subprocess workers
                sys.path.insert(0, str(path.resolve().parent))
                importlib.import_module(path.stem)
            else:
                importlib.import_module(spec)
        except Exception as e:  # noqa: BLE001 - the user's module: every failure is named
            said = e.args[0] if isinstance(e, FileNotFoundError) and e.args else e
            raise ImportError(" ".join(f"--import {spec}: {_kind(e)}{said}".split())) from e


def _kind(error: BaseException) -> str:
    """``"SyntaxError: "`` and the like before a message (none for a missing file)."""
    return "" if isinstance(error, FileNotFoundError) else f"{type(error).__name__}: "


def parse_env_kwargs(pairs: Iterable[str]) -> dict[str, Any]:
    """Constructor kwargs from ``KEY=VALUE`` strings (the CLI's ``--env-kwarg``). A value is read
    as JSON when it parses (``5``, ``true``, ``null``, ``["garden"]``, ``{"k": 1}``, ``"1"``),
    else kept as the string (``data_dir=/data/webshop``). Raises ``ValueError`` naming a pair
    without ``=`` or with a key that is not an identifier."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(
                f"--env-kwarg {pair!r} is not KEY=VALUE (e.g. data_dir=/data/webshop, topk=5)"
            )
        try:
            kwargs[key] = json.loads(raw)
        except json.JSONDecodeError:
            kwargs[key] = raw
    return kwargs


def env_class(env_id: str) -> type:
    """The env class behind ``env_id`` (imports its module, builds nothing)."""
    _require(env_id)
    entry = gym.spec(env_id).entry_point
    return _load(entry) if isinstance(entry, str) else entry


def env_kwarg_names(env_id: str) -> list[str] | None:
    """The keyword arguments ``env_id``'s constructor takes besides ``split``, ``modality`` and
    ``render_mode``; None when it takes ``**kwargs`` (anything may be valid)."""
    try:
        params = inspect.signature(env_class(env_id)).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    skip = ("split", "modality", "render_mode")
    return [p.name for p in params if p.kind in kinds and p.name not in skip]


# what building an env may raise for a bad argument: a missing folder, a corrupt file, a missing
# extra, a value the constructor rejects
ENV_ERRORS = (ValueError, TypeError, KeyError, FileNotFoundError, ImportError, gym.error.Error)


def env_args_problem(
    env_id: str,
    *,
    split: str,
    modality: str | None = None,
    max_steps: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> str | None:
    """Why ``env_id`` cannot be made as asked, in one line naming the bad value and the valid
    choices; None when it can: a registered id, a known split, a modality the env has, a positive
    step limit, constructor arguments it takes, and a constructor (and split manifest) that
    succeeds with them. The CLI commands print it and exit before writing anything."""
    env_kwargs = dict(env_kwargs or {})
    known = list_envs()
    if env_id not in known:
        return f"unknown env {env_id!r}; choose one of: {', '.join(known)}"
    if split not in SPLITS:
        return f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}"
    if max_steps is not None and max_steps < 1:
        return f"--max-steps must be >= 1, not {max_steps}"
    try:
        cls = env_class(env_id)
    except ENV_ERRORS as e:
        return f"cannot load {env_id}: {e}"
    modalities = getattr(cls, "modalities", None)
    if modality is not None and modalities is not None and modality not in modalities:
        return f"{env_id} has no modality {modality!r}; choose one of: {', '.join(modalities)}"
    names = env_kwarg_names(env_id)
    unknown = sorted(set(env_kwargs) - set(names)) if names is not None else []
    if unknown:
        return (
            f"{env_id} takes no argument {unknown[0]!r}; its --env-kwarg keys are: "
            f"{', '.join(names or []) or '(none)'}"
        )
    try:
        env = make(env_id, split=split, modality=modality, **env_kwargs)
        try:
            _ = env.unwrapped.task_ids  # data folders are read and splits listed here
        finally:
            env.close()
    except ENV_ERRORS as e:
        shown = ", ".join(f"{k}={v!r}" for k, v in env_kwargs.items())
        return f"cannot make {env_id}{f' with {shown}' if shown else ''}: {e}"
    return None


def split_manifest(env_id: str, split: str, **kwargs: Any) -> SplitManifest:
    """The manifest of ``split`` (task ids in a fixed order, with ``.hash``)."""
    env = make(env_id, split=split, **kwargs)
    try:
        return env.unwrapped.manifest(split)
    finally:
        env.close()


def task_ids(env_id: str, split: str, **kwargs: Any) -> list[str]:
    """The task ids of ``split``: stable across runs and machines."""
    return list(split_manifest(env_id, split, **kwargs).task_ids)


# --- the suite ----------------------------------------------------------------------------------
register(
    "seed_gym/Sokoban-v0",
    "seed_gym.envs.sokoban:SokobanEnv",
    max_episode_steps=15,
    agent_spec="seed_gym.wrappers.templates.sokoban:SPEC",
)
register(
    "seed_gym/EZPoints-v0",
    "seed_gym.envs.ezpoints:EZPointsEnv",
    max_episode_steps=8,
    agent_spec="seed_gym.wrappers.templates.ezpoints:SPEC",
)
register(
    "seed_gym/ALFWorld-v0",
    "seed_gym.envs.alfworld:ALFWorldEnv",
    max_episode_steps=50,
    agent_spec="seed_gym.wrappers.templates.alfworld:SPEC",
)
register(
    "seed_gym/WebShop-v0",
    "seed_gym.envs.webshop:WebShopEnv",
    max_episode_steps=15,
    agent_spec="seed_gym.wrappers.templates.webshop:SPEC",
)
register(
    "seed_gym/SearchQA-v0",
    "seed_gym.envs.search:SearchQAEnv",
    max_episode_steps=4,
    agent_spec="seed_gym.wrappers.templates.search:SPEC",
)
