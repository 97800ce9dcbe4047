"""What an env pool raises (every backend: in-process, subprocess workers, Ray actors)."""

from __future__ import annotations


class EnvPoolError(RuntimeError):
    """An env inside the pool raised; the message carries the worker's traceback."""


class WorkerDiedError(EnvPoolError):
    """A subprocess worker exited (crash, OOM kill, signal); the pool cannot continue."""
