"""Reuse an eval of identical weights (``--eval-cache``).

An eval is a pure function of the policy's weights and the eval settings: its tasks, env seeds
and sampling seeds are derived from ``cfg.seed`` alone (``train.evaluate``). Runs that start from
the same weights with the same seed therefore repeat the same start eval exactly; the learning
benchmark has two per seed (GRPO and SEED both start from the shared format warm-up, and SEED's
Stage 1 keeps it unchanged when it accepts no skill). With ``--eval-cache`` the first run stores
each split's metrics and episode rows under ``cache_dir("evals")``, keyed by a digest of every
parameter and of everything else the outcome depends on; a later run with the same key reads them
instead of playing the episodes again. Weights that differ by one bit, or any other setting,
thread count, library version or CPU kind give another key, so on a CPU a hit is the eval the run
would have computed. (CUDA kernels are not bitwise reproducible run to run: there a hit is an
equally valid draw of the same eval, not necessarily the identical one.)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Any

import torch

from seed_gym import __version__
from seed_gym.data import cache_dir

# the config flags an eval's outcome depends on (besides the weights)
EVAL_FIELDS = (
    "env", "env_kwarg", "modality", "history", "backend", "engine", "seed", "eval_tasks",
    "eval_samples", "eval_temperature", "eval_max_new_tokens", "max_new_tokens", "max_turns",
    "bf16", "threads", "gen_batch",
)  # fmt: skip
VERSION = 1  # bump when what an eval writes changes


def eval_key(cfg: Any, weights: str, split: str) -> str:
    """The cache key of evaluating weights with digest ``weights`` (``state_dict_sha256``) on
    ``split`` under ``cfg``."""
    import transformers

    flags = cfg.flags()
    settings = {k: flags[k] for k in EVAL_FIELDS}
    settings.update(
        split=split,
        threads_now=torch.get_num_threads(),
        versions=[__version__, torch.__version__, transformers.__version__, VERSION],
        machine=[platform.machine(), torch.backends.cpu.get_cpu_capability()],
    )
    text = json.dumps(settings, sort_keys=True, default=list)
    return hashlib.sha256(f"{weights}|{text}".encode()).hexdigest()[:32]


@dataclasses.dataclass
class CachedEval:
    metrics: dict[str, float]
    rows: list[dict[str, Any]]


def load_eval(key: str) -> CachedEval | None:
    """The stored eval of ``key``, or None (missing, or unreadable: then it is recomputed)."""
    path = cache_dir("evals") / f"{key}.json"
    try:
        data = json.loads(path.read_text())
        return CachedEval(dict(data["metrics"]), list(data["rows"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store_eval(key: str, result: CachedEval) -> Path:
    """Write atomically (a rename), so a run killed mid-write leaves no half entry."""
    path = cache_dir("evals") / f"{key}.json"
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(dataclasses.asdict(result)))
    os.replace(tmp, path)
    return path
