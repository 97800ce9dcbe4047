"""Pictures in prompts: the placeholder an agent env writes where an image belongs, and PNG data
URLs for sending pictures to chat servers and storing them in trajectory files."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np

IMAGE_PLACEHOLDER = "<image>"
"""Marks, in an observation's text, where each attached picture goes (one per picture, in order);
a vision-language processor expands it into image tokens."""


def png_data_url(image: Any) -> str:
    """A PIL image or (H, W, 3) uint8 array as a ``data:image/png;base64,...`` URL."""
    from PIL import Image

    if not isinstance(image, Image.Image):
        image = Image.fromarray(np.asarray(image, dtype=np.uint8))
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
