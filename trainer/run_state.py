"""What a training run keeps on disk between iterations: the metrics log and the checkpoint.

``Logger`` appends one JSON line per iteration to ``metrics.jsonl`` (and TensorBoard scalars,
and with ``--wandb`` a Weights & Biases step);
``save_checkpoint`` / ``load_checkpoint`` hold model, optimizer and every RNG state, so a resumed
run continues exactly (``trainer/train.py``); ``truncate_metrics`` drops lines logged after the
checkpoint a run resumes from.

An iteration commits in one place: its checkpoint is written (atomically) *holding its metrics
line*, then the line is appended. A run killed anywhere resumes from the last checkpoint, drops
later lines and rewrites that checkpoint's line, so ``metrics.jsonl`` never skips or repeats an
iteration. Checkpoints hold tensors and plain containers only and load with
``weights_only=True``: resuming a run folder from elsewhere cannot execute a pickle.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.stats import paired_difference, wilson_interval
from seed_gym.trainer.algorithms.seed.skill_log import SkillLog, skill_records
from seed_gym.trainer.backends.distributed import is_sharded
from seed_gym.trainer.phases import PhaseMeter, phase_rows, phase_table
from seed_gym.trajlog import iteration_path, write_trajectories


class Logger:
    """metrics.jsonl (append) + TensorBoard + Weights & Biases (``wandb``: the run's config, or
    None for none); a line per ``log`` call."""

    def __init__(self, run_dir: Path, tensorboard: bool, *, wandb: dict[str, Any] | None = None):
        self.path = run_dir / "metrics.jsonl"
        self.wandb = wandb_run(run_dir, wandb) if wandb is not None else None
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
        if self.wandb is not None:
            numbers = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
            self.wandb.log({"iteration": step, **numbers}, step=step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            import wandb

            self.wandb.finish()
            wandb.teardown()  # waits for the service process: the run's files are complete
            self.wandb = None


WANDB_ID = "wandb-run-id"  # RUN_DIR/wandb-run-id: a resumed run logs to the same W&B run


def wandb_run(run_dir: Path, config: dict[str, Any]) -> Any:
    """A Weights & Biases run for ``run_dir`` (``--wandb``), named after the folder, its files in
    ``RUN_DIR/wandb``; project ``$WANDB_PROJECT`` or ``seed-gym``; ``WANDB_MODE=offline`` logs
    without a network (``wandb sync`` uploads it later)."""
    try:
        import wandb
    except ImportError:
        raise RunStateError(WANDB_MISSING) from None
    id_file = run_dir / WANDB_ID
    run_id = id_file.read_text().strip() if id_file.is_file() else secrets.token_hex(4)
    id_file.write_text(run_id + "\n")
    return wandb.init(
        project=os.environ.get("WANDB_PROJECT") or "seed-gym",
        name=run_dir.name,
        id=run_id,
        resume="allow",
        dir=str(run_dir),
        config=config,
    )


WANDB_MISSING = "--wandb needs the wandb package: pip install 'seed-gym[wandb]'"


def quiet_progress_bars() -> None:
    """``--no-progress``: no bar from transformers or the Hugging Face hub either (weight loading,
    downloads), in this process and the build processes it starts (``HF_HUB_DISABLE_PROGRESS_BARS``,
    which both read at import). seed-gym's own bars follow ``cfg.system.progress``."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    try:
        from huggingface_hub.utils import disable_progress_bars
        from transformers.utils import logging as hf_logging
    except ImportError:  # without the train extra there is nothing to silence
        return
    disable_progress_bars()
    hf_logging.disable_progress_bar()


class RunStateError(SystemExit):
    """A run folder's file cannot be used; the message names it (one line, no traceback)."""


