"""What a training run keeps on disk between iterations: the metrics log and the checkpoint.

``Logger`` appends one JSON line per iteration to ``metrics.jsonl`` (and TensorBoard scalars);
``save_checkpoint`` / ``load_checkpoint`` hold model, optimizer and every RNG state, so a resumed
run continues exactly (``trainer/train.py``); ``truncate_metrics`` drops lines logged after the
checkpoint a run resumes from.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np


class Logger:
    """metrics.jsonl (append) + TensorBoard; a line per ``log`` call."""

    def __init__(self, run_dir: Path, tensorboard: bool):
        self.path = run_dir / "metrics.jsonl"
        self.tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self.tb = SummaryWriter(str(run_dir / "tb"))
            except ImportError:
                print(
                    "tensorboard is not installed: metrics go to metrics.jsonl only",
                    file=sys.stderr,
                )

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"iteration": step, **metrics}, sort_keys=True) + "\n")
        if self.tb is not None:
            for k, v in metrics.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    self.tb.add_scalar(k, v, step)
            self.tb.flush()

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def truncate_metrics(path: Path, last_iteration: int) -> None:
    """Drop metric lines past the checkpoint, so a resumed run does not log iterations twice."""
    if not path.exists():
        return
    keep = [
        ln
        for ln in path.read_text().splitlines()
        if ln and json.loads(ln)["iteration"] <= last_iteration
    ]
    path.write_text("".join(ln + "\n" for ln in keep))


def save_checkpoint(path: Path, model, optimizer, state: dict) -> None:
    import torch

    trainable = {k for k, p in model.named_parameters() if p.requires_grad}
    payload = {
        # under LoRA only the adapters change; the frozen base is rebuilt from cfg.model
        "model": {
            k: v for k, v in model.state_dict().items() if k in trainable or not state["lora"]
        },
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "rng": {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
        },
        **state,
    }
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)  # a run killed mid-write keeps its previous checkpoint


def load_checkpoint(path: Path, model, optimizer) -> dict:
    import torch

    payload = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(payload["model"], strict=not payload["lora"])
    if optimizer is not None and payload["optimizer"] is not None:
        optimizer.load_state_dict(payload["optimizer"])
    random.setstate(payload["rng"]["python"])
    np.random.set_state(payload["rng"]["numpy"])
    torch.set_rng_state(payload["rng"]["torch"])
    return payload
