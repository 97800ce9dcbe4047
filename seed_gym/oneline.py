"""One-line usage errors, shared by every command (``eval``, ``play``, ``train``, ``sft``, ...).

A mistyped flag or value is a user error, not a bug: the command ends with one line on stderr,
``PROG: MESSAGE``, naming the bad value and the valid choices, exit status 2, before anything is
written. This module sits at the bottom of the layers (it imports nothing of seed-gym), so the
trainer's commands use the same helpers as the applications (``seed_gym.usage`` re-exports
them).
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

USAGE_EXIT = 2  # argparse's code for a usage error


def one_line(message: object) -> str:
    """``message`` with every run of whitespace (newlines included) as one space."""
    return " ".join(str(message).split())


def usage_error(prog: str, message: object) -> NoReturn:
    """End the command: one line ``PROG: MESSAGE`` on stderr, exit code 2."""
    print(f"{prog}: {one_line(message)}", file=sys.stderr)
    raise SystemExit(USAGE_EXIT)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (argparse prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        usage_error(self.prog, f"{message} (see {self.prog} --help)")