def metric_lines(path: Path) -> list[tuple[str, int]]:
    """``metrics.jsonl``'s lines with their iterations. A last line cut short by a kill (mid-JSON
    or mid-character) is dropped; a line elsewhere that is not UTF-8 or not a metrics record is a
    ``RunStateError`` naming the file and the line (the log of a run is not silently shortened)."""
    if not path.exists():
        return []
    lines = [ln for ln in path.read_bytes().splitlines() if ln.strip()]
    out = []
    for n, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8")
            iteration = json.loads(line)["iteration"]
            if not isinstance(iteration, int) or isinstance(iteration, bool):
                raise TypeError(f"iteration {iteration!r} is not an integer")
        except UnicodeDecodeError:
            problem = "is not UTF-8"
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, RecursionError) as e:
            problem = f"is not a metrics record ({type(e).__name__}: {e})"
        else:
            out.append((line, iteration))
            continue
        if n == len(lines):  # the write a kill interrupted; its iteration is redone
            break
        raise RunStateError(f"{path}: line {n} {' '.join(problem.split())[:200]}")
    return out


def truncate_metrics(path: Path, last_iteration: int) -> None:
    """Drop metric lines past the checkpoint, so a resumed run does not log iterations twice.
    A last line cut short by a kill is dropped too; a broken line elsewhere is an error
    (``metric_lines``)."""
    if not path.exists():
        return
    keep = [ln for ln, iteration in metric_lines(path) if iteration <= last_iteration]
    path.write_text("".join(ln + "\n" for ln in keep), encoding="utf-8")


def save_checkpoint(path: Path, model, optimizer, state: dict, *, main: bool = True) -> None:
    """The checkpoint of an iteration: ``path`` (``checkpoint.pt``) holds RNG states, the run's
    state and, for a whole model, its weights and optimizer state. A sharded (FSDP) model's
    shards go to ``path.parent/checkpoint.dcp/iter_NNNNNN`` with ``torch.distributed.checkpoint``
    (every rank calls this; ``main`` is the rank that writes ``path``), named in the payload, and
    older shard folders are removed only once the new payload is in place."""
    import torch

    sharded = is_sharded(model)
    payload = {
        "rng": {
            "python": random.getstate(),
            "numpy": _numpy_state_out(np.random.get_state()),
            "torch": torch.get_rng_state(),
        },
        **state,
    }
    if sharded:
        import torch.distributed as tdist
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        shards = path.parent / DCP_DIR / f"iter_{int(state['iteration']):06d}"
        model_sd, optim_sd = get_state_dict(model, optimizer)
        dcp.save({"model": model_sd, "optimizer": optim_sd}, checkpoint_id=str(shards))
        tdist.barrier()  # every rank's shards are on disk before the payload names them
        payload.update(model=None, optimizer=None, shards=shards.name)
    else:
        trainable = {k for k, p in model.named_parameters() if p.requires_grad}
        # under LoRA only the adapters change; the frozen base is rebuilt from cfg.model
        payload["model"] = {
            k: v for k, v in model.state_dict().items() if k in trainable or not state["lora"]
        }
        payload["optimizer"] = optimizer.state_dict() if optimizer is not None else None
    if main:
        tmp = path.with_suffix(".tmp")
        torch.save(payload, tmp)
        os.replace(tmp, path)  # a run killed mid-write keeps its previous checkpoint
        if sharded:
            for old in (path.parent / DCP_DIR).iterdir():
                if old.name != payload["shards"]:
                    shutil.rmtree(old, ignore_errors=True)


DCP_DIR = "checkpoint.dcp"


def _numpy_state_out(state: tuple) -> dict[str, Any]:
    """numpy's global RNG state as tensors and plain values (``weights_only`` loads it)."""
    import torch

    kind, keys, pos, has_gauss, cached = state
    return {
        "kind": kind,
        "keys": torch.from_numpy(keys.astype(np.int64)),
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached),
    }


def _numpy_state_in(saved: Any) -> Any:
    if isinstance(saved, dict):
        keys = saved["keys"].numpy().astype(np.uint32)
        return (saved["kind"], keys, saved["pos"], saved["has_gauss"], saved["cached_gaussian"])
    return saved  # a 0.1 checkpoint: numpy's own tuple


