"""scripts/gpu_check.sh, the acceptance check for a GPU machine, run for its CPU-possible part:
the tiny model, the HF engine (vLLM is not in the test venv), one GRPO and one SEED iteration on
ALFWorld, FSDP2 in a process group of one and under torchrun with 2 gloo processes."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_gym.tools.gpu_check import Row, check_train, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_the_cpu_part_passes_and_prints_one_table(tmp_path):
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--device", "cpu", "--model", "tiny",
         "--out", str(tmp_path), "--max-new-tokens", "24", "--procs", "2"],
        env={**os.environ, "PY": sys.executable}, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in (tmp_path / "gpu_check.md").read_text().splitlines()[2:]
    }
    assert rows == {
        "logprobs fp32": "pass",
        "logprobs bf16": "skip",  # bf16 is a CUDA check
        "grpo alfworld": "pass",
        "seed alfworld": "pass",
        "fsdp 1 proc": "pass",
        "fsdp 2 proc": "pass",
    }
    assert "| check | result |" in proc.stdout
    # every training check exported a model and logged its phases
    for name in ("grpo-alfworld", "seed-alfworld", "fsdp-1-proc", "fsdp-2-proc"):
        assert (tmp_path / name / "model" / "config.json").exists(), name
    assert "rollout" in proc.stdout and "update" in proc.stdout


def test_a_failing_run_is_a_failed_row_with_its_reason(tmp_path):
    args = argparse.Namespace(device="cpu", model="/nonexistent/model", out=str(tmp_path),
                              max_new_tokens=8)  # fmt: skip
    row = check_train(args, "grpo")
    assert row.status == "FAIL"
    assert "/nonexistent/model" in row.detail and "exit 2" in row.detail  # a usage error
    assert "| grpo alfworld | FAIL |" in table([row])
    assert Row("x", "skip").sample_tps is None
