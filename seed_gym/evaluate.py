"""``seed-gym eval``: run a policy over a split manifest and write ``results.json`` + episodes.

Every task of the split is visited exactly once, in manifest order. ``--episodes N`` caps the run
at a *seeded subset* of N tasks (drawn without replacement by ``SplitManifest.iterate(N, seed)``,
kept in manifest order), so the same ``--seed`` always picks the same tasks. Episode i of task t
is reset with ``seed + position of t in the manifest``: a task gets the same episode seed in a
subset run and a full run, so two result files can be paired task by task.

``--k K`` plays every task K times from the same env seed (sample j of a task samples its policy
from its own seed), which gives avg@k and pass@k. Sample 0 uses the policy seed a ``k = 1`` run
uses, so it reproduces that run.

Policies that act in batches (``model:PATH``, ``openai:URL``) play ``--batch-size`` episodes at
once: each turn, every live episode's prompt goes to the model in one call, and a finished episode
frees its slot for the next task.

``DIR/episodes.jsonl`` holds one line per episode, written as it finishes (in manifest order once
the eval completes); ``DIR/results.json`` the summary: success rate with a 95% Wilson score
interval, mean return and steps, the invalid-action rate (invalid steps / all steps), success per
task type and its macro average, the mean of every numeric namespaced info key at episode end
(``webshop.score``, ``search.em``, ``search.f1``, ...), avg@k / pass@k, cluster-bootstrap 95%
intervals of all of them but the success (``seed_gym.stats``), the per-task table ``seed-gym compare`` pairs on,
and provenance: the eval config, package versions, the split manifest (with its hash) and the
model's hash.

Resume: rerunning the same command with the same ``--out`` skips every episode already in
``episodes.jsonl`` (a partially written last line, from a killed run, is discarded) and plays the
rest; a different config in the same folder is refused (``--overwrite`` starts over). One eval
writes a folder at a time: a second one refuses while the first holds ``OUT/.lock``
(``seed_gym.folder_lock``).

Failing safe: every argument is checked before a model loads or ``--out`` is touched (one line,
exit status 2; ``--k`` and ``--n-boot`` are bounded by the memory they would take). A policy
backend that fails for good (an ``openai:`` server after its retries) stops the eval with one
line and exit status 1, keeping every finished episode for the rerun; so does a folder in use.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import seed_gym
from seed_gym import stats
from seed_gym.folder_lock import FolderLockedError, folder_lock, out_problem
from seed_gym.jsonl import json_line, read_jsonl
from seed_gym.policies import Policy, PolicyError, accepts_images, as_policy, openai_url_problem
from seed_gym.provenance import machine_info, package_versions
from seed_gym.registration import env_class, split_manifest
from seed_gym.seeding import SEED_MAX
from seed_gym.trajlog import TRAJ_DIR, append_trajectory, step_record, trajectory_record
from seed_gym.usage import (
    OneLineParser,
    add_env_kwarg_argument,
    check_env_args,
    check_policy_spec,
    env_kwargs_or_exit,
    import_modules_or_exit,
    usage_error,
)

# one interval for one run's success everywhere (this summary, the CLI line, the report)
Z95, wilson_interval = stats.Z95, stats.wilson_interval


def add_import_argument(parser: argparse.ArgumentParser) -> None:
    """``--import MODULE`` (repeatable, into ``args.imports``) for ``import_env_modules``."""
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="module or .py file that registers extra envs (repeatable)",
    )


def _numeric_extras(info: dict[str, Any]) -> dict[str, float]:
    """Namespaced (``env.key``) numeric info values, bools as 0/1."""
    out = {}
    for key, value in info.items():
        if "." in key and isinstance(value, (bool, int, float, np.number)):
            value = float(value)
            if math.isfinite(value):
                out[key] = value
    return out


def _record(task_id, seed, info, total, steps, invalid, terminated, truncated, actions) -> dict:
    return {
        "task_id": task_id,
        "task_type": info.get("task_type", ""),
        "seed": seed,
        "won": bool(info.get("won", False)),
        "return": total,
        "steps": steps,
        "invalid_steps": invalid,
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "extras": _numeric_extras(info),
        "actions": actions,
    }


def summarize(
    episodes: list[dict[str, Any]], *, n_boot: int = stats.N_BOOT, ci_seed: int = 0
) -> dict[str, Any]:
    """The statistics of ``results.json`` from per-episode records (see ``seed_gym.stats``)."""
    n = len(episodes)
    wins = sum(e["won"] for e in episodes)
    steps = sum(e["steps"] for e in episodes)
    by_type: dict[str, list[bool]] = defaultdict(list)
    for e in episodes:
        by_type[e["task_type"]].append(e["won"])
    per_type = {
        t: {
            "episodes": len(w),
            "success_rate": sum(w) / len(w),
            "success_ci95": list(wilson_interval(sum(w), len(w))),
        }
        for t, w in sorted(by_type.items())
    }
    extras: dict[str, list[float]] = defaultdict(list)
    for e in episodes:
        for key, value in e["extras"].items():
            extras[key].append(value)
    # records without a task id (hand-made ones) count as tasks of their own
    keyed = [e if "task_id" in e else {**e, "task_id": f"#{i}"} for i, e in enumerate(episodes)]
    tasks = stats.per_task(keyed)
    boot = stats.summarize_tasks(tasks, n_boot=n_boot, seed=ci_seed)
    # one run's success has one interval, Wilson's (success_ci95 below); the percentile one
    # would be zero wide at 0/n and n/n and disagree with the CLI line and the report
    boot["ci95"].pop("success", None)
    k = boot["k_min"]
    return {
        "episodes": n,
        "tasks": len(tasks),
        "k": k,
        "success_rate": wins / n if n else 0.0,
        "success_ci95": list(wilson_interval(wins, n)),
        "ci_method": "wilson",
        "mean_return": float(np.mean([e["return"] for e in episodes])) if n else 0.0,
        "mean_steps": steps / n if n else 0.0,
        "invalid_action_rate": sum(e["invalid_steps"] for e in episodes) / steps if steps else 0.0,
        "per_task_type": per_type,
        "macro_success_rate": float(np.mean([v["success_rate"] for v in per_type.values()]))
        if per_type
        else 0.0,
        "extras": {k: float(np.mean(v)) for k, v in sorted(extras.items())},
        "extras_episodes": {k: len(v) for k, v in sorted(extras.items())},
        "avg_at_k": boot["metrics"]["success"] if tasks else 0.0,
        "pass_at_k": {
            name.split("@")[1]: value
            for name, value in boot["metrics"].items()
            if name.startswith("pass@")
        }
        or ({"1": boot["metrics"]["success"]} if tasks else {}),
        "bootstrap": boot,
        "per_task": stats.compact_per_task(tasks),
    }


# --- argument checks: all of them before a model loads or --out is touched ------------------------
N_BOOT_MAX = 1_000_000  # ~30 s of resampling (5 statistics, 20 tasks); the default 2000 is plenty
RETRIES_MAX = 10
# An episode held in memory (its record, actions, extras and queue entry): ~1.5 KB measured for
# GuessNumber at k = 400; 16 KiB leaves room for 50-step episodes with long actions.
EPISODE_BYTES = 16 * 1024
MEMORY_SHARE = 0.5  # of the available memory, for the episodes or the bootstrap draws
SAMPLING_OPTIONS = ("temperature", "top_p", "max_new_tokens", "batch_size")


def option_problem(
    *,
    episodes: int | None = None,
    k: int = 1,
    seed: int = 0,
    n_boot: int = stats.N_BOOT,
    temperature: float | None = None,
    top_p: float | None = None,
    max_new_tokens: int | None = None,
    batch_size: int | None = None,
    request_timeout: float | None = None,
    retries: int | None = None,
) -> str | None:
    """Why a number of the eval's arguments is out of range, in one line naming the flag, the
    value and the valid range; None when all are fine (None values are not given)."""
    checks = [
        ("--episodes", episodes, lambda v: v >= 1, ">= 1"),
        ("--k", k, lambda v: v >= 1, ">= 1"),
        ("--seed", seed, lambda v: 0 <= v <= SEED_MAX, "in [0, 2**63 - 1]"),
        ("--n-boot", n_boot, lambda v: 1 <= v <= N_BOOT_MAX, f"in [1, {N_BOOT_MAX}]"),
        ("--temperature", temperature, lambda v: 0 <= v < math.inf, ">= 0, finite (0 = greedy)"),
        ("--top-p", top_p, lambda v: 0 < v <= 1, "in (0, 1]"),
        ("--max-new-tokens", max_new_tokens, lambda v: v >= 1, ">= 1"),
        ("--batch-size", batch_size, lambda v: v >= 1, ">= 1"),
        ("--request-timeout", request_timeout, lambda v: 0 < v < math.inf, "> 0 seconds"),
        ("--retries", retries, lambda v: 0 <= v <= RETRIES_MAX, f"in [0, {RETRIES_MAX}]"),
    ]  # fmt: skip
    for flag, value, ok, valid in checks:
        # NaN fails every comparison, so it is refused like any other value out of range
        if value is not None and not ok(value):
            return f"{flag} must be {valid}, not {value}"
    return None


def available_memory() -> int | None:
    """Bytes this process can take: the kernel's MemAvailable, lowered by a cgroup v2 limit (a
    container's; the limit itself, as its usage counts page cache the kernel would reclaim);
    None where neither can be read."""
    found = []
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    with contextlib.suppress(OSError, ValueError, IndexError):
        group = Path("/proc/self/cgroup").read_text().splitlines()[0].split("::", 1)[1]
        folder = Path("/sys/fs/cgroup") / group.lstrip("/")
        limit = (folder / "memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit))
    return min(found) if found else None


def size_problem(*, k: int, n_boot: int, n_tasks: int, memory: int | None = None) -> str | None:
    """Why ``k`` samples of ``n_tasks`` tasks, or ``n_boot`` bootstrap draws over them, would not
    fit in half the available memory (``--k 10**7`` was killed at 24 GB; ``--n-boot 10**9`` asks
    for 477 GiB); None when they fit or the memory is unknown."""
    memory = available_memory() if memory is None else memory
    if memory is None or n_tasks < 1:
        return None
    budget = int(memory * MEMORY_SHARE)
    why = f"for {n_tasks} tasks in half of the {memory / 2**30:.1f} GiB available"
    k_max = max(1, budget // (EPISODE_BYTES * n_tasks))
    if k > k_max:
        return f"--k must be in [1, {k_max}] {why}, not {k}"
    # the bootstrap holds an int64 draw per task and a float per statistic for every draw
    boot_max = min(N_BOOT_MAX, max(1, budget // (8 * n_tasks + 40)))
    if n_boot > boot_max:
        return f"--n-boot must be in [1, {boot_max}] {why}, not {n_boot}"
    return None


def modality_problem(
    env_id: str, modality: str | None, policy_spec: str, policy: Any = None
) -> str | None:
    """Why ``policy_spec`` cannot play ``env_id`` in ``modality`` (the env's default when None):
    a text-only policy shown images. Checked from the spec alone before a model loads."""
    cls = env_class(env_id)
    shown = modality or getattr(cls, "default_modality", "text")
    if shown == "text" or accepts_images(policy_spec, policy):
        return None
    default = " (its default)" if modality is None else ""
    hint = (
        "pass --modality text"
        if "text" in getattr(cls, "modalities", ("text",))
        else "use a policy that reads images (openai:URL)"
    )
    return (
        f"{policy_spec} reads text only, and {env_id} shows images in modality "
        f"{shown!r}{default}; {hint}"
    )


def task_count(env_id: str, split: str, episodes: int | None, **env_kwargs: Any) -> int:
    """How many tasks the eval visits: the split's, capped at ``episodes``."""
    n = len(split_manifest(env_id, split, **env_kwargs))
    return min(n, episodes) if episodes is not None else n


# --- provenance ------------------------------------------------------------------------------------
# --- resumable episode log ---------------------------------------------------------------------
def _read_valid_jsonl(path: Path, valid: Any = None) -> list[dict[str, Any]]:
    """The complete JSON lines of ``path`` that ``valid`` accepts: a line cut short by a killed
    writer, or not UTF-8, is dropped (``read_jsonl`` warns, naming the lines)."""
    return read_jsonl(path, valid=valid) if path.exists() else []


def _episode_key(record: Any) -> tuple[str, int] | None:
    """``(task_id, sample)`` of an episode record; None for a line that parses as JSON but is
    not one (a stray ``[1, 2]`` or ``{}`` used to crash the rerun with a KeyError)."""
    if not isinstance(record, dict) or not isinstance(record.get("task_id"), str):
        return None
    sample = record.get("sample", 0)
    if isinstance(sample, bool) or not isinstance(sample, int):
        return None
    return record["task_id"], sample


# what summarize() and stats.per_task() read from a kept episode: a record-shaped line without
# one of these, or with another type, crashed every rerun; it is dropped and replayed instead
_EPISODE_FIELDS = {"task_type": str, "won": bool, "return": (int, float), "steps": int,
                   "invalid_steps": int, "extras": dict}  # fmt: skip


def _is_episode(record: Any) -> bool:
    """A record with each of those fields, of its type (a bool is no number here)."""

    def typed(value: Any, kind: Any) -> bool:
        return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))

    return (
        _episode_key(record) is not None
        and all(typed(record.get(f), kind) for f, kind in _EPISODE_FIELDS.items())
        and all(typed(v, (int, float)) for v in record["extras"].values())
    )