def read_checkpoint(path: Path) -> dict[str, Any]:
    """The checkpoint's payload, loaded with ``weights_only=True`` (numpy's array rebuild is
    allowed for checkpoints written by 0.1, which held numpy's RNG state as an array).
    ``RunStateError`` names the file when it is not a readable checkpoint."""
    import torch

    multiarray = getattr(np, "_core", None) or np.core  # numpy 2 renamed it
    allowed = [multiarray.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]
    try:
        with torch.serialization.safe_globals(allowed):
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - a truncated, corrupt or foreign file: name it
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RunStateError(f"{path}: not a readable seed-gym checkpoint ({first[:200]})") from None
    if not isinstance(payload, dict):
        raise RunStateError(
            f"{path}: not a seed-gym checkpoint (it holds a {type(payload).__name__})"
        )
    missing = [k for k in ("model", "optimizer", "rng", "iteration") if k not in payload]
    if missing:
        raise RunStateError(f"{path}: not a seed-gym checkpoint (missing {missing})")
    return payload


def _misfit(error: BaseException) -> str:
    """Why a checkpoint's state does not load into this run's model or optimizer, in one line:
    the first mismatch torch names, and how many more there are."""
    # torch: "Error(s) in loading state_dict for X:\n\tsize mismatch for a: ...\n\t..."
    lines = [ln.strip() for ln in str(error).strip().splitlines() if ln.strip()]
    found = lines[1:] if len(lines) > 1 else lines or [type(error).__name__]
    first, more = " ".join(found[0].split())[:300].rstrip("."), len(found) - 1
    tail = f" (and {more} more)" if more > 0 else ""
    return (
        f"does not fit this run's model or optimizer ({first}{tail}); was it saved by a run "
        "with another --model, --lora-r or algorithm?"
    )


