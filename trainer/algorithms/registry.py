"""The algorithm registry: ``--algo NAME`` -> an ``Algorithm`` class, as env ids -> envs."""

from __future__ import annotations

from typing import Any

from seed_gym.trainer.algorithms.base import Algorithm

ALGORITHMS: dict[str, type[Algorithm]] = {}
"""``--algo`` name -> class (the built-in ones, and every ``register_algorithm`` since)."""


def register_algorithm(cls: type[Algorithm]) -> type[Algorithm]:
    """Make ``cls`` available as ``--algo cls.name`` (a class decorator). Registering a name
    again with another class raises: two plug-ins would silently shadow each other."""
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise TypeError(f"register_algorithm takes an Algorithm subclass, not {cls!r}")
    known = ALGORITHMS.get(cls.name)
    if known is not None and known.__qualname__ != cls.__qualname__:
        raise ValueError(f"algorithm {cls.name!r} is registered already ({known.__module__})")
    ALGORITHMS[cls.name] = cls
    return cls


def make_algorithm(cfg: Any) -> Algorithm:
    """The algorithm object of a config (``cfg.algo``)."""
    try:
        return ALGORITHMS[cfg.algo](cfg)
    except KeyError:
        raise ValueError(f"unknown algo {cfg.algo!r}; choose one of {sorted(ALGORITHMS)}") from None
