"""benchmarks/generate_memory.py runs every variant in its own process and prints one row each,
the first as the baseline (ratios 1.00)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "generate_memory.py"


def test_generate_memory_prints_a_row_per_variant_against_the_first():
    argv = ["--model", "tiny", "--prompts", "6", "--tokens", "24", "--new-tokens", "3"]
    argv += ["--batches", "6,2", "--attn", "sdpa,eager"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, check=True
    )
    rows = [line.split() for line in done.stdout.splitlines()]
    rows = [r for r in rows if len(r) == 7 and r[1] in ("sdpa", "eager")]
    assert [(r[0], r[1]) for r in rows] == [
        ("6", "sdpa"),
        ("2", "sdpa"),
        ("6", "eager"),
        ("2", "eager"),
    ]
    assert rows[0][5] == "1.00"  # the baseline's seconds ratio
    assert rows[0][3] in ("1.00", "-")  # its memory ratio ("-": the tiny model held 0 MiB)
    assert all(float(r[6]) > 0 for r in rows)  # tokens per second: every variant sampled