def load_checkpoint(path: Path, model, optimizer) -> dict:
    import torch

    payload = read_checkpoint(path)
    if payload.get("shards"):  # an FSDP run: every rank reads its shards
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        model_sd, optim_sd = get_state_dict(model, optimizer)
        state = {"model": model_sd, "optimizer": optim_sd}
        dcp.load(state, checkpoint_id=str(path.parent / DCP_DIR / payload["shards"]))
        set_state_dict(
            model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"]
        )
    else:
        try:
            model.load_state_dict(payload["model"], strict=not payload.get("lora", False))
            if optimizer is not None and payload["optimizer"] is not None:
                optimizer.load_state_dict(payload["optimizer"])
        except (RuntimeError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise RunStateError(f"{path}: {_misfit(e)}") from None
    random.setstate(payload["rng"]["python"])
    np.random.set_state(_numpy_state_in(payload["rng"]["numpy"]))
    torch.set_rng_state(payload["rng"]["torch"])
    return payload


# --- the end of a run: success on each eval split, and the gain from the first eval -------------
def eval_summary(run_dir: Path, splits: tuple[str, ...]) -> list[str]:
    """One line per evaluated split (``RUN_DIR/evals``), after every run, one eval or many: the
    last eval's success with its 95% Wilson interval (``stats.wilson_interval``, as ``seed-gym
    eval``); with two evals or more also the first one's and the paired gain from first to last,
    with a bootstrap interval over eval tasks (``stats.paired_difference``)."""
    lines = []
    for split in splits:
        files = sorted((run_dir / "evals").glob(f"iter_*-{split}.jsonl"))
        if not files:
            continue
        last = _rows(files[-1])
        now = _success(files[-1], last)
        if len(files) == 1:
            lines.append(f"{split:>6} success: {now} (95% Wilson interval, {len(last)} episodes)")
            continue
        first = _rows(files[0])
        a_tasks, b_tasks = _task_success(first), _task_success(last)
        tasks = sorted(set(a_tasks) & set(b_tasks))
        gain = paired_difference([a_tasks[t] for t in tasks], [b_tasks[t] for t in tasks])
        lines.append(
            f"{split:>6} success: {_success(files[0], first)} -> {now}; gain "
            f"{gain['diff']:+.3f} [{gain['ci95'][0]:+.3f}, {gain['ci95'][1]:+.3f}] (95% intervals: "
            f"Wilson over {len(last)} episodes, paired bootstrap over {len(tasks)} tasks)"
        )
    return lines


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _success(path: Path, rows: list[dict[str, Any]]) -> str:
    """``iteration K 0.500 [0.150, 0.850]``: an eval file's success and Wilson interval."""
    wins = sum(bool(r["won"]) for r in rows)
    lo, hi = wilson_interval(wins, len(rows))
    rate = wins / len(rows) if rows else 0.0
    return f"iteration {int(path.name[5:9])} {rate:.3f} [{lo:.3f}, {hi:.3f}]"


def _task_success(rows: list[dict[str, Any]]) -> dict[str, float]:
    won: dict[str, list[float]] = {}
    for row in rows:
        won.setdefault(row["task_id"], []).append(float(row["won"]))
    return {t: float(np.mean(v)) for t, v in won.items()}


# --- per-iteration logs: skills and trajectories (what the report shows) -----------------------
def write_iteration_logs(
    run_dir: Path,
    iteration: int,
    trajs: Sequence[Any],
    *,
    tokenizer: Any,
    skills: Sequence[Any] | None,
    teacher: Sequence[list[list[float] | None]] | None,
    gaps: Sequence[float | None] | None,
    trajectories: bool,
    failures: dict[str, dict] | None = None,
    control: dict[int, tuple[Any, Any]] | None = None,
) -> None:
    """``skills/iter_*.jsonl`` (when there are skills) and ``trajectories/iter_*.jsonl``. For
    skill-grpo the trajectory's skill is the one its actor saw; ``control``: SEED's shuffled-skill
    control (``trajlog.write_trajectories``)."""
    if skills is not None:
        SkillLog(run_dir).write(
            iteration,
            skill_records(trajs, skills, iteration=iteration, gaps=gaps, failures=failures),
        )
    if trajectories:
        shown: Sequence[Any] | None = skills if teacher is not None else None
        if teacher is None and any(t.actor_skill for t in trajs):
            shown = [t.actor_skill for t in trajs]
        write_trajectories(
            iteration_path(run_dir, iteration),
            trajs,
            tokenizer=tokenizer,
            skills=shown,
            teacher_logprobs=teacher,
            control=control,
            iteration=iteration,
        )


def time_metrics(meter: PhaseMeter, eval_seconds: float | None) -> dict[str, float]:
    """``time/<phase>``, ``memory/<phase>_peak_mb`` and each phase's share of the iteration."""
    out = meter.metrics()
    times = {k: v for k, v in out.items() if k.startswith("time/")}
    total = sum(times.values()) + (eval_seconds or 0.0)
    shares = {**times, **({"time/eval": eval_seconds} if eval_seconds else {})}
    out.update({f"time_share/{k[5:]}": v / total for k, v in shares.items() if total > 0})
    return out


def instrument_summary(run_dir: Path) -> list[str]:
    """One line of SEED's instruments (docs/seed.md), means over the iterations that logged them:
    what the analyzer wrote and what the skill did to the teacher on fork tokens, against the
    shuffled control. Empty for algorithms without a teacher."""
    lines = _metric_lines(run_dir)

    def mean(key: str) -> str:
        values = [m[key] for m in lines if isinstance(m.get(key), (int, float))]
        return f"{sum(values) / len(values):+.3f}" if values else "-"

    if not any("opd/skill_gap" in m for m in lines):
        return []
    return [
        f"SEED instruments (means over iterations): analyzer parse rate "
        f"{mean('analyzer/parse_rate')}, lost -> avoidance {mean('analyzer/avoidance_share_lost')}, "
        f"won -> workflow {mean('analyzer/workflow_share_won')}; fork gap won "
        f"{mean('opd/skill_gap_fork_won')} (control {mean('opd/control_gap_fork_won')}), lost "
        f"{mean('opd/skill_gap_fork_lost')} (control {mean('opd/control_gap_fork_lost')}) nats; "
        f"|g teacher| / |g PG| {mean('opd/grad_ratio')}, cosine {mean('opd/grad_cosine')}"
    ]


def _metric_lines(run_dir: Path) -> list[dict[str, Any]]:
    """``metrics.jsonl``'s lines; an unreadable one is skipped."""
    path = run_dir / "metrics.jsonl"
    lines = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return lines


def phase_summary(run_dir: Path) -> list[str]:
    """The run's per-phase table (``phases.phase_table``) from ``metrics.jsonl``."""
    rows = phase_rows(_metric_lines(run_dir))
    return phase_table(rows) if rows else []