def _rewrite_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json_line(r))
    tmp.replace(path)


def sample_seed(seed: int, position: int, sample: int) -> int:
    """The policy seed of sample ``sample`` of the task at manifest ``position``: sample 0 keeps
    the k = 1 seed (``seed + position``), the others draw independent ones."""
    if sample == 0:
        return seed + position
    return int(np.random.SeedSequence([seed, position, sample]).generate_state(1)[0] >> 1)


class _Slot:
    """One episode in flight: its env, unit and running totals."""

    def __init__(self, env):
        self.env = env
        self.unit: tuple[int, str, int] | None = None  # (index, task id, sample)
        self.seed = 0
        self.obs: Any = None
        self.info: dict[str, Any] = {}
        self.total, self.steps, self.invalid = 0.0, 0, 0
        self.actions: list[Any] = []
        self.trace: list[dict[str, Any]] = []


def _resume(
    out_dir: Path, config: dict[str, Any], units: list[tuple[int, str, int]], overwrite: bool
) -> dict[tuple[str, int], dict[str, Any]]:
    """Prepare ``out_dir`` for this eval and return the episodes it already holds, by (task id,
    sample). A folder holding another config's eval (or episodes without a config) is refused
    with a one-line ``SystemExit``; ``overwrite`` clears it first. A partial last line, and any
    episode this config does not ask for, is dropped from the files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ep_path, traj_path = out_dir / "episodes.jsonl", out_dir / TRAJ_DIR / "eval.jsonl"
    cfg_path = out_dir / "eval_config.json"
    if overwrite:
        for p in (ep_path, traj_path, out_dir / "results.json", cfg_path):
            p.unlink(missing_ok=True)
    refuse = "use another --out or pass --overwrite"
    if cfg_path.exists():
        try:
            previous = json.loads(cfg_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            previous = None  # a corrupt config cannot vouch for the episodes beside it
        if previous is None or not isinstance(previous, dict):
            raise SystemExit(f"seed-gym eval: {cfg_path} is corrupt; {refuse}")
        if previous != config:
            diff = sorted(
                x for x in set(previous) | set(config) if previous.get(x) != config.get(x)
            )
            raise SystemExit(
                f"seed-gym eval: {out_dir} holds an eval with a different config "
                f"({', '.join(diff)} differ); {refuse}"
            )
    elif ep_path.exists() and ep_path.stat().st_size:
        raise SystemExit(
            f"seed-gym eval: {ep_path} exists but was not written by this eval "
            f"(no eval_config.json); {refuse}"
        )
    cfg_path.write_text(json.dumps(config, indent=2) + "\n")
    wanted = {(t, j) for _, t, j in units}
    done = {}
    for r in _read_valid_jsonl(ep_path, _is_episode):
        key = _episode_key(r)
        if key in wanted:
            done[key] = r
    _rewrite_jsonl(ep_path, list(done.values()))
    if traj_path.exists():
        _rewrite_jsonl(
            traj_path, [r for r in _read_valid_jsonl(traj_path) if _episode_key(r) in done]
        )
    return done


class _Episodes:
    """Plays the units not yet done, ``len(slots)`` at a time (a batched policy acts for every
    live episode in one call); each finished episode is appended to ``episodes.jsonl`` (and its
    trajectory to ``trajectories/eval.jsonl``) at once, so a killed eval resumes."""

    def __init__(
        self,
        policy: Any,
        policy_spec: str,
        split: str,
        seed: int,
        position: dict[str, int],
        out_dir: Path | None,
        save_trajectories: bool,
    ):
        self.policy, self.policy_spec, self.split = policy, policy_spec, split
        self.seed, self.position = seed, position
        self.ep_path = out_dir / "episodes.jsonl" if out_dir is not None else None
        self.traj_path = out_dir / TRAJ_DIR / "eval.jsonl" if out_dir is not None else None
        self.save_trajectories = save_trajectories
        self.queue: list[tuple[int, str, int]] = []
        self.records: list[dict[str, Any]] = []
        self.batched = hasattr(policy, "act_batch")  # one call for every live episode
        self.log: Any = None  # the open episodes.jsonl while run() plays
        self.bar: Any = None

    def run(self, slots: list[_Slot], todo: list, done: list[dict], bar) -> list[dict[str, Any]]:
        self.queue, self.records, self.bar = list(reversed(todo)), list(done), bar
        self.log = open(self.ep_path, "a", encoding="utf-8") if self.ep_path else None  # noqa: SIM115
        try:
            for slot in slots:
                self.start(slot)
            while live := [s for s in slots if s.unit is not None]:
                if self.batched:
                    actions = self.policy.act_batch(
                        [s.env for s in live], [s.obs for s in live], [s.info for s in live]
                    )
                else:
                    actions = [self.policy.act(s.env, s.obs, s.info) for s in live]
                for slot, action in zip(live, actions, strict=True):
                    self.step(slot, action)
        finally:
            if self.log is not None:
                self.log.close()
        return self.records

    def start(self, slot: _Slot) -> None:
        if not self.queue:
            slot.unit = None
            return
        slot.unit = self.queue.pop()
        _, task_id, j = slot.unit
        slot.seed = self.seed + self.position[task_id]
        slot.obs, slot.info = slot.env.reset(seed=slot.seed, options={"task_id": task_id})
        self.policy.reset(slot.env, seed=sample_seed(self.seed, self.position[task_id], j))
        slot.total, slot.steps, slot.invalid = 0.0, 0, 0
        slot.actions, slot.trace = [], []

    def observation(self, slot: _Slot) -> tuple[str, list[Any]]:
        if self.policy.acts_on == "agent":
            return str(slot.info.get("anchor", "")), list(slot.obs.get("images") or [])
        image = slot.obs.get("image") if isinstance(slot.obs, dict) else None
        text = slot.obs.get("text", "") if isinstance(slot.obs, dict) else str(slot.obs)
        return str(text), [] if image is None else [image]

    def step(self, slot: _Slot, action: Any) -> None:
        if self.save_trajectories:
            text, images = self.observation(slot)
            details = getattr(self.policy, "details", lambda env: None)(slot.env) or {}
        obs, reward, terminated, truncated, info = slot.env.step(action)
        slot.total += float(reward)
        slot.steps += 1
        slot.invalid += not info.get("action_is_valid", True)
        parsed = info.get("parsed_action", action) if self.policy.acts_on == "agent" else action
        slot.actions.append(parsed)
        if self.save_trajectories:
            slot.trace.append(
                step_record(
                    observation=text, images=images, response=str(action), action=parsed,
                    valid=bool(info.get("action_is_valid", True)), reward=float(reward),
                    tokens=details.get("tokens"), logprobs=details.get("logprobs"),
                )
            )  # fmt: skip
        slot.obs, slot.info = obs, info
        if terminated or truncated:
            self.finish(slot, terminated, truncated)
            self.start(slot)

    def finish(self, slot: _Slot, terminated: bool, truncated: bool) -> None:
        index, task_id, j = slot.unit
        record = _record(task_id, slot.seed, slot.info, slot.total, slot.steps, slot.invalid,
                         terminated, truncated, slot.actions)  # fmt: skip
        record["sample"] = j
        record["index"] = index
        if self.traj_path is not None and self.save_trajectories:
            # the trajectory goes first: an episode line always has its trajectory
            score = next((v for key, v in record["extras"].items() if key.endswith("score")), None)
            append_trajectory(
                self.traj_path,
                trajectory_record(
                    traj_id=f"eval-{index}", group_id=task_id, task_id=task_id,
                    task_type=record["task_type"], task=str(slot.info.get("task", "")),
                    seed=slot.seed, won=record["won"], score=score,
                    truncated=truncated and not terminated, steps=slot.trace, source="eval",
                    split=self.split, sample=j, policy=self.policy_spec,
                ),
            )  # fmt: skip
        if self.log is not None:
            self.log.write(json_line(record))
            self.log.flush()
        self.records.append(record)
        self.bar.update(1)
        wins = sum(r["won"] for r in self.records)
        self.bar.set_postfix(success=f"{wins / len(self.records):.3f}", refresh=False)


def evaluate(
    env_id: str,
    split: str,
    policy: str | Policy | Callable[[dict[str, Any]], str],
    *,
    episodes: int | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    modality: str | None = None,
    max_steps: int | None = None,
    progress: bool = True,
    k: int = 1,
    policy_options: dict[str, Any] | None = None,
    batch_size: int | None = None,
    save_trajectories: bool = False,
    overwrite: bool = False,
    n_boot: int = stats.N_BOOT,
    env_kwargs: dict[str, Any] | None = None,
    request_timeout: float | None = None,
    retries: int | None = None,
) -> dict[str, Any]:
    """Run ``policy`` on the split's tasks (``k`` episodes each); write ``out/results.json``
    and ``out/episodes.jsonl`` when ``out`` is given, resuming an interrupted run in ``out``.

    ``policy`` is a spec string (``"oracle"``, ``"model:PATH"``, ... as for ``seed-gym eval``),
    a ``Policy`` object (used as is and left open: the caller closes it) or a plain function
    ``observation -> completion``: it gets the agent env's observation ``{"messages": [chat
    dicts], "images": [frames]}`` (``seed_gym.policies.CallablePolicy``) and returns the text a
    model would write, which the agent env parses. ``results["policy"]`` names it
    (``callable:module.function`` for a function).
    ``env_kwargs`` go to the env constructor (``data_dir=...``); ``request_timeout`` (seconds)
    and ``retries`` to ``openai:`` policies. Returns the results dict.

    Raises ``ValueError`` for an argument out of range (before anything is loaded or written),
    ``FolderLockedError`` when another eval writes ``out``, and ``PolicyError`` when the policy's
    backend fails for good (the episodes finished by then are in ``out/episodes.jsonl``);
    ``TypeError`` for a ``policy`` of another type, naming what is accepted."""
    from tqdm.auto import tqdm

    options = {k_: v for k_, v in (policy_options or {}).items() if v is not None}
    if batch_size is not None:
        options["batch_size"] = batch_size
    problem = option_problem(
        episodes=episodes, k=k, seed=seed, n_boot=n_boot, request_timeout=request_timeout,
        retries=retries, **{o: options.get(o) for o in SAMPLING_OPTIONS},
    )  # fmt: skip
    if problem:
        raise ValueError(problem)
    # how long to wait for a server changes no completion: kept out of the config, so a rerun
    # with another timeout resumes the same eval
    transport = {"timeout": request_timeout, "retries": retries}
    transport = {k_: v for k_, v in transport.items() if v is not None}
    env_kwargs = dict(env_kwargs or {})
    kwargs: dict[str, Any] = {**env_kwargs, "split": split, "modality": modality}
    if max_steps is not None:
        kwargs["max_episode_steps"] = max_steps
    # the env first: an unknown env id fails before a model loads
    seed_gym.registration.agent_spec(env_id)
    policy, policy_spec, caller_owns = as_policy(policy, {**options, **transport})
    make = seed_gym.make_agent_env if policy.acts_on == "agent" else seed_gym.make
    envs = [make(env_id, **kwargs)]
    lock = contextlib.ExitStack()  # holds --out's folder lock from the resume to results.json
    try:
        problem = modality_problem(env_id, modality, policy_spec, policy)
        if problem:
            raise ValueError(problem)
        manifest = envs[0].unwrapped.manifest(split)
        position = {t: i for i, t in enumerate(manifest.task_ids)}
        tasks = list(manifest.iterate(limit=episodes, seed=seed))
        problem = size_problem(k=k, n_boot=n_boot, n_tasks=len(tasks))
        if problem:
            raise ValueError(problem)
        units = [(i * k + j, t, j) for i, t in enumerate(tasks) for j in range(k)]
        config = {
            "env_id": env_id,
            "split": split,
            "policy": policy_spec,
            "policy_options": options,
            "episodes": episodes,
            "seed": seed,
            "k": k,
            "modality": modality,
            "max_steps": max_steps,
            "manifest_sha256": manifest.hash,
        }
        if env_kwargs:  # only when given, so evals written before the option still resume
            config["env_kwargs"] = env_kwargs
        out_dir = Path(out) if out is not None else None
        if out_dir is not None:
            lock.enter_context(folder_lock(out_dir, holder="seed-gym eval"))
        done = _resume(out_dir, config, units, overwrite) if out_dir is not None else {}
        todo = [u for u in units if (u[1], u[2]) not in done]
        describe = getattr(policy, "describe", None)
        policy_info = describe() if describe is not None else {"model": None}
        batch = int(getattr(policy, "batch_size", 1) or 1) if hasattr(policy, "act_batch") else 1
        while len(envs) < max(1, min(batch, len(todo))):
            envs.append(make(env_id, **kwargs))
        bar = tqdm(total=len(units), initial=len(done), desc=f"{env_id} {split} {policy_spec}",
                   unit="ep", disable=not progress)  # fmt: skip
        try:
            player = _Episodes(
                policy, policy_spec, split, seed, position, out_dir, save_trajectories
            )
            records = player.run([_Slot(e) for e in envs], todo, list(done.values()), bar)
        except PolicyError as e:
            raise PolicyError(f"{e}; {_saved(player.records, len(units), out_dir)}") from None
        finally:
            bar.close()
        records.sort(key=lambda r: r["index"])
        if out_dir is not None:
            _rewrite_jsonl(
                out_dir / "episodes.jsonl", records
            )  # manifest order, however they ended
        results = {
            "env_id": env_id,
            "split": split,
            "manifest_sha256": manifest.hash,
            "manifest_tasks": len(manifest),
            "manifest": manifest.to_dict(),
            "subset": None if len(tasks) == len(manifest) else {"n": len(tasks), "seed": seed},
            "policy": policy_spec,
            "policy_info": policy_info,
            "seed": seed,
            "modality": envs[0].unwrapped.modality,
            "max_steps": max_steps,
            "seed_gym_version": seed_gym.__version__,
            "versions": package_versions(),
            "machine": machine_info(),
            "config": config,
            "resumed_episodes": len(done),
            **summarize(records, n_boot=n_boot, ci_seed=seed),
        }
        if out_dir is not None:
            (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    finally:
        for env in envs:
            env.close()
        if not caller_owns:
            policy.close()
        lock.close()
    return results


def _saved(records: list[dict[str, Any]], total: int, out_dir: Path | None) -> str:
    """What a stopped eval kept, for its one-line error."""
    if out_dir is None:
        return f"{len(records)} of {total} episodes finished (no --out: none saved)"
    return (
        f"{len(records)} of {total} episodes saved in {out_dir / 'episodes.jsonl'}; "
        "rerun the same command to play the rest"
    )


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="seed-gym eval", description="Evaluate a policy on every task of a split."
    )
    p.add_argument("--env", required=True, help="env id, e.g. seed_gym/Sokoban-v0")
    add_env_kwarg_argument(p)
    p.add_argument("--split", default="seen", help="train | seen | unseen (default: seen)")
    p.add_argument(
        "--policy",
        default="random",
        help="random | oracle | model:PATH|smollm2|tiny | openai:URL | KIND:ARG (default: random)",
    )
    p.add_argument("--episodes", type=int, default=None, help="cap: a seeded subset of N tasks")
    p.add_argument("--k", type=int, default=1, help="samples (episodes) per task (default 1)")
    p.add_argument("--seed", type=int, default=0, help="subset draw and episode seeds (default 0)")
    p.add_argument("--out", default=None, help="folder for results.json and episodes.jsonl")
    p.add_argument("--modality", default=None, help="text | image | text+image (env default)")
    p.add_argument("--max-steps", type=int, default=None, help="override the step limit")
    m = p.add_argument_group("model policies (model:, openai:)")
    m.add_argument("--temperature", type=float, default=None, help="0 = greedy (the default)")
    m.add_argument("--top-p", type=float, default=None, help="nucleus sampling (default 1)")
    m.add_argument("--max-new-tokens", type=int, default=None, help="per turn (default 256)")
    m.add_argument("--batch-size", type=int, default=None, help="episodes played at once")
    m.add_argument("--bf16", action="store_true", default=None, help="bf16 autocast (model:)")
    m.add_argument("--model-name", default=None, help="served model (openai:; default: first)")
    m.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="openai: a request with no answer for this long is retried (default 60)",
    )
    m.add_argument(
        "--retries",
        type=int,
        default=None,
        help="openai: tries after a failed request, with backoff 1, 2, 4.. s (default 2)",
    )
    p.add_argument(
        "--save-trajectories",
        action="store_true",
        help="also write OUT/trajectories/eval.jsonl for the report's trajectory viewer",
    )
    p.add_argument("--overwrite", action="store_true", help="discard a previous eval in --out")
    p.add_argument("--n-boot", type=int, default=stats.N_BOOT, help="bootstrap draws")
    add_import_argument(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def checked_env_kwargs(prog: str, args: argparse.Namespace) -> dict[str, Any]:
    """Check every argument, cheapest first, before a model loads or ``--out`` is touched: one
    line on stderr naming the flag, the value and the valid range, exit status 2. Returns the
    parsed ``--env-kwarg`` values."""
    problem = option_problem(
        episodes=args.episodes, k=args.k, seed=args.seed, n_boot=args.n_boot,
        temperature=args.temperature, top_p=args.top_p, max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size, request_timeout=args.request_timeout, retries=args.retries,
    )  # fmt: skip
    if problem is None and args.save_trajectories and not args.out:
        problem = "--save-trajectories needs --out"
    if problem is None and args.out:
        problem = out_problem(args.out, holds="results.json, episodes.jsonl")
    if problem:
        usage_error(prog, problem)
    import_modules_or_exit(prog, args.imports)
    env_kwargs = env_kwargs_or_exit(prog, args.env_kwargs)
    check_env_args(
        prog,
        args.env,
        split=args.split,
        modality=args.modality,
        max_steps=args.max_steps,
        env_kwargs=env_kwargs,
    )
    check_policy_spec(prog, args.policy)
    kind, _, arg = args.policy.partition(":")
    problem = openai_url_problem(arg) if kind == "openai" else None
    problem = problem or modality_problem(args.env, args.modality, args.policy)
    if problem is None:
        n_tasks = task_count(
            args.env, args.split, args.episodes, modality=args.modality, **env_kwargs
        )
        problem = size_problem(k=args.k, n_boot=args.n_boot, n_tasks=n_tasks)
    if problem:
        usage_error(prog, problem)
    return env_kwargs


def stopped(prog: str, error: object) -> int:
    """A run that started and could not finish: one line on stderr, exit status 1."""
    print(f"{prog}: {' '.join(str(error).split())}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    prog = "seed-gym eval"
    args = build_parser().parse_args(argv)
    env_kwargs = checked_env_kwargs(prog, args)
    try:
        results = evaluate(
            args.env,
            args.split,
            args.policy,
            episodes=args.episodes,
            seed=args.seed,
            out=args.out,
            modality=args.modality,
            max_steps=args.max_steps,
            progress=not args.no_progress,
            k=args.k,
            policy_options={
                "temperature": args.temperature,
                "top_p": args.top_p,
                "max_new_tokens": args.max_new_tokens,
                "bf16": args.bf16,
                "model_name": args.model_name,
            },
            batch_size=args.batch_size,
            save_trajectories=args.save_trajectories,
            overwrite=args.overwrite,
            n_boot=args.n_boot,
            env_kwargs=env_kwargs,
            request_timeout=args.request_timeout,
            retries=args.retries,
        )
    except FolderLockedError as e:
        return stopped(prog, e)
    except PolicyError as e:
        return stopped(prog, f"{args.policy} failed: {e}")
    lo, hi = results["success_ci95"]  # Wilson, the report's interval too
    print(
        f"{results['env_id']} {results['split']} policy={results['policy']} "
        f"episodes={results['episodes']} success={results['success_rate']:.3f} "
        f"[{lo:.3f}, {hi:.3f}] return={results['mean_return']:.3f} "
        f"steps={results['mean_steps']:.2f} invalid={results['invalid_action_rate']:.3f}"
    )
    if results["k"] > 1:
        passes = " ".join(f"pass@{j}={v:.3f}" for j, v in results["pass_at_k"].items())
        # avg@k is the success above (every task has k samples): one number, one interval
        print(f"k={results['k']} avg@k={results['avg_at_k']:.3f} {passes}")
    if results["resumed_episodes"]:
        print(f"resumed: {results['resumed_episodes']} episodes were already done")
    if args.out:
        print(f"wrote {Path(args.out) / 'results.json'} and episodes.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
