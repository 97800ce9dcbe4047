"""``seed-gym list / check / play / eval / compare / train / sft / data / report / serve``.

Each subcommand's real work lives in its own module; this file only parses arguments and
dispatches, importing heavy modules lazily so ``seed-gym list`` stays instant.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable

from seed_gym import checker, data
from seed_gym.registration import list_envs, make
from seed_gym.spaces import MODALITIES
from seed_gym.splits import SPLITS
from seed_gym.usage import OneLineParser, import_modules_or_exit, usage_error


def _add_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="FILE",
        help="module or .py file that registers extra envs (repeatable)",
    )


def _cmd_list(args: argparse.Namespace) -> int:
    import_modules_or_exit("seed-gym list", args.imports)
    if args.algos:
        from seed_gym.trainer.algorithms import ALGORITHMS  # torch: only when asked

        width = max(map(len, ALGORITHMS))
        for name, cls in sorted(ALGORITHMS.items()):
            print(f"{name:<{width}}  {cls.description}")
        return 0
    for env_id in list_envs():
        print(env_id)
    return 0


# --- check: seed_gym.check_env from the command line -------------------------------------------
def _failed_check(error: BaseException) -> str:
    """Which check of ``check_env`` was running when ``error`` was raised: the ``check_*``
    function it had called, else the ``# section`` comment above its line. The checker's own
    failures name the rule they saw broken; an exception from the env's code names nothing."""
    source = inspect.getsourcefile(checker)
    frames = traceback.extract_tb(error.__traceback__)
    at = [i for i, f in enumerate(frames) if f.filename == source and f.name == "check_env"]
    if not at:
        return "check_env"
    frame, callee = frames[at[-1]], frames[at[-1] + 1] if at[-1] + 1 < len(frames) else None
    if callee is not None and callee.name.startswith("check_"):
        # gymnasium's own checker, or a check_* helper of seed-gym's (splits.check_disjoint)
        gymnasium = inspect.getsourcefile(checker.gym_check_env)
        return f"gymnasium's {callee.name}" if callee.filename == gymnasium else callee.name
    lines, first = inspect.getsourcelines(checker.check_env)
    for line in reversed(lines[: frame.lineno - first + 1]):
        if line.strip().startswith("# "):
            return line.strip()[2:]
    return f"check_env line {frame.lineno}"


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


def _check_one(env_id: str, split: str, modality: str | None) -> tuple[str | None, list[str]]:
    """What failed, in one line (None when ``env_id`` passes ``check_env``), and what the
    checker could not verify (its ``EnvCheckWarning``s, one line each)."""
    try:
        env = make(env_id, split=split, modality=modality)
    except Exception as e:  # noqa: BLE001 - an env that cannot be made fails its check
        return f"making the env: {_one_line(e)}", []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", checker.EnvCheckWarning)
        try:
            checker.check_env(env)
            problem = None
        except Exception as e:  # noqa: BLE001 - whatever the env's code raises is the answer
            problem = f"{_failed_check(e)}: {_one_line(e)}"
        finally:
            env.close()
    said = [" ".join(str(w.message).split()) for w in caught
            if issubclass(w.category, checker.EnvCheckWarning)]  # fmt: skip
    return problem, said


def _cmd_check(args: argparse.Namespace) -> int:
    prog = "seed-gym check"
    before = set(list_envs())
    import_modules_or_exit(prog, args.imports)
    known = list_envs()
    if args.env_id is not None and args.env_id not in known:
        usage_error(prog, f"unknown env {args.env_id!r}; choose one of: {', '.join(known)}")
    env_ids = [args.env_id] if args.env_id else [e for e in known if e not in before]
    if not env_ids:
        imported = " ".join(args.imports) or "no --import"
        usage_error(prog, f"{imported} registered no env; name one: seed-gym check ENV_ID")
    failed = 0
    for env_id in env_ids:
        start = time.perf_counter()
        problem, said = _check_one(env_id, args.split, args.modality)
        for message in said:
            print(f"warn {env_id}: {message}", file=sys.stderr)
        if problem is None:
            print(f"ok   {env_id} ({time.perf_counter() - start:.1f} s)")
        else:
            failed += 1
            print(f"FAIL {env_id}: {problem}", file=sys.stderr)
    return 1 if failed else 0


def _cmd_data(args: argparse.Namespace) -> int:
    if args.action == "path":
        print(data.cache_root())
        return 0
    names = args.names or sorted(data.BUILDERS)
    unknown = [n for n in names if n not in data.BUILDERS]
    if unknown:
        usage_error(
            "seed-gym data",
            f"unknown dataset {unknown[0]!r}; choose from: {', '.join(sorted(data.BUILDERS))}",
        )
    for name in names:
        path = data.build(name, force=args.force)
        print(f"{name}: {path}")
    return 0


def _delegate(module: str) -> Callable[[list[str]], int]:
    """Subcommands with their own argument parsers: ``module.main(argv)``."""

    def run(argv: list[str]) -> int:
        import importlib

        return int(importlib.import_module(module).main(argv) or 0)

    return run


# subcommands whose parser lives in their own module
DELEGATED = {
    "play": "seed_gym.play",
    "eval": "seed_gym.evaluate",
    "train": "seed_gym.trainer.train",
    "sft": "seed_gym.trainer.sft",
    "report": "seed_gym.report",
    "compare": "seed_gym.stats",
    "serve": "seed_gym.serve",
}


# ``seed-gym --help``: one line each (their own ``--help`` tells the rest; argparse reads %%)
DESCRIPTIONS = {
    "play": "play an env in the terminal (or as the agent sees it)",
    "eval": "evaluate a policy on a split: results.json with 95%% intervals",
    "train": "train with GRPO, SEED or a baseline (train --help lists presets and algorithms)",
    "sft": "SEED Stage 1 (the analyzer's SFT) on its own",
    "report": "HTML report (curves, results, trajectory viewer); --csv: a flat table",
    "compare": "paired difference of two evals, with a bootstrap 95%% interval",
    "serve": "serve the WebShop site in a browser",
}


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:  # `seed-gym list | head`: the reader left, which is no error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        return 0


def _main(argv: list[str]) -> int:
    if argv and argv[0] in DELEGATED:
        return _delegate(DELEGATED[argv[0]])(argv[1:])

    parser = OneLineParser(
        prog="seed-gym",
        description="LLM-agent envs behind one multi-turn Gymnasium interface, and a trainer "
        "for SEED and its baselines",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list registered env ids (--algos: training algorithms)")
    p.add_argument(
        "--algos", action="store_true", help="list the training algorithms (--algo) instead"
    )
    _add_import(p)
    p.set_defaults(fn=_cmd_list)
    p = sub.add_parser(
        "check",
        help="run seed_gym.check_env on an env, or on every env an --import file registers",
    )
    p.add_argument("env_id", nargs="?", help="env id (default: the envs the --import files add)")
    _add_import(p)
    p.add_argument("--split", default="train", choices=SPLITS, help="split to make (default train)")
    p.add_argument("--modality", default=None, choices=MODALITIES, help="default: the env's")
    p.set_defaults(fn=_cmd_check)
    p = sub.add_parser("data", help="build datasets into the cache")
    p.add_argument("action", choices=["build", "path"])
    p.add_argument("names", nargs="*", help="datasets to build (default: all)")
    p.add_argument("--force", action="store_true", help="rebuild even if present")
    p.set_defaults(fn=_cmd_data)
    for name in DELEGATED:
        sub.add_parser(name, help=DESCRIPTIONS[name], add_help=False)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    raise SystemExit(main())
