"""Many agent envs stepped together: ``EnvPool`` (local or subprocess) and ``make_group_pool``.

``make_group_pool`` lays out B tasks × G copies (the G copies of task b are envs ``b*G ... b*G+G-1``)
for group rollouts: resetting the copies of one task with the same seed gives G identical starts,
and since every env is deterministic under its seed, identical completions give identical episodes.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from seed_gym.registration import agent_spec
from seed_gym.wrappers.agent import make_agent_env
from seed_gym.wrappers.pool_errors import EnvPoolError, WorkerDiedError
from seed_gym.wrappers.ray_pool import RayEnvPool

BACKENDS = ("local", "subprocess", "ray")

Obs = Any
ResetResult = tuple[Obs, dict]
StepResult = tuple[Obs, float, bool, bool, dict]


def _merge(default: dict | None, given: dict | None) -> dict | None:
    if default is None and given is None:
        return None
    return {**(default or {}), **(given or {})}


def _call(env: gym.Env, name: str) -> Any:
    attr = getattr(env.unwrapped, name)
    return attr() if callable(attr) else attr


# --- the worker process -------------------------------------------------------------------------
def _worker(conn, parent_conn, factories: list[Callable[[], gym.Env]]) -> None:
    """Host several envs; answer ``(command, payload)`` messages until ``close`` or EOF."""
    # Ctrl-C goes to the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_conn.close()
    envs: list[gym.Env] = []
    try:
        envs = [factory() for factory in factories]
        conn.send(("ok", None))
    except Exception:  # noqa: BLE001 - reported to the parent, which raises
        conn.send(("error", traceback.format_exc()))
    while True:
        try:
            command, payload = conn.recv()
        except (EOFError, KeyboardInterrupt):
            break
        if command == "close":
            for env in envs:
                env.close()
            conn.send(("ok", None))
            break
        try:
            if command == "reset":
                result = [envs[i].reset(seed=seed, options=opts) for i, seed, opts in payload]
            elif command == "step":
                result = [envs[i].step(action) for i, action in payload]
            elif command == "call":
                result = _call(envs[payload[0]], payload[1])
            else:
                raise ValueError(f"unknown command {command!r}")
            conn.send(("ok", result))
        except Exception:  # noqa: BLE001
            conn.send(("error", traceback.format_exc()))
    conn.close()


class _Worker:
    def __init__(self, ctx, rank: int, indices: list[int], factories: list[Callable[[], gym.Env]]):
        self.rank, self.indices = rank, indices
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_worker,
            args=(child, self.conn, factories),
            name=f"seed-gym-pool-{rank}",
            daemon=True,
        )
        self.process.start()
        # our copy of the child's end must go, or a dead child never shows up as EOF here
        child.close()

    def describe(self) -> str:
        return (
            f"EnvPool worker {self.rank} (pid {self.process.pid}, envs "
            f"{self.indices[0]}..{self.indices[-1]})"
        )


class EnvPool:
    """``len(factories)`` envs behind one batched ``reset`` / ``step``.

    backend="local" steps them one after another in this process; backend="subprocess" spreads
    them over ``n_workers`` processes (default: one per CPU, at most one per env), each hosting a
    contiguous slice of envs and talking over a pipe. The subprocess backend uses the ``fork``
    start method where available, so factories need not pickle and envs registered by user code
    exist in the workers; pass ``context="spawn"`` (picklable factories only) if this process
    holds threads that must not be forked. A worker that dies raises ``WorkerDiedError`` naming
    it, instead of hanging; an env that raises gives ``EnvPoolError`` with its traceback.

    backend="ray" hands the envs to ``seed_gym.wrappers.ray_pool.RayEnvPool`` (its own failure
    policy; ``ray_kwargs`` go to it).

    ``default_options[i]`` is merged under the options given to ``reset`` for env i
    (``make_group_pool`` uses it to pin each env's task).
    """

    def __init__(
        self,
        factories: Sequence[Callable[[], gym.Env]],
        backend: str = "local",
        *,
        n_workers: int | None = None,
        context: str | None = None,
        default_options: Sequence[dict | None] | None = None,
        timeout: float | None = None,
        **ray_kwargs: Any,
    ):
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {BACKENDS}")
        if not factories:
            raise ValueError("an EnvPool needs at least one env factory")
        self.backend = backend
        self.n = len(factories)
        self.default_options = list(default_options) if default_options else [None] * self.n
        if len(self.default_options) != self.n:
            raise ValueError("default_options must have one entry per env")
        self.timeout = timeout
        # set by make_group_pool: the task of each group, G, and the env's AgentSpec
        self.tasks: list[str] | None = None
        self.group_size = 1
        self.agent_spec: Any = None
        self.closed = False
        self._broken: str | None = None
        self.envs: list[gym.Env] = []
        self._workers: list[_Worker] = []
        self._where: list[tuple[int, int]] = []  # env index -> (worker, local index)
        self._ray: Any = None
        if ray_kwargs and backend != "ray":
            raise TypeError(f"unexpected arguments for the {backend} backend: {sorted(ray_kwargs)}")
        if backend == "ray":
            self._ray = RayEnvPool(factories, **ray_kwargs)
            return
        if backend == "local":
            self.envs = [factory() for factory in factories]
            return
        n_workers = max(1, min(n_workers or os.cpu_count() or 1, self.n))
        if context is None:
            context = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(context)
        bounds = [round(w * self.n / n_workers) for w in range(n_workers + 1)]
        for w in range(n_workers):
            indices = list(range(bounds[w], bounds[w + 1]))
            self._where += [(w, j) for j in range(len(indices))]
            self._workers.append(_Worker(ctx, w, indices, [factories[i] for i in indices]))
        try:
            for worker in self._workers:
                self._receive(worker, "startup")
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return self.n

    # --- pipes --------------------------------------------------------------------------------
    def _die(self, worker: _Worker, what: str) -> None:
        worker.process.join(timeout=2)  # reap it, so the exit code is known
        code = worker.process.exitcode
        if code is not None and code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
        else:
            how = f"exited with code {code}"
        self._broken = (
            f"{worker.describe()} {how} during {what}; the pool is unusable: "
            "close it and build a new one"
        )
        raise WorkerDiedError(self._broken)

    def _send(self, worker: _Worker, message: tuple) -> None:
        try:
            worker.conn.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            self._die(worker, message[0])

    def _receive(self, worker: _Worker, what: str) -> Any:
        start = time.monotonic()
        while True:
            try:
                if worker.conn.poll(0.05):
                    status, payload = worker.conn.recv()
                    break
            except (EOFError, ConnectionResetError, BrokenPipeError, OSError):
                self._die(worker, what)
            if not worker.process.is_alive() and not worker.conn.poll(0):
                self._die(worker, what)
            if self.timeout is not None and time.monotonic() - start > self.timeout:
                self._broken = f"{worker.describe()} did not answer {what} within {self.timeout} s"
                raise EnvPoolError(self._broken)
        if status == "error":
            raise EnvPoolError(f"{worker.describe()} raised during {what}:\n{payload}")
        return payload

    def _check(self) -> None:
        if self.closed:
            raise EnvPoolError("the pool is closed")
        if self._broken:
            raise WorkerDiedError(self._broken)

    def _scatter(self, command: str, items: list[tuple[int, tuple]]) -> list[Any]:
        """Send ``items`` (env index, args) to their workers at once, gather in order."""
        per_worker: dict[int, list[tuple[int, tuple]]] = {}
        for pos, (i, args) in enumerate(items):
            w, j = self._where[i]
            per_worker.setdefault(w, []).append((pos, (j, *args)))
        for w, batch in per_worker.items():
            self._send(self._workers[w], (command, [payload for _, payload in batch]))
        results: list[Any] = [None] * len(items)
        for w, batch in per_worker.items():
            answers = self._receive(self._workers[w], command)
            for (pos, _), answer in zip(batch, answers, strict=True):
                results[pos] = answer
        return results

    # --- the pool API -------------------------------------------------------------------------
    def reset(
        self, seeds: Sequence[int | None], options: Sequence[dict | None] | None = None
    ) -> list[ResetResult]:
        """Reset every env: env i with ``seeds[i]`` and ``options[i]`` (over its defaults)."""
        self._check()
        if len(seeds) != self.n:
            raise ValueError(f"reset needs {self.n} seeds, got {len(seeds)}")
        options = list(options) if options is not None else [None] * self.n
        if len(options) != self.n:
            raise ValueError(f"reset needs {self.n} options (or None), got {len(options)}")
        merged = [_merge(d, o) for d, o in zip(self.default_options, options, strict=True)]
        if self._ray is not None:
            return self._ray.reset(list(seeds), merged)
        if self.backend == "local":
            return [
                env.reset(seed=s, options=o)
                for env, s, o in zip(self.envs, seeds, merged, strict=True)
            ]
        return self._scatter("reset", [(i, (seeds[i], merged[i])) for i in range(self.n)])

    def step(self, indices: Sequence[int], actions: Sequence[str]) -> list[StepResult]:
        """Step only the envs in ``indices`` (each at most once) with the matching actions."""
        self._check()
        indices = [int(i) for i in indices]
        if len(indices) != len(actions):
            raise ValueError(f"{len(indices)} indices but {len(actions)} actions")
        if len(set(indices)) != len(indices):
            raise ValueError("step indices must be distinct")
        if any(not 0 <= i < self.n for i in indices):
            raise IndexError(f"env indices must lie in [0, {self.n})")
        if self._ray is not None:
            return self._ray.step(indices, list(actions))
        if self.backend == "local":
            return [self.envs[i].step(a) for i, a in zip(indices, actions, strict=True)]
        return self._scatter("step", [(i, (a,)) for i, a in zip(indices, actions, strict=True)])

    def call(self, index: int, name: str) -> Any:
        """Attribute ``name`` of env ``index``'s raw game, called if it is a method
        (``pool.call(i, "privileged_info")``); the result must pickle for subprocess pools."""
        self._check()
        if self._ray is not None:
            return self._ray.call(index, name)
        if self.backend == "local":
            return _call(self.envs[index], name)
        w, j = self._where[index]
        self._send(self._workers[w], ("call", (j, name)))
        return self._receive(self._workers[w], "call")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._ray is not None:
            self._ray.close()
        for env in self.envs:
            env.close()
        for worker in self._workers:
            if worker.process.is_alive():
                try:
                    worker.conn.send(("close", None))
                    if worker.conn.poll(5):
                        worker.conn.recv()
                except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
                    pass
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=5)
            worker.conn.close()

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()


def make_group_pool(
    env_id: str,
    tasks: Sequence[str],
    group_size: int,
    *,
    split: str = "train",
    modality: str | None = None,
    history: int | None = None,
    backend: str = "local",
    env_kwargs: dict[str, Any] | None = None,
    **pool_kwargs: Any,
) -> EnvPool:
    """B = ``len(tasks)`` tasks × G = ``group_size`` agent envs; env ``b*G + g`` is copy g of
    ``tasks[b]``, and resets pin that task unless ``options`` name another. ``env_kwargs`` go to
    the env constructor (``--env-kwarg``); ``pool_kwargs`` to ``EnvPool``."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    factory = functools.partial(
        make_agent_env, env_id, split=split, modality=modality, history=history,
        **(env_kwargs or {}),
    )  # fmt: skip
    defaults = [{"task_id": task} for task in tasks for _ in range(group_size)]
    pool = EnvPool([factory] * len(defaults), backend, default_options=defaults, **pool_kwargs)
    pool.tasks = list(tasks)
    pool.group_size = group_size
    pool.agent_spec = agent_spec(env_id)
    return pool
