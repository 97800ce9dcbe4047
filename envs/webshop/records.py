"""The two records every part of WebShop shares: a product (as the site shows it) and a goal."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(slots=True)
class Product:
    """One product after loading (WebShop's ``load_products`` shape, with Python names)."""

    asin: str
    title: str
    description: str
    bullet_points: list[str]
    price: float  # what a purchase costs (fixed per asin; WebShop re-drew it at every load)
    price_tag: str  # what pages show: "$12.99" or "$10.0 to $15.0"
    options: dict[str, list[str]]  # lowercase option name -> lowercase values, page order
    attributes: list[str]
    category: str
    query: str
    product_category: str  # "Root › Sub › Leaf"
    rating: str = "N.A."
    reviews: list[dict] = field(default_factory=list)  # {"title", "score", "body"}
    image: str | None = None
    instruction: str | None = None  # items_ins_v2 "instruction" (synthetic goals)
    instruction_attributes: list[str] = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class Goal:
    """What one episode asks for. ``options`` is a dict name -> value for synthetic goals and a
    list of values for human goals (WebShop's two forms of ``goal_options``)."""

    task_id: str
    asin: str  # the product the goal was written from
    instruction: str
    attributes: tuple[str, ...]
    options: dict[str, str] | tuple[str, ...]
    price_upper: float
    category: str
    query: str
    product_category: str
    name: str  # the target's title (the type reward compares nouns against it)
    split: str = "train"

    def option_values(self) -> list[str]:
        return list(self.options.values()) if isinstance(self.options, dict) else list(self.options)

    def to_dict(self) -> dict:
        return {
            "task_id": self.task_id,
            "asin": self.asin,
            "instruction": self.instruction,
            "attributes": list(self.attributes),
            "options": dict(self.options) if isinstance(self.options, dict) else list(self.options),
            "price_upper": self.price_upper,
            "category": self.category,
            "query": self.query,
            "product_category": self.product_category,
            "name": self.name,
            "split": self.split,
        }


def unit_hash(*parts: object) -> float:
    """A stable number in [0, 1) from ``parts`` (same on every machine and Python run)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def int_hash(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big")
