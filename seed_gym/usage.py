"""Argument checks shared by the CLI commands (``eval``, ``play``, ``list``, ``data``, ``serve``).

A mistyped env id, split, modality, step limit, policy or ``--env-kwarg`` is a user error, not a
bug: it ends the command with one line on stderr that names the bad value and the valid choices
(``seed-gym eval: unknown split 'dev'; choose one of: train, seen, unseen``), exit code 2, and
before anything is written. Tracebacks stay for real failures. ``usage_error``,
``OneLineParser`` and ``USAGE_EXIT`` live in ``seed_gym.oneline`` (the trainer uses them too).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from seed_gym.oneline import USAGE_EXIT, OneLineParser, usage_error
from seed_gym.policies import POLICIES
from seed_gym.registration import env_args_problem, import_env_modules, parse_env_kwargs
from seed_gym.trainer.backends.models import VLM_BUILDERS, model_dir

__all__ = [
    "USAGE_EXIT",
    "OneLineParser",
    "add_env_kwarg_argument",
    "check_env_args",
    "check_policy_spec",
    "env_kwargs_or_exit",
    "import_modules_or_exit",
    "usage_error",
]


def add_env_kwarg_argument(parser: argparse.ArgumentParser) -> None:
    """``--env-kwarg KEY=VALUE`` (repeatable, into ``args.env_kwargs``), for the env constructor."""
    parser.add_argument(
        "--env-kwarg",
        dest="env_kwargs",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="env constructor argument, repeatable; VALUE is JSON when it parses, else a string "
        "(e.g. --env-kwarg data_dir=/data/webshop --env-kwarg topk=5)",
    )


def env_kwargs_or_exit(prog: str, pairs: list[str]) -> dict[str, Any]:
    try:
        return parse_env_kwargs(pairs)
    except ValueError as e:
        usage_error(prog, str(e))


def import_modules_or_exit(prog: str, modules: list[str]) -> None:
    """``--import`` modules, with a one-line error for one that is missing or fails to import."""
    try:
        import_env_modules(modules)
    except ImportError as e:  # one line naming the module (``import_env_modules``)
        usage_error(prog, e)


def check_env_args(
    prog: str,
    env_id: str,
    *,
    split: str,
    modality: str | None = None,
    max_steps: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> None:
    """Exit with one line unless ``env_id`` can be made as asked (``env_args_problem``)."""
    problem = env_args_problem(
        env_id, split=split, modality=modality, max_steps=max_steps, env_kwargs=env_kwargs
    )
    if problem is not None:
        usage_error(prog, problem)


def hub_id(name: str) -> bool:
    """Whether ``name`` reads as a Hugging Face hub id (``ORG/NAME``) rather than a local path."""
    parts = name.split("/")
    return (
        len(parts) == 2
        and all(parts)
        and not name.startswith((".", "~"))
        and not Path(name).exists()
    )


def check_policy_spec(prog: str, spec: str) -> None:
    """Exit with one line for an unknown policy kind, ``model:`` naming no model, or
    ``openai:`` without an endpoint (nothing is loaded here; a hub id reads its config.json
    through the Hugging Face cache)."""
    kind, sep, arg = spec.partition(":")
    if kind not in POLICIES:
        usage_error(
            prog,
            f"unknown policy {spec!r}; choose one of: {', '.join(sorted(POLICIES))} "
            "(model:PATH, openai:URL)",
        )
    if kind == "model":
        names = ("tiny", "smollm2", *VLM_BUILDERS)
        name = arg if sep and arg else "smollm2"
        if name not in names and not (Path(name).expanduser() / "config.json").is_file():
            if not hub_id(name):
                usage_error(
                    prog,
                    f"model:{name}: no model folder with a config.json there; use a Hugging "
                    f"Face folder, a hub id (ORG/NAME) or one of: {', '.join(names)}",
                )
            try:  # the hub id through the Hugging Face cache, as train --model reads it
                model_dir(name, files=["config.json"])
            except FileNotFoundError as e:
                usage_error(prog, f"model:{name}: {e}")
    if kind == "openai" and not arg:
        usage_error(prog, "openai:URL needs the endpoint, e.g. openai:http://127.0.0.1:8000/v1")
