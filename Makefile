# One-command entry points for a fresh machine. Everything installs into .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test bench lint clean

$(BIN)/seed-gym: pyproject.toml setup.py scripts/setup.sh
	bash scripts/setup.sh $(VENV)
	touch $@

setup: $(BIN)/seed-gym

# The main job on embedded defaults: SmolLM2-135M learns EZPoints with SEED (format warm-up,
# Stage 1, 3 iterations) on the CPU, no downloads; prints seen/unseen success before and after.
# Warm-up on 2 threads, training on 1: the command of benchmarks/learning.py --config cpu's SEED
# seed-0 run.
# DEMO_ARGS: more train flags, e.g. make demo DEMO_ARGS="--threads 2" (idle machine: one GRPO
# iteration 1.56x faster, docs/benchmarks.md; another run than the benchmark's seed 0)
DEMO_OUT ?= runs/demo
DEMO_ARGS ?=
demo: setup
	@if [ -e $(DEMO_OUT)/checkpoint.pt ]; then \
	  echo "$(DEMO_OUT) already holds a run: remove it, or make demo DEMO_OUT=runs/other"; exit 1; fi
	$(BIN)/seed-gym train --algo seed --preset smollm2-cpu --threads 1 --warmup-threads 2 --out $(DEMO_OUT) $(DEMO_ARGS)
	@$(BIN)/seed-gym report $(DEMO_OUT) --out $(DEMO_OUT)/report.html --csv $(DEMO_OUT)/report.csv >/dev/null
	@echo "report: $(DEMO_OUT)/report.html (curves, skills, every episode); table: $(DEMO_OUT)/report.csv"

test: setup
# -ra lists every skip, failure and error with its reason at the end; --maxfail stops a run that a
# broken machine (full disk, no memory) fails everywhere, with the first tracebacks printed.
	$(BIN)/python -m pytest -q -ra --maxfail=20 tests

bench: setup
	$(BIN)/python -m pytest benchmarks/bench_envs.py --benchmark-enable -q

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	bash scripts/lint_imports.sh   # import layers and cycles (pyproject [tool.importlinter])

clean:
	rm -rf $(VENV) build *.egg-info
