"""``AttachImages``: image observations become PIL images with ``<image>`` placeholders."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from seed_gym.images import IMAGE_PLACEHOLDER


def to_pil(image: Any):
    """A uint8 ``(H, W, 3)`` array (or a PIL image) as an RGB ``PIL.Image``."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image.convert("RGB")
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"expected a uint8 (H, W, 3) image, got {array.dtype} {array.shape}")
    return Image.fromarray(array, mode="RGB")


class AttachImages(gym.ObservationWrapper):
    """Move ``obs["image"]`` into ``obs["images"]`` (PIL) and mark it in the observation text.

    Observation:
        ``{"text": str, "images": [PIL.Image, ...]}``: text observations get ``images=[]``; an
        image observation's text is prefixed with one ``<image>`` placeholder per image, so a
        template that shows the observation shows the placeholder where the picture belongs.
        A literal ``<image>`` inside the game's own text is removed first so the count of
        placeholders always equals the number of images.
    """

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        text = observation["text"]
        images = []
        if "image" in observation:
            images = [to_pil(observation["image"])]
            text = text.replace(IMAGE_PLACEHOLDER, "")
            text = IMAGE_PLACEHOLDER + ("\n" + text if text else "")
        return {"text": text, "images": images}
