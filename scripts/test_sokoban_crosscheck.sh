#!/usr/bin/env bash
# Cross-check our Sokoban rules against gym-sokoban 0.0.6, step by step, on the same rooms.
# gym-sokoban needs the old `gym`, numpy < 2 and setuptools < 81, so it gets its own virtualenv
# (SOKOBAN_VENV, default .cache/venv-sokoban, git-ignored). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SOKOBAN_VENV:-.cache/venv-sokoban}
py="$venv/bin/python"
if ! "$py" -c "import gym_sokoban" 2>/dev/null; then
  python3 -m venv "$venv"
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q "setuptools<81" "numpy<2" gym==0.26.2 gym-sokoban==0.0.6 \
    "gymnasium==1.4.*" "pillow>=10" "tqdm>=4.66" "pytest>=8"
fi
"$py" -m pip install -q --no-deps -e .
# addopts of pyproject name pytest-benchmark's flag, which this venv does not have
exec "$py" -m pytest tests/test_sokoban_crosscheck.py -q -o addopts="-ra" -p no:cacheprovider "$@"
