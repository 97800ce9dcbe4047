"""The loader for WebShop's original files, on small files in that format written here."""

from __future__ import annotations

import json

import pytest

import seed_gym
from seed_gym.envs.webshop.goals import NO_PRICE_BOUND, price_bound
from seed_gym.envs.webshop.loader import (
    find_files,
    load_human_instructions,
    load_products,
    parse_pricing,
)

# three products as WebShop's scraper stored them (extra keys included), one to be skipped twice
ITEMS = [
    {
        "asin": "B07ABCDEF1",
        "name": "Herbal Tea Tree Shampoo for Dry Hair, Sulfate Free",
        "full_description": "A gentle shampoo with tea tree oil and natural ingredients.",
        "small_description": ["Sulfate free formula", "Safe for color treated hair"],
        "pricing": "$12.99",
        "customization_options": {
            "Scent": [
                {"value": "Tea Tree", "image": None},
                {"value": "Lavender/Mint", "image": "http://img/2"},
            ],
            "Size": [{"value": "8 Fl Oz", "image": None}, {"value": "16 Fl Oz", "image": None}],
        },
        "category": "beauty",
        "query": " Shampoo ",
        "product_category": "Beauty & Personal Care › Hair Care › Shampoo & Conditioner › Shampoos",
        "images": ["http://img/1"],
        "brand": "Herbal",
        "product_information": {"x": 1},
    },
    {
        "asin": "B08XYZXYZ2",
        "name": "Men's Trail Running Shoes Non Slip",
        "full_description": "Lightweight trail shoes.",
        "small_description": "Rubber sole",
        "pricing": "$45.00 - $60.50",
        "customization_options": {"Color": [{"value": "Black", "image": None}], "Material": None},
        "category": "fashion",
        "query": "men's running shoes",
        "product_category": "Clothing, Shoes & Jewelry › Men › Shoes › Athletic › Running",
        "images": [],
    },
    {
        "asin": "B09NOPRICE",
        "name": "Solid Wood Bookshelf",
        "full_description": "",
        "small_description": [],
        "pricing": "",
        "customization_options": None,
        "category": "furniture",
        "query": "bookshelf",
        "product_category": "Home & Kitchen › Furniture › Bookcases",
        "images": [],
    },
    {"asin": "nan", "name": "broken"},
    {"asin": "B07ABCDEF1", "name": "a repeated asin is skipped"},
    {"asin": "B0TOOLONGASIN", "name": "an asin longer than 10 characters is skipped"},
]
ATTRS = {
    "B07ABCDEF1": {
        "attributes": ["sulfate free", "tea tree", "dry hair"],
        "instruction": "i need a sulfate free shampoo for dry hair",
        "instruction_attributes": ["sulfate free", "dry hair"],
    },
    "B08XYZXYZ2": {
        "attributes": ["non slip", "rubber sole"],
        "instruction": "i want men's running shoes that are non slip",
        "instruction_attributes": ["non slip"],
    },
}
HUMAN = {
    "B07ABCDEF1": [
        {
            "instruction": "i am looking for a tea tree shampoo in 16 fl oz that is sulfate free.",
            "instruction_attributes": ["sulfate free"],
            "instruction_options": ["tea tree", "16 fl oz"],
        },
        {
            "instruction": "no attributes: skipped",
            "instruction_attributes": [],
            "instruction_options": [],
        },
    ],
    "B08XYZXYZ2": [
        {
            "instruction": "i need black non slip running shoes",
            "instruction_attributes": ["non slip"],
            "instruction_options": ["black"],
        }
    ],
}
REVIEWS = [
    {
        "asin": "B07ABCDEF1",
        "reviews": [{"title": "Great", "stars": 5, "review": "Lovely smell."}],
        "average_rating": 5.0,
    }
]


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(ITEMS))
    (tmp_path / "items_ins_v2_1000.json").write_text(json.dumps(ATTRS))
    (tmp_path / "items_human_ins.json").write_text(json.dumps(HUMAN))
    (tmp_path / "reviews.json").write_text(json.dumps(REVIEWS))
    return tmp_path


def test_pricing_parses_like_webshop():
    assert parse_pricing("$12.99") == ([12.99], "$12.99")
    assert parse_pricing("$45.00 - $60.50") == ([45.0, 60.5], "$45.0 to $60.5")
    assert parse_pricing("") == ([100.0], "$100.0") and parse_pricing(None) == ([100.0], "$100.0")
    assert parse_pricing("$1,299.00") == ([1299.0], "$1299.0")


def test_load_products_from_real_format(data_dir):
    files = find_files(data_dir)
    assert (
        files["items"].name == "items_shuffle_1000.json"
        and files["human"].name == "items_human_ins.json"
    )
    products = load_products(files["items"], files["attributes"], files["reviews"])
    assert [p.asin for p in products] == ["B07ABCDEF1", "B08XYZXYZ2", "B09NOPRICE"]
    shampoo, shoes, shelf = products
    assert shampoo.title.startswith("Herbal Tea Tree Shampoo") and shampoo.query == "shampoo"
    assert shampoo.options == {
        "scent": ["tea tree", "lavender | mint"],
        "size": ["8 fl oz", "16 fl oz"],
    }
    assert shampoo.bullet_points == ["Sulfate free formula", "Safe for color treated hair"]
    assert (
        shampoo.attributes == ["sulfate free", "tea tree", "dry hair"]
        and shampoo.image == "http://img/1"
    )
    assert (
        shampoo.reviews == [{"title": "Great", "score": 5, "body": "Lovely smell."}]
        and shampoo.rating == "5.0"
    )
    assert shampoo.price == 12.99 and shampoo.price_tag == "$12.99"
    assert shoes.bullet_points == ["Rubber sole"] and shoes.options == {"color": ["black"]}
    assert 45.0 <= shoes.price <= 60.5 and shoes.price_tag == "$45.0 to $60.5"
    assert (
        load_products(files["items"], files["attributes"])[1].price == shoes.price
    )  # fixed per asin
    assert shelf.attributes == ["DUMMY_ATTR"] and shelf.price == 100.0 and shelf.rating == "N.A."
    assert len(load_products(files["items"], limit=2)) == 2


