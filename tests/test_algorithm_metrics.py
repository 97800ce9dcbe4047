"""Every algorithm on the tiny preset logs the metrics it logged when ``golden/tiny-metrics.json``
was written: a reshaping of the trainer (issue 29: algorithms as plug-ins) must not change what
any algorithm computes.

The floats depend on the CPU's kernels: the same model name ("AMD EPYC") runs AVX2 kernels on one
machine and AVX-512 on another, and the last digits differ. So the file holds one set of metrics
per machine (CPU model, torch's kernel level, torch and transformers); the comparison runs against
this machine's set and is skipped, with the reason, where the file has none. After an intended
change, or to add this machine::

    SEED_GYM_UPDATE_GOLDEN=1 pytest tests/test_algorithm_metrics.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from conftest import deterministic_metrics, run_metrics  # noqa: E402

from seed_gym.evaluate import machine_info  # noqa: E402
from seed_gym.trainer.config import TrainConfig, tiny  # noqa: E402
from seed_gym.trainer.train import train  # noqa: E402

GOLDEN = Path(__file__).parent / "golden" / "tiny-metrics.json"
UPDATE = os.environ.get("SEED_GYM_UPDATE_GOLDEN") == "1"
ALGOS = {
    "grpo": {},
    "seed": {},
    "seed-no-sft": {"algo": "seed", "no_sft": True},
    "seed-positive-only": {"algo": "seed", "positive_only": True},
    "seed-opid": {"algo": "seed", "teacher_advantage": True},
    "skill-grpo": {"algo": "skill-grpo"},
    "static-skills": {"algo": "static-skills"},
    "opsd": {"algo": "opsd"},
    "prompt": {"algo": "prompt"},
}


def machine() -> dict[str, str]:
    info = machine_info()
    return {"cpu": info["cpu"], "kernels": info["kernels"], "torch": torch.__version__,
            "transformers": transformers.__version__}  # fmt: skip


def run(tmp_path: Path, name: str, monkeypatch) -> list[dict]:
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path / "cache"))
    base = tiny().to_dict()
    base.update(env="seed_gym/EZPoints-v0", modality="text", out=str(tmp_path / name),
                progress=False, tensorboard=False, save_hf=False, eval_splits=("seen",),
                **{"algo": name, **ALGOS[name]})  # fmt: skip
    train(TrainConfig.from_dict(base))
    return [deterministic_metrics(m) for m in run_metrics(tmp_path / name)]


@pytest.mark.parametrize("name", sorted(ALGOS))
def test_tiny_metrics_are_unchanged(tmp_path, monkeypatch, name):
    here = machine()
    sets = json.loads(GOLDEN.read_text())["machines"] if GOLDEN.exists() else []
    stored = next((s for s in sets if s["machine"] == here), None)
    if stored is None and not UPDATE:
        pytest.skip(f"no golden metrics for this machine ({here}); they exist for "
                    f"{[s['machine'] for s in sets]}")  # fmt: skip
    lines = run(tmp_path, name, monkeypatch)
    if UPDATE:
        if stored is None:
            stored = {"machine": here, "algos": {}}
            sets.append(stored)
        stored["algos"][name] = lines
        GOLDEN.write_text(json.dumps({"machines": sets}, indent=1, sort_keys=True) + "\n")
        return
    expected = stored["algos"][name]
    assert [sorted(m) for m in lines] == [sorted(m) for m in expected]
    for got, want in zip(lines, expected, strict=True):
        for key, value in want.items():
            assert got[key] == pytest.approx(value, rel=1e-6, abs=1e-9), (name, key)
