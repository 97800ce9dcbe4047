"""The import contracts hold on this checkout and catch a deliberate upward import and a cycle
(``scripts/lint_imports.sh``, which ``make lint`` runs)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytest.importorskip("importlinter")
SCRIPT = ROOT / "scripts" / "lint_imports.sh"
VENV = Path(sys.executable).parent.parent


def lint(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), str(src)],
        capture_output=True,
        text=True,
        env={"VENV": str(VENV), "PATH": "/usr/bin:/bin"},
    )


def copy_tree(tmp_path: Path) -> Path:
    dst = tmp_path / "src"
    dst.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, dst / name)
    for name in ("seed_gym", "envs", "wrappers", "trainer"):
        shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_the_checkout_keeps_its_layers():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout


def test_an_upward_import_is_caught(tmp_path):
    src = copy_tree(tmp_path)
    env = src / "envs" / "ezpoints.py"
    env.write_text(env.read_text() + "\nfrom seed_gym.trainer import losses  # noqa\n")
    done = lint(src)
    assert done.returncode != 0
    assert "seed_gym.envs is not allowed to import seed_gym.trainer" in done.stdout


def test_a_cycle_is_caught(tmp_path):
    src = copy_tree(tmp_path)
    losses = src / "trainer" / "losses.py"
    losses.write_text(
        losses.read_text() + "\n\ndef _late():\n    from seed_gym.trainer import train  # noqa\n"
    )
    done = lint(src)
    assert done.returncode != 0
    assert "No cycles are allowed in seed_gym.trainer" in done.stdout
