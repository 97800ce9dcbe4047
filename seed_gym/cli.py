"""``seed-gym list / play / eval / compare / train / sft / data / report / serve``.

Each subcommand's real work lives in its own module; this file only parses arguments and
dispatches, importing heavy modules lazily so ``seed-gym list`` stays instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from seed_gym import data
from seed_gym.registration import list_envs
from seed_gym.usage import OneLineParser, usage_error


def _cmd_list(args: argparse.Namespace) -> int:
    for env_id in list_envs():
        print(env_id)
    return 0


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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:
        return _delegate(DELEGATED[argv[0]])(argv[1:])

    parser = OneLineParser(prog="seed-gym", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list registered env ids").set_defaults(fn=_cmd_list)
    p = sub.add_parser("data", help="build datasets into the cache")
    p.add_argument("action", choices=["build", "path"])
    p.add_argument("names", nargs="*", help="datasets to build (default: all)")
    p.add_argument("--force", action="store_true", help="rebuild even if present")
    p.set_defaults(fn=_cmd_data)
    for name, module in DELEGATED.items():
        sub.add_parser(name, help=f"see `seed-gym {name} --help` ({module})", add_help=False)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    raise SystemExit(main())
