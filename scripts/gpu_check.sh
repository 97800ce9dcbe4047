#!/usr/bin/env bash
# The acceptance check for a GPU machine (docs/scaling.md): on one GPU in a few minutes, with no
# downloads (SmolLM2 from its PyPI wheel), it checks the sampler's logprobs against the trainer's
# (fp32 and bf16), one GRPO and one SEED iteration on ALFWorld with vLLM colocated, FSDP2 under
# torchrun on 1 GPU (and 2 when there are two), and prints one table of pass/fail and throughput
# (also written to runs/gpu-check/gpu_check.md). Exit status 0 when nothing failed.
#
#   make setup && .venv/bin/pip install -e '.[vllm]'   # vLLM for the GPU (else the HF engine samples)
#   bash scripts/gpu_check.sh
#   bash scripts/gpu_check.sh --device cpu --model tiny --out /tmp/gc   # the CPU-possible part
#
# Extra arguments go to python -m seed_gym.tools.gpu_check (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec "$PY" -m seed_gym.tools.gpu_check "$@"
