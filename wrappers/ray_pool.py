"""``RayEnvPool``: the group-rollout ``EnvPool`` interface backed by Ray actors.

Each actor (an *env worker*) hosts several envs built from picklable factories, so one Ray process
serves a slice of the B×G group instead of one process per env. Workers step their envs in
parallel; the pool returns results in the caller's order, exactly what the local backend returns
for the same seeds (envs are deterministic under a seed and results travel by pickle).

Failures never hang a rollout:

- an env that raises in ``reset``/``step`` fails only its own episode;
- a worker that dies (``ray.kill``, OOM, segfault) or does not answer within ``step_timeout`` /
  ``reset_timeout`` is killed and replaced by a fresh worker built from the same factories.
  Every env it hosted loses its episode.

A failed episode returns ``(last_obs, 0.0, True, True, info)`` with ``info["pool.error"]`` set to
the reason (``info`` is the env's last info with ``won=False``, ``action_is_valid=False``); its env
keeps answering that way until the next ``reset``. A ``reset`` that fails (an env raised, or its
worker died twice: it is retried once on a fresh worker) raises ``EnvPoolError`` naming the envs
and reasons, since there is no first observation to return; the pool stays usable.
``pool.restarts`` counts worker restarts.

Use it through ``EnvPool(..., backend="ray")`` / ``make_group_pool(..., backend="ray")`` or
directly. Connects to a running cluster (``ray.init(address=...)`` or ``RAY_ADDRESS``) if the
caller has not initialised Ray; otherwise starts a local one.
"""

from __future__ import annotations

import logging
import math
import os
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from seed_gym.wrappers.pool_errors import EnvPoolError

logger = logging.getLogger(__name__)

ERROR_KEY = "pool.error"

_OK, _ERR = "ok", "error"


def _import_ray():
    try:
        import ray
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "backend='ray' needs Ray: pip install 'seed-gym[ray]' (or pip install ray)"
        ) from e
    return ray


def _describe(exc: BaseException) -> str:
    # the last frame says where in the env it broke; the full traceback is logged by the worker
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


class _EnvWorker:
    """Runs inside a Ray actor: a few envs, stepped one after another."""

    def __init__(self, factories: list[Callable[[], Any]], setup: Callable[[], Any] | None):
        if setup is not None:
            setup()
        self.envs = [factory() for factory in factories]

    def reset(self, slots: list[int], seeds: list[int | None], options: list[dict | None]):
        out = []
        for slot, seed, opts in zip(slots, seeds, options, strict=True):
            try:
                out.append((_OK, self.envs[slot].reset(seed=seed, options=opts)))
            except Exception as e:  # an env bug fails its episode, not the worker
                logger.exception("env %d failed in reset", slot)
                out.append((_ERR, f"env raised in reset: {_describe(e)}"))
        return out

    def step(self, slots: list[int], actions: list[Any]):
        out = []
        for slot, action in zip(slots, actions, strict=True):
            try:
                out.append((_OK, self.envs[slot].step(action)))
            except Exception as e:
                logger.exception("env %d failed in step", slot)
                out.append((_ERR, f"env raised in step: {_describe(e)}"))
        return out

    def call(self, slots: list[int], names: list[str]):
        out = []
        for slot, name in zip(slots, names, strict=True):
            try:
                attr = getattr(self.envs[slot].unwrapped, name)
                out.append((_OK, attr() if callable(attr) else attr))
            except Exception as e:
                logger.exception("env %d failed in call(%r)", slot, name)
                out.append((_ERR, f"env raised in call({name!r}): {_describe(e)}"))
        return out

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        for env in self.envs:
            try:
                env.close()
            except Exception:
                logger.exception("env close failed")


