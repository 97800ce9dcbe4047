"""A seeded catalog in WebShop's own file formats, so the loader for the real data reads it too.

``generate(n, seed)`` returns the three files WebShop ships: ``items_shuffle.json`` (a list of
scraped products: asin, name, full_description, small_description, pricing, customization_options,
category, query, product_category, images), ``items_ins_v2.json`` (asin -> attributes, instruction,
instruction_attributes) and ``reviews.json`` (asin, reviews, average_rating). Product ``i`` depends
only on ``(seed, i)``, so a 1k catalog is the prefix of the 100k one and goal ids stay stable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seed_gym.envs.webshop import vocab
from seed_gym.envs.webshop.records import int_hash

_ASIN_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASIN_SPACE = 36**8
_ASIN_MULT = 2_654_435_761  # coprime to 6, so i -> (i * mult + offset) mod 36^8 is a bijection

_TYPES: list[tuple[vocab.Category, vocab.ProductType]] = [
    (c, t) for c in vocab.CATEGORIES for t in c.types
]

_BULLETS = (
    "{A}: {noun_l} made to be {attr} for everyday use",
    "{A} - designed by {brand} with care",
    "{A}: tested for quality, {attr} and reliable",
    "{A} | a {noun_l} you can count on",
)
_DESCRIPTIONS = (
    "The {brand} {noun_l} is {a1} and {a2}. {extra}",
    "Meet the {noun_l} from {brand}: {a1}, {a2}. {extra}",
    "{brand} makes this {noun_l} {a1} and {a2}. {extra}",
)
_EXTRAS = (
    "Backed by a 30 day money back guarantee.",
    "A thoughtful gift for friends and family.",
    "Ships in recyclable packaging.",
    "Customer service is available around the clock.",
    "Made to last through daily use.",
)


def asin_for(index: int, seed: int) -> str:
    """A unique 10-character ASIN-like id ("B0" + 8 base-36 digits) for product ``index``."""
    value = (index * _ASIN_MULT + int_hash("asin", seed)) % _ASIN_SPACE
    digits = []
    for _ in range(8):
        value, r = divmod(value, 36)
        digits.append(_ASIN_ALPHABET[r])
    return "B0" + "".join(reversed(digits))


def _pick(rng: np.random.Generator, seq, k: int) -> list:
    idx = rng.choice(len(seq), size=min(k, len(seq)), replace=False)
    return [seq[i] for i in sorted(idx.tolist())]


def _brand(rng: np.random.Generator) -> str:
    head = vocab.BRAND_HEADS[int(rng.integers(len(vocab.BRAND_HEADS)))]
    tail = vocab.BRAND_TAILS[int(rng.integers(len(vocab.BRAND_TAILS)))]
    suffix = vocab.BRAND_SUFFIXES[int(rng.integers(len(vocab.BRAND_SUFFIXES)))]
    return (head + tail).capitalize() + suffix


def _money(x: float) -> str:
    return f"${x:.2f}"


def generate_product(index: int, seed: int) -> tuple[dict, dict, dict]:
    """Product ``index``: its items_shuffle record, its items_ins_v2 record, its reviews record."""
    rng = np.random.default_rng([seed, index, 0x5EED])
    category, ptype = _TYPES[int(rng.integers(len(_TYPES)))]
    asin = asin_for(index, seed)
    brand = _brand(rng)

    own = _pick(rng, ptype.attributes, int(rng.integers(2, 4)))
    shared = _pick(rng, category.attributes, int(rng.integers(2, 4)))
    attributes = list(dict.fromkeys(own + shared))
    rng.shuffle(attributes)

    # title: brand, maybe a marketing word, audience, one attribute, the noun, maybe a second attribute
    words = [brand]
    if rng.random() < 0.4:
        words.append(vocab.TITLE_EXTRAS[int(rng.integers(len(vocab.TITLE_EXTRAS)))])
    words += list(ptype.audience)
    words.append(attributes[0].title())
    words.append(ptype.noun)
    title = " ".join(words)
    if len(attributes) > 1 and rng.random() < 0.7:
        title += ", " + attributes[1].title()

    options: dict[str, list[dict[str, Any]]] = {}
    for name, pool_key in ptype.options:
        pool = vocab.OPTION_POOLS[pool_key]
        if name == "item package quantity" and rng.random() < 0.4:
            continue  # many products come in one pack only
        k = int(rng.integers(2, min(6, len(pool)) + 1))
        values = _pick(rng, pool, k)
        options[name.title()] = [
            {"value": v.title() if not v[0].isdigit() else v, "image": None} for v in values
        ]

    lo, hi = ptype.price
    price = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    price = round(price, 0) - 0.01 if price > 2 else round(price, 2)
    pricing = _money(price)
    if rng.random() < 0.2:  # WebShop shows some prices as a range
        pricing = f"{_money(price)} - {_money(round(price * rng.uniform(1.1, 1.6), 2))}"

    noun_l = ptype.noun.lower()
    fill = {"brand": brand, "noun_l": noun_l}
    bullets = []
    for a in attributes:
        tmpl = _BULLETS[int(rng.integers(len(_BULLETS)))]
        bullets.append(tmpl.format(A=a.upper(), attr=a, **fill))
    a2 = attributes[1] if len(attributes) > 1 else attributes[0]
    description = _DESCRIPTIONS[int(rng.integers(len(_DESCRIPTIONS)))].format(
        a1=attributes[0], a2=a2, extra=_EXTRAS[int(rng.integers(len(_EXTRAS)))], **fill
    )

    reviews = []
    for _ in range(int(rng.integers(0, 4))):
        score = int(rng.choice([5, 4, 3, 2, 1], p=[0.45, 0.3, 0.12, 0.08, 0.05]))
        attr = attributes[int(rng.integers(len(attributes)))]
        titles, bodies = vocab.REVIEW_TITLES[score], vocab.REVIEW_BODIES[score]
        body = bodies[int(rng.integers(len(bodies)))].format(
            noun=noun_l, attr=attr, attr_c=attr.capitalize()
        )
        reviews.append(
            {"title": titles[int(rng.integers(len(titles)))], "stars": score, "review": body}
        )
    rating = round(sum(r["stars"] for r in reviews) / len(reviews), 1) if reviews else None

    # the goal's wording: 1-3 of the product's attributes, in one of a few phrasings
    goal_attrs = _pick(rng, attributes, int(rng.integers(1, min(3, len(attributes)) + 1)))
    attrs_text = " and ".join(goal_attrs)
    tmpl = vocab.INSTRUCTION_TEMPLATES[int(rng.integers(len(vocab.INSTRUCTION_TEMPLATES)))]
    instruction = tmpl.format(query=ptype.query, attrs=attrs_text)

    item = {
        "asin": asin,
        "name": title,
        "full_description": description,
        "small_description": bullets,
        "pricing": pricing,
        "customization_options": options,
        "category": category.name,
        "query": ptype.query,
        "product_category": " › ".join((category.root, *ptype.path)),
        "images": [],
    }
    ins = {
        "attributes": attributes,
        "instruction": instruction,
        "instruction_attributes": goal_attrs,
    }
    rev = {"asin": asin, "reviews": reviews, "average_rating": rating}
    return item, ins, rev


def generate(n_products: int, seed: int = 0) -> tuple[list[dict], dict[str, dict], list[dict]]:
    """``(items_shuffle, items_ins_v2, reviews)`` for products ``0 .. n_products-1``."""
    if n_products < 1:
        raise ValueError(f"n_products must be >= 1, got {n_products}")
    items, attrs, reviews = [], {}, []
    for i in range(n_products):
        item, ins, rev = generate_product(i, seed)
        items.append(item)
        attrs[item["asin"]] = ins
        reviews.append(rev)
    return items, attrs, reviews
