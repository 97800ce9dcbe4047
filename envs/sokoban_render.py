"""Sokoban pictures: tiles drawn with Pillow shapes once per tile size, then tiled with numpy.

Every room is drawn on a fixed ``IMAGE_SIZE`` square canvas (tile = canvas // longest side,
centred, wall-coloured margin), so the image space does not depend on the split.
Tiles follow the look the reference prompts describe: a yellow crate with an orange X, a target
tile outlined in red with a red diamond, a green figure with antennae and black eyes.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

IMAGE_SIZE = 192

# tile codes: gym-sokoban's room_state codes plus 6 = player on target
_WALL_RGB = (112, 62, 38)
_MORTAR_RGB = (150, 110, 80)
_FLOOR_RGB = (36, 36, 36)
_TARGET_RGB = (210, 40, 40)
_BOX_RGB = (230, 190, 40)
_BOX_DONE_RGB = (120, 200, 80)
_CROSS_RGB = (220, 110, 20)
_PLAYER_RGB = (70, 200, 70)


def _floor(draw: ImageDraw.ImageDraw, t: int) -> None:
    draw.rectangle([0, 0, t - 1, t - 1], fill=_FLOOR_RGB)


def _target(draw: ImageDraw.ImageDraw, t: int) -> None:
    w = max(1, t // 12)
    draw.rectangle([w, w, t - 1 - w, t - 1 - w], outline=_TARGET_RGB, width=w)
    m, q = t / 2, t / 6
    draw.polygon([(m, m - q), (m + q, m), (m, m + q), (m - q, m)], fill=_TARGET_RGB)


def _box(draw: ImageDraw.ImageDraw, t: int, fill: tuple[int, int, int]) -> None:
    p = max(1, t // 10)
    w = max(1, t // 10)
    draw.rectangle([p, p, t - 1 - p, t - 1 - p], fill=fill, outline=_CROSS_RGB, width=w)
    draw.line([(p, p), (t - 1 - p, t - 1 - p)], fill=_CROSS_RGB, width=w)
    draw.line([(p, t - 1 - p), (t - 1 - p, p)], fill=_CROSS_RGB, width=w)


def _player(draw: ImageDraw.ImageDraw, t: int) -> None:
    w = max(1, t // 16)
    draw.line([(t * 0.38, t * 0.32), (t * 0.28, t * 0.1)], fill=_PLAYER_RGB, width=w)
    draw.line([(t * 0.62, t * 0.32), (t * 0.72, t * 0.1)], fill=_PLAYER_RGB, width=w)
    draw.ellipse([t * 0.2, t * 0.25, t * 0.8, t * 0.9], fill=_PLAYER_RGB)
    e = t * 0.07
    for x in (t * 0.38, t * 0.62):
        draw.ellipse([x - e, t * 0.5 - e, x + e, t * 0.5 + e], fill=(0, 0, 0))


def _wall(draw: ImageDraw.ImageDraw, t: int) -> None:
    draw.rectangle([0, 0, t - 1, t - 1], fill=_WALL_RGB)
    w = max(1, t // 16)
    for y in (t // 3, 2 * t // 3):
        draw.line([(0, y), (t, y)], fill=_MORTAR_RGB, width=w)
    draw.line([(t // 2, 0), (t // 2, t // 3)], fill=_MORTAR_RGB, width=w)
    draw.line([(t // 4, t // 3), (t // 4, 2 * t // 3)], fill=_MORTAR_RGB, width=w)
    draw.line([(3 * t // 4, 2 * t // 3), (3 * t // 4, t)], fill=_MORTAR_RGB, width=w)


@lru_cache(maxsize=16)
def tiles(t: int) -> np.ndarray:
    """``(7, t, t, 3)`` uint8: wall, floor, target, box on target, box, player, player on target."""
    out = []
    for code in range(7):
        img = Image.new("RGB", (t, t), _FLOOR_RGB)
        draw = ImageDraw.Draw(img)
        if code == 0:
            _wall(draw, t)
        else:
            _floor(draw, t)
            if code in (2, 3, 6):
                _target(draw, t)
            if code == 3:
                _box(draw, t, _BOX_DONE_RGB)
            elif code == 4:
                _box(draw, t, _BOX_RGB)
            elif code in (5, 6):
                _player(draw, t)
        out.append(np.asarray(img, dtype=np.uint8))
    array = np.stack(out)
    array.setflags(write=False)
    return array


def render_grid(codes: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """``(size, size, 3)`` uint8 picture of an ``(H, W)`` grid of tile codes 0..6."""
    h, w = codes.shape
    t = size // max(h, w)
    sprites = tiles(t)
    body = sprites[codes]  # [H, W, t, t, 3]
    body = body.transpose(0, 2, 1, 3, 4).reshape(h * t, w * t, 3)
    canvas = np.empty((size, size, 3), dtype=np.uint8)
    canvas[:] = _WALL_RGB
    top, left = (size - h * t) // 2, (size - w * t) // 2
    canvas[top : top + h * t, left : left + w * t] = body
    return canvas
