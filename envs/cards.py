"""Playing cards drawn with Pillow shapes and its default font: no card art, no font files.

``card_image`` draws one card (corner indices, a large rank and suit in the middle);
``table_image`` lays two cards on green felt with a ``Formula: ...`` line, EZPoints' 300x300
observation. Both are deterministic for a given Pillow build and cached per card.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS = ("H", "D", "C", "S")
SUIT_NAMES = {"H": "Hearts", "D": "Diamonds", "C": "Clubs", "S": "Spades"}
RANK_NAMES = {"A": "Ace", "J": "Jack", "Q": "Queen", "K": "King"}
FELT_RGB = (53, 101, 77)
_RED = (200, 20, 30)
_BLACK = (20, 20, 20)


@dataclass(frozen=True, order=True)
class Card:
    rank: str  # "A", "2".."10", "J", "Q", "K"
    suit: str  # "H", "D", "C", "S"

    def __post_init__(self):
        if self.rank not in RANKS or self.suit not in SUITS:
            raise ValueError(f"no such card: rank {self.rank!r}, suit {self.suit!r}")

    @property
    def code(self) -> str:
        """``"10H"``, ``"KS"``: rank then suit letter."""
        return self.rank + self.suit

    @property
    def value(self) -> int:
        """A = 1, number cards their number, J / Q / K = 10."""
        if self.rank == "A":
            return 1
        return 10 if self.rank in ("J", "Q", "K") else int(self.rank)

    @property
    def name(self) -> str:
        return f"{RANK_NAMES.get(self.rank, self.rank)} of {SUIT_NAMES[self.suit]}"


@lru_cache(maxsize=32)
def font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    """Pillow's bundled default font at ``size`` px (Pillow >= 10.1 ships a scalable one); the
    fixed bitmap font on older or FreeType-less builds."""
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError, ImportError):
        return ImageFont.load_default()


def draw_suit(draw: ImageDraw.ImageDraw, suit: str, cx: float, cy: float, s: float) -> None:
    """A suit symbol of height ``s`` centred at ``(cx, cy)``, from circles and polygons."""
    color = _RED if suit in ("H", "D") else _BLACK
    r = s / 4
    if suit == "D":
        draw.polygon(
            [(cx, cy - s / 2), (cx + s * 0.36, cy), (cx, cy + s / 2), (cx - s * 0.36, cy)],
            fill=color,
        )
    elif suit == "H":
        for x in (cx - r, cx + r):
            draw.ellipse([x - r, cy - s / 2, x + r, cy - s / 2 + 2 * r], fill=color)
        draw.polygon(
            [(cx - 2 * r, cy - s / 4 + 1), (cx + 2 * r, cy - s / 4 + 1), (cx, cy + s / 2)],
            fill=color,
        )
    elif suit == "S":
        draw.polygon(
            [(cx, cy - s / 2), (cx - 2 * r, cy + s / 8), (cx + 2 * r, cy + s / 8)], fill=color
        )
        for x in (cx - r, cx + r):
            draw.ellipse([x - r, cy - r / 2, x + r, cy + 1.5 * r], fill=color)
        draw.polygon([(cx, cy), (cx - s / 6, cy + s / 2), (cx + s / 6, cy + s / 2)], fill=color)
    else:  # clubs
        c = s / 5.2
        for x, y in (
            (cx, cy - s / 2 + c),
            (cx - 1.1 * c, cy - s / 2 + 2.8 * c),
            (cx + 1.1 * c, cy - s / 2 + 2.8 * c),
        ):
            draw.ellipse([x - c, y - c, x + c, y + c], fill=color)
        draw.polygon(
            [(cx, cy - s / 8), (cx - s / 6, cy + s / 2), (cx + s / 6, cy + s / 2)], fill=color
        )


def _centered_text(
    draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int, fill
) -> None:
    f = font(size)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=f)
    draw.text((xy[0] - (left + right) / 2, xy[1] - (top + bottom) / 2), text, font=f, fill=fill)


@lru_cache(maxsize=256)
def card_image(card: Card, width: int = 135, height: int = 189) -> Image.Image:
    """One card: white rounded face, rank + suit in two corners, a large rank and suit in the
    middle (face cards get a frame). Do not mutate the cached image."""
    img = Image.new("RGB", (width, height), FELT_RGB)
    draw = ImageDraw.Draw(img)
    radius = width // 10
    draw.rounded_rectangle(
        [0, 0, width - 1, height - 1],
        radius=radius,
        fill=(250, 250, 245),
        outline=(90, 90, 90),
        width=2,
    )
    color = _RED if card.suit in ("H", "D") else _BLACK
    # corner index, drawn once and pasted rotated in the opposite corner
    cw, ch = width // 4, height // 4
    corner = Image.new("RGB", (cw, ch), (250, 250, 245))
    cd = ImageDraw.Draw(corner)
    _centered_text(cd, (cw / 2, ch * 0.28), card.rank, max(10, width // 7), color)
    draw_suit(cd, card.suit, cw / 2, ch * 0.72, ch * 0.34)
    img.paste(corner, (radius // 2 + 2, radius // 2 + 2))
    img.paste(corner.rotate(180), (width - cw - radius // 2 - 2, height - ch - radius // 2 - 2))
    if card.rank in ("J", "Q", "K"):
        m = width // 4
        draw.rectangle([m, height * 0.26, width - m, height * 0.74], outline=color, width=2)
    _centered_text(draw, (width / 2, height * 0.40), card.rank, max(12, width // 3), color)
    draw_suit(draw, card.suit, width / 2, height * 0.62, height * 0.16)
    return img


@lru_cache(maxsize=512)
def _table(cards: tuple[Card, ...], size: int) -> Image.Image:
    canvas = Image.new("RGB", (size, size), FELT_RGB)
    width = int(size / len(cards) * 0.9)
    height = int(width * 7 / 5)
    for i, card in enumerate(cards):
        x = 5 + int(i * width * 1.1)
        y = (size - height) // 2
        canvas.paste(card_image(card, width, height), (x, y))
    return canvas


def table_image(cards: tuple[Card, ...], formula_text: str, size: int = 300) -> np.ndarray:
    """``(size, size, 3)`` uint8: the cards side by side on felt, ``formula_text`` below them."""
    canvas = _table(tuple(cards), size).copy()
    draw = ImageDraw.Draw(canvas)
    draw.text(
        (10, int(size * 0.86)), formula_text, fill=(255, 255, 255), font=font(max(10, size // 15))
    )
    return np.asarray(canvas, dtype=np.uint8)