def test_human_instructions(data_dir):
    human = load_human_instructions(data_dir / "items_human_ins.json")
    assert len(human["B07ABCDEF1"]) == 2


def test_webshop_price_bound():
    # 12.99 -> candidates 20, 30, 40, 50; two drawn, the larger kept
    upper, text = price_bound(12.99, "k")
    assert upper in (30.0, 40.0, 50.0) and text == f", and price lower than {upper:.2f} dollars"
    assert price_bound(12.99, "k") == (upper, text)  # seeded by the key
    assert price_bound(985.0, "k") == (NO_PRICE_BOUND, "")  # fewer than two multiples of 10 above


def test_env_on_real_files_with_synthetic_goals(data_dir):
    # WebShop's synthetic goals: one per option combination (2 scents x 2 sizes + 1 colour)
    e = seed_gym.make(
        "seed_gym/WebShop-v0",
        split="train",
        data_dir=data_dir,
        unseen_categories=(),
        num_products=None,
    )
    raw = e.unwrapped
    ids = [g.task_id for g in raw.catalog.goals]
    assert ids == [f"B07ABCDEF1-{k}" for k in range(4)] + ["B08XYZXYZ2-0"]
    goal = raw.catalog.goals_by_id["B07ABCDEF1-3"]
    assert goal.options == {"scent": "lavender | mint", "size": "16 fl oz"}
    assert goal.instruction.startswith(
        "i need a sulfate free shampoo for dry hair with scent: lavender | mint, and size: 16 fl oz, and price lower than"
    )
    e.close()


def test_env_on_real_files_with_human_goals(data_dir):
    kwargs = {"data_dir": data_dir, "human_goals": True, "unseen_categories": ("fashion",)}
    e = seed_gym.make("seed_gym/WebShop-v0", split="unseen", **kwargs)
    raw = e.unwrapped
    assert raw.task_ids == ("B08XYZXYZ2-h0",)
    obs, info = e.reset(seed=0)
    assert "i need black non slip running shoes, and price lower than" in obs["text"]
    while True:
        obs, reward, terminated, truncated, info = e.step(raw.oracle_action())
        if terminated or truncated:
            break
    assert (
        info["won"] and reward == 10.0 and info["webshop.purchased_options"] == {"color": "black"}
    )
    e.close()
    train = seed_gym.make("seed_gym/WebShop-v0", split="train", **kwargs).unwrapped
    seen = seed_gym.make("seed_gym/WebShop-v0", split="seen", **kwargs).unwrapped
    # the goal without attributes is skipped, as in WebShop
    assert set(train.catalog.goals_by_id) == {"B07ABCDEF1-h0", "B08XYZXYZ2-h0"}
    assert len(train.catalog.split_ids("train")) + len(seen.catalog.split_ids("seen")) == 1


def test_missing_or_corrupt_files_give_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="items_shuffle"):
        find_files(tmp_path)
    (tmp_path / "items_shuffle.json").write_text("{not json")
    with pytest.raises(ValueError, match="corrupt"):
        load_products(tmp_path / "items_shuffle.json")


# --- the real data's categories ----------------------------------------------------------------
REAL_CATEGORIES = ("beauty", "electronics", "fashion", "garden", "grocery")


def write_five_category_catalog(folder):
    """A catalog in WebShop's format whose ``category`` values are the real data's five."""
    items, attrs = [], {}
    for c in REAL_CATEGORIES:
        for k in range(12):
            asin = f"B0{c[:3].upper()}{k:05d}"
            items.append(
                {
                    "asin": asin,
                    "name": f"Acme {c.title()} Thing Model {k}",
                    "full_description": f"A {c} thing.",
                    "small_description": [f"Made for {c}"],
                    "pricing": f"${10 + k}.99",
                    "customization_options": {"Color": [{"value": "Black", "image": None}]},
                    "category": c,
                    "query": f"{c} thing",
                    "product_category": f"{c.title()} › Things › Model {k}",
                    "images": [],
                }
            )
            attrs[asin] = {
                "attributes": ["easy to use"],
                "instruction": f"i want an easy to use {c} thing number {k}",
                "instruction_attributes": ["easy to use"],
            }
    (folder / "items_shuffle_1000.json").write_text(json.dumps(items))
    (folder / "items_ins_v2_1000.json").write_text(json.dumps(attrs))
    return folder


@pytest.fixture
def five_category_dir(tmp_path):
    return write_five_category_catalog(tmp_path)


def test_real_data_unseen_split_holds_out_a_real_category(five_category_dir):
    # seed-gym 0.1 held out "furniture", which the real data does not have: unseen was empty
    e = seed_gym.make("seed_gym/WebShop-v0", split="unseen", data_dir=five_category_dir)
    raw = e.unwrapped
    assert {raw.catalog.goals_by_id[t].category for t in raw.task_ids} == {"garden"}
    assert len(raw.task_ids) == 12
    seed_gym.check_env(e)
    e.close()


def test_held_out_categories_missing_from_the_data_are_named(five_category_dir):
    with pytest.raises(ValueError, match=r"\['furniture'\].*'garden', 'grocery'\]"):
        seed_gym.make(
            "seed_gym/WebShop-v0",
            split="unseen",
            data_dir=five_category_dir,
            unseen_categories=("furniture",),
        ).reset(seed=0)
