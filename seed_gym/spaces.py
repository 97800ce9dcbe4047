"""Observation and action spaces for text (and image) agents.

gymnasium's ``Text`` space rejects punctuation and is built for short fixed charsets, so actions
like ``click[Buy Now]`` or ``heat potato 1 with microwave 1`` need a free-text space.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces

_SAMPLE_ALPHABET = string.ascii_letters + string.digits + string.punctuation + " "


class FreeText(spaces.Space[str]):
    """Any Python ``str`` up to ``max_length`` characters (unicode, punctuation, newlines)."""

    def __init__(self, max_length: int = 100_000, seed: int | np.random.Generator | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_length = max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        length = int(self.np_random.integers(0, 33))
        chars = self.np_random.choice(list(_SAMPLE_ALPHABET), size=length)
        return "".join(chars.tolist())

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"FreeText(max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, FreeText) and other.max_length == self.max_length


MODALITIES = ("text", "image", "text+image")


def image_space(height: int, width: int) -> spaces.Box:
    return spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)


def observation_space(modality: str, image_shape: tuple[int, int] | None = None) -> spaces.Dict:
    """The observation space for a modality: always ``text``; ``image`` when asked for.

    Image observations still carry a ``text`` entry (for ``image`` it is the short textual part of
    the observation, e.g. EZPoints' ``Formula: ...``) so every agent has a text anchor.
    """
    if modality not in MODALITIES:
        raise ValueError(f"unknown modality {modality!r}; choose one of {MODALITIES}")
    parts: dict[str, spaces.Space] = {"text": FreeText()}
    if modality != "text":
        if image_shape is None:
            raise ValueError(f"modality {modality!r} needs an image shape")
        parts["image"] = image_space(*image_shape)
    return spaces.Dict(parts)
