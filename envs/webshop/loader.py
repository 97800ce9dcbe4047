"""Read WebShop's original data files (and the generated ones, which use the same formats).

Files (names as in the WebShop release; any size variant such as ``items_shuffle_1000.json``):

- ``items_shuffle*.json``: a list of products with ``asin``, ``name``, ``full_description``,
  ``small_description`` (str or list), ``pricing`` ("$12.99" or "$10.00 - $15.00"),
  ``customization_options`` ({name: [{"value", "image"}]} or null), ``category``, ``query``,
  ``product_category``, ``images``; other keys are ignored.
- ``items_ins_v2*.json``: asin -> {"attributes", "instruction", "instruction_attributes"}.
- ``items_human_ins.json``: asin -> [{"instruction", "instruction_attributes",
  "instruction_options"}, ...] (the 12k human instructions).
- ``reviews.json`` (optional): [{"asin", "reviews": [{"title", "stars", "review"}],
  "average_rating"}].

Like WebShop, products with an asin of "nan" or longer than 10 characters and repeated asins are
skipped, option names and values are lowercased (with "/" shown as " | "), and a product without
annotated attributes gets ``["DUMMY_ATTR"]``. Unlike WebShop, a price range is bought at one fixed
price per asin instead of a fresh random draw at every load.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from seed_gym.data import read_json
from seed_gym.envs.webshop.records import Product, unit_hash


def parse_pricing(pricing: Any) -> tuple[list[float], str]:
    """``"$12.99"`` -> ([12.99], "$12.99"); ``"$10.00 - $15.00"`` -> ([10.0, 15.0], "$10.0 to $15.0");
    missing -> ([100.0], "$100.0") as in WebShop."""
    values: list[float] = []
    if isinstance(pricing, str) and pricing:
        for part in pricing.split("$")[1:]:
            digits = re.sub(r"[^\d.]", "", part)
            try:
                values.append(float(Decimal(digits)))
            except InvalidOperation:
                continue
    elif isinstance(pricing, (int, float)):
        values = [float(pricing)]
    if not values:
        return [100.0], "$100.0"
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def purchase_price(asin: str, pricing: list[float]) -> float:
    """One price per product: the price, or a fixed point of the range drawn from the asin."""
    if len(pricing) == 1:
        return pricing[0]
    lo, hi = sorted(pricing[:2])
    return round(lo + (hi - lo) * unit_hash("price", asin), 2)


def _options(raw: Any) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    if not isinstance(raw, dict):
        return options
    for name, contents in raw.items():
        if not contents:
            continue
        values = []
        for content in contents:
            value = content.get("value") if isinstance(content, dict) else content
            if value is None:
                continue
            value = str(value).strip().replace("/", " | ").lower()
            if value and value not in values:
                values.append(value)
        if values:
            options[str(name).lower()] = values
    return options


def load_products(
    items: str | Path | list[dict],
    attributes: str | Path | dict | None = None,
    reviews: str | Path | list[dict] | None = None,
    limit: int | None = None,
) -> list[Product]:
    """Products from an ``items_shuffle*.json`` (path or parsed list), with attributes and
    instructions from ``items_ins_v2*.json`` and reviews from ``reviews.json`` when given."""
    raw_items = (
        read_json(items, "WebShop products file") if isinstance(items, (str, Path)) else items
    )
    if not isinstance(raw_items, list):
        raise ValueError("a WebShop products file holds a JSON list of products")
    attrs = (
        read_json(attributes, "WebShop attributes file")
        if isinstance(attributes, (str, Path))
        else attributes
    )
    attrs = attrs or {}
    revs = (
        read_json(reviews, "WebShop reviews file") if isinstance(reviews, (str, Path)) else reviews
    )
    by_asin_reviews = {r["asin"]: r for r in (revs or []) if isinstance(r, dict) and "asin" in r}

    if limit is not None:
        raw_items = raw_items[:limit]  # the files are shuffled already, so a prefix is a sample
    products: list[Product] = []
    seen: set[str] = set()
    for p in raw_items:
        asin = str(p.get("asin", "nan"))
        if asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        pricing, price_tag = parse_pricing(p.get("pricing"))
        bullets = p.get("small_description") or []
        bullets = [str(b) for b in bullets] if isinstance(bullets, list) else [str(bullets)]
        a = attrs.get(asin) or {}
        r = by_asin_reviews.get(asin) or {}
        product_reviews = [
            {
                "title": str(x.get("title", "")),
                "score": int(x.get("score", x.get("stars", 0)) or 0),
                "body": str(x.get("body", x.get("review", ""))),
            }
            for x in r.get("reviews") or []
        ]
        rating = r.get("average_rating")
        images = p.get("images") or []
        products.append(
            Product(
                asin=asin,
                title=str(p.get("name") or ""),
                description=str(p.get("full_description") or ""),
                bullet_points=bullets,
                price=purchase_price(asin, pricing),
                price_tag=price_tag,
                options=_options(p.get("customization_options")),
                attributes=list(a.get("attributes") or ["DUMMY_ATTR"]),
                category=str(p.get("category") or ""),
                query=str(p.get("query") or "").lower().strip(),
                product_category=str(p.get("product_category") or ""),
                rating="N.A." if rating is None else str(rating),
                reviews=product_reviews,
                image=images[0] if images else None,
                instruction=a.get("instruction"),
                instruction_attributes=list(a.get("instruction_attributes") or []),
            )
        )
    return products


def load_human_instructions(path: str | Path) -> dict[str, list[dict]]:
    """``items_human_ins.json``: asin -> list of {instruction, instruction_attributes,
    instruction_options}."""
    data = read_json(path, "WebShop human instructions file")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object asin -> list of instructions")
    return {str(k): list(v or []) for k, v in data.items()}


def find_files(data_dir: str | Path) -> dict[str, Path | None]:
    """Locate the WebShop files in ``data_dir`` (largest variant wins: ``items_shuffle.json``
    before ``items_shuffle_1000.json``)."""
    data_dir = Path(data_dir)

    def first(*patterns: str) -> Path | None:
        for pattern in patterns:
            hits = sorted(data_dir.glob(pattern), key=lambda p: (len(p.name), p.name))
            if hits:
                return hits[0]
        return None

    items = first("items_shuffle.json", "items_shuffle*.json")
    if items is None:
        raise FileNotFoundError(f"no items_shuffle*.json in {data_dir}")
    return {
        "items": items,
        "attributes": first("items_ins_v2.json", "items_ins_v2*.json"),
        "human": first("items_human_ins*.json"),
        "reviews": first("reviews*.json"),
    }