class RayEnvPool:
    """``len(factories)`` envs spread over Ray actors, ``envs_per_worker`` each.

    Args:
        factories: zero-argument callables returning a ``gymnasium.Env``; pickled to the workers
            (module-level functions, ``functools.partial`` of them, or anything cloudpickle takes).
        num_workers: number of actors; default: one per CPU of the cluster, at most one per env.
            Ignored when ``envs_per_worker`` is given.
        envs_per_worker: envs hosted by one actor (consecutive indices share an actor).
        step_timeout: seconds a worker may take for one ``step`` call (all its envs) before it is
            declared hung, killed and restarted. ``None`` waits forever.
        reset_timeout: the same for ``reset``, which also covers building the envs of a new worker.
        num_cpus_per_worker: Ray CPUs reserved per actor; workers beyond the cluster's CPUs would
            wait for a slot, so the default worker count never exceeds them.
        address: Ray cluster to connect to when Ray is not initialised yet (``"auto"``, or
            ``"ray://host:10001"``); ``None`` uses ``RAY_ADDRESS`` or starts a local Ray.
        worker_setup: called in every worker before its envs are built, e.g. to import the module
            that registers a user env (workers are fresh processes: ``seed_gym`` registers only
            its own envs there).
    """

    def __init__(
        self,
        factories: Sequence[Callable[[], Any]],
        *,
        num_workers: int | None = None,
        envs_per_worker: int | None = None,
        step_timeout: float | None = 120.0,
        reset_timeout: float | None = 600.0,
        num_cpus_per_worker: float = 1.0,
        address: str | None = None,
        worker_setup: Callable[[], Any] | None = None,
    ):
        if not factories:
            raise ValueError("RayEnvPool needs at least one env factory")
        ray = _import_ray()
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, ignore_reinit_error=True)
        self._ray = ray
        self._factories = list(factories)
        self._setup = worker_setup
        n = len(self._factories)
        if envs_per_worker is None:
            if num_workers is None:
                cpus = ray.cluster_resources().get("CPU", 1.0)
                num_workers = max(1, int(cpus // max(num_cpus_per_worker, 1e-9)))
            num_workers = max(1, min(num_workers, n))
            envs_per_worker = math.ceil(n / num_workers)
        if envs_per_worker < 1:
            raise ValueError(f"envs_per_worker must be >= 1, got {envs_per_worker}")
        self.envs_per_worker = envs_per_worker
        self.step_timeout = step_timeout
        self.reset_timeout = reset_timeout
        self._actor_cls = ray.remote(num_cpus=num_cpus_per_worker)(_EnvWorker)
        # worker w hosts envs [w*k, (w+1)*k)
        self._slices = [
            list(range(start, min(start + envs_per_worker, n)))
            for start in range(0, n, envs_per_worker)
        ]
        self._workers = [self._spawn(w) for w in range(len(self._slices))]
        self._last: list[tuple[Any, dict]] = [(None, {}) for _ in range(n)]
        self._failed: list[str | None] = [None] * n
        self.restarts = 0
        self._closed = False

    # --- the EnvPool interface ----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._factories)

    def reset(
        self, seeds: Sequence[int | None], options: Sequence[dict | None] | None = None
    ) -> list[tuple[Any, dict]]:
        """Reset every env: env i with ``seeds[i]`` and ``options[i]``."""
        n = len(self)
        options = [None] * n if options is None else list(options)
        if len(seeds) != n or len(options) != n:
            raise ValueError(f"reset needs {n} seeds and options, got {len(seeds)}, {len(options)}")
        indices = list(range(n))
        args = {i: (seeds[i], options[i]) for i in indices}
        results = self._call("reset", indices, args, self.reset_timeout)
        retry = [i for i in indices if results[i][0] == _ERR and results[i][2]]
        if retry:  # the worker died: its envs get one more chance on the fresh worker
            results.update(self._call("reset", retry, args, self.reset_timeout))
        failed = []
        for i in indices:
            status, payload, _ = results[i]
            if status == _OK:
                self._failed[i] = None
                self._last[i] = payload
            else:
                self._failed[i] = payload
                self._last[i] = (None, {})
                failed.append(f"env {i}: {payload}")
        if failed:
            # without a first observation there is no episode to mark failed; the pool itself
            # stays usable (dead workers were replaced), so a later reset may succeed
            raise EnvPoolError(
                "reset failed (after one retry on a fresh worker where the worker "
                "died):\n" + "\n".join(failed)
            )
        return [results[i][1] for i in indices]

    def step(self, indices: Sequence[int], actions: Sequence[Any]) -> list[tuple]:
        """Step env ``indices[j]`` with ``actions[j]``; the other envs do not advance."""
        indices = list(indices)
        if len(indices) != len(actions):
            raise ValueError(f"{len(indices)} indices but {len(actions)} actions")
        if len(set(indices)) != len(indices):
            raise ValueError("each env may be stepped at most once per call")
        for i in indices:
            if not 0 <= i < len(self):
                raise IndexError(f"env index {i} out of range for a pool of {len(self)}")
        live = [i for i in indices if self._failed[i] is None]
        args = {i: (a,) for i, a in zip(indices, actions, strict=True)}
        results = self._call("step", live, args, self.step_timeout) if live else {}
        out = []
        for i in indices:
            if i in results and results[i][0] == _OK:
                obs, reward, terminated, truncated, info = results[i][1]
                self._last[i] = (obs, info)
                out.append((obs, reward, terminated, truncated, info))
                continue
            if i in results:
                self._failed[i] = results[i][1]
            out.append(self._failure(i))
        return out

    def call(self, index: int, name: str) -> Any:
        """Attribute ``name`` of env ``index``'s raw game, called if it is a method
        (``pool.call(i, "privileged_info")``). Raises ``EnvPoolError`` if the env raised or its
        episode failed (the answer would describe a fresh env, not the episode)."""
        if not 0 <= index < len(self):
            raise IndexError(f"env index {index} out of range for a pool of {len(self)}")
        if self._failed[index] is None:
            status, payload, _ = self._call("call", [index], {index: (name,)}, self.step_timeout)[
                index
            ]
            if status == _OK:
                return payload
            if self._failed[index] is None:  # the env raised; its worker and episode live on
                raise EnvPoolError(f"env {index}: {payload}")
        raise EnvPoolError(f"env {index}'s episode failed: {self._failed[index]}")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        try:
            ray.wait(
                [w.close.remote() for w in self._workers],
                num_returns=len(self._workers),
                timeout=10,
            )
        except Exception:
            logger.exception("closing env workers failed")
        for w in self._workers:
            ray.kill(w, no_restart=True)
        self._workers = []

    def __del__(self):
        try:
            if not self._closed and self._ray.is_initialized():
                self.close()
        except Exception:
            pass

    # --- introspection (for tests and monitoring) ---------------------------------------------
    @property
    def workers(self) -> list[Any]:
        """The actor handles, worker w hosting envs ``w*envs_per_worker ...``."""
        return list(self._workers)

    def worker_of(self, index: int) -> int:
        return index // self.envs_per_worker

    # --- internals ----------------------------------------------------------------------------
    def _spawn(self, w: int):
        factories = [self._factories[i] for i in self._slices[w]]
        return self._actor_cls.remote(factories, self._setup)

    def _restart(self, w: int, reason: str) -> None:
        logger.warning("restarting env worker %d: %s", w, reason)
        self._ray.kill(self._workers[w], no_restart=True)
        self._workers[w] = self._spawn(w)
        self.restarts += 1
        for i in self._slices[w]:  # their state died with the worker
            self._failed[i] = self._failed[i] or reason

    def _call(
        self, method: str, indices: list[int], args: dict[int, tuple], timeout: float | None
    ) -> dict[int, tuple[str, Any, bool]]:
        """Call ``method`` on every worker hosting one of ``indices`` at once; wait at most
        ``timeout`` seconds. Returns ``{index: (status, payload, worker_died)}``."""
        ray = self._ray
        by_worker: dict[int, list[int]] = {}
        for i in indices:
            by_worker.setdefault(self.worker_of(i), []).append(i)
        refs = {}
        for w, idx in by_worker.items():
            slots = [i - self._slices[w][0] for i in idx]
            columns = list(zip(*(args[i] for i in idx), strict=True))
            refs[w] = getattr(self._workers[w], method).remote(slots, *map(list, columns))
        # one wait for all workers: it returns when every call answered (a dead worker's call
        # answers with an error) or at the deadline, whichever comes first
        _, pending = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout)
        hung = set(pending)
        results: dict[int, tuple[str, Any, bool]] = {}
        for w, ref in refs.items():
            idx = by_worker[w]
            if ref in hung:
                reason = (
                    f"env worker {w} did not answer {method} within {timeout:g}s (hung); restarted"
                )
            else:
                try:
                    for i, (status, payload) in zip(idx, ray.get(ref), strict=True):
                        results[i] = (status, payload, False)
                    continue
                except ray.exceptions.RayActorError as e:
                    reason = f"env worker {w} died during {method}: {type(e).__name__}; restarted"
                except ray.exceptions.RayError as e:
                    reason = f"env worker {w} failed during {method}: {_describe(e)}; restarted"
            self._restart(w, reason)
            for i in idx:
                results[i] = (_ERR, reason, True)
        return results

    def _failure(self, i: int) -> tuple:
        obs, info = self._last[i]
        info = {**info, "won": False, "action_is_valid": False, ERROR_KEY: self._failed[i]}
        return obs, 0.0, True, True, info
