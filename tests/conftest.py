"""Shared test helpers: the worked example env from docs/examples, importable as a module."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
GUESS_ID = "example/GuessNumber-v0"


def import_example(name: str = "guess_number") -> ModuleType:
    """Import ``docs/examples/<name>.py`` by module name (so its envs pickle and fork), which
    runs its ``seed_gym.register`` call once per process."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


@pytest.fixture(scope="session")
def guess_number() -> ModuleType:
    return import_example()
