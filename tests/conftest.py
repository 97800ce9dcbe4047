"""Shared test helpers: the worked example env from docs/examples, importable as a module."""

from __future__ import annotations

import contextlib
import importlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

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


# --- a training run directory (seed_gym.trainer.train's ``out``) -------------------------------
def run_metrics(run_dir: Path) -> list[dict]:
    """The rows of ``run_dir/metrics.jsonl``, one per iteration."""
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def checkpoint_params(run_dir: Path) -> dict:
    """The model state dict saved in ``run_dir/checkpoint.pt``."""
    import torch  # here, so tests without the train extra still collect

    return torch.load(run_dir / "checkpoint.pt", weights_only=False)["model"]


def deterministic_metrics(m: dict) -> dict:
    """A metrics row without timings and eval results (what must repeat exactly under a seed)."""
    return {k: v for k, v in m.items() if not k.startswith(("time", "memory/", "eval/"))}


# --- headless Chromium (Debian's chromium + chromium-driver) -----------------------------------
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@contextlib.contextmanager
def headless_chromium(*extra_flags: str) -> Iterator[Any]:
    """A selenium Chrome driver on headless Chromium with a throwaway profile, quit and removed
    on exit; skips the test when chromium or chromium-driver is not installed."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip(
            f"needs Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER}); "
            "apt-get install chromium chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="seed-gym-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        *extra_flags,
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def canon(x: Any) -> Any:
    """Observations, infos and results as plain comparable values (PIL images and arrays by
    their pixels), so two runs can be compared with ``==``."""
    if isinstance(x, dict):
        return {k: canon(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [canon(v) for v in x]
    if hasattr(x, "tobytes") and hasattr(x, "size"):  # PIL.Image or ndarray
        return (type(x).__name__, getattr(x, "size", None), x.tobytes())
    return x
