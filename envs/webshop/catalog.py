"""A loaded catalog: products, goals by split, and the search index, shared per process.

Envs never pickle a catalog: they keep the arguments and look the catalog up here (built on first
use). That keeps ``pickle`` / ``deepcopy`` of an env cheap and lets subprocess workers rebuild
their own copy lazily.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from seed_gym.data import read_json
from seed_gym.envs.webshop import vocab
from seed_gym.envs.webshop.build import build_catalog
from seed_gym.envs.webshop.goals import human_goals, synthetic_goals
from seed_gym.envs.webshop.loader import find_files, load_human_instructions, load_products
from seed_gym.envs.webshop.records import Goal, Product
from seed_gym.envs.webshop.search import SEARCH_RETURN_N, SearchIndex

REAL_DATA_UNSEEN = ("garden",)
"""Held-out category for the real WebShop data, whose ``category`` values are beauty,
electronics, fashion, garden and grocery."""


@dataclass(eq=False)
class Catalog:
    products: list[Product]
    goals: list[Goal]
    source: str
    unseen_categories: tuple[str, ...] = ()
    by_asin: dict[str, Product] = field(init=False)
    goals_by_id: dict[str, Goal] = field(init=False)
    _index: object = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self):
        self.by_asin = {p.asin: p for p in self.products}
        self.goals_by_id = {g.task_id: g for g in self.goals}
        self.queries = sorted({p.query for p in self.products if p.query})

    def split_ids(self, split: str) -> tuple[str, ...]:
        return tuple(g.task_id for g in self.goals if g.split == split)

    @property
    def index(self):
        """The BM25 index, built on first search (seconds at 100k products)."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = SearchIndex(self.products)
        return self._index

    def search(self, query: str, top_k: int | None = None) -> list[Product]:
        hits = self.index.search(query, top_k or SEARCH_RETURN_N)
        return [self.products[i] for i in hits]


_CACHE: dict[tuple, Catalog] = {}
_CACHE_LOCK = threading.Lock()


def load_catalog(
    *,
    num_products: int | None = 1000,
    seed: int = 0,
    data_dir: str | Path | None = None,
    human_goals_file: bool = False,
    unseen_categories: tuple[str, ...] | None = None,
    seen_fraction: float = 0.1,
) -> Catalog:
    """The generated catalog of ``num_products`` (built into the cache on first use), or the real
    WebShop files in ``data_dir`` (then ``num_products`` caps the products read, like WebShop's
    ``num_products``, None for all; ``human_goals_file`` uses ``items_human_ins.json`` for goals)."""
    key = (num_products, seed, str(data_dir) if data_dir else None, human_goals_file,
           tuple(unseen_categories) if unseen_categories is not None else None, seen_fraction)  # fmt: skip
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    if data_dir is None:
        num_products = num_products or 1000
        folder = build_catalog(n_products=num_products, seed=seed)
        meta = read_json(folder / "manifest.json", "WebShop catalog manifest")
        files = find_files(folder)
        products = load_products(files["items"], files["attributes"], files["reviews"])
        unseen = vocab.UNSEEN_CATEGORIES if unseen_categories is None else tuple(unseen_categories)
        goals = synthetic_goals(products, unseen_categories=unseen, seen_fraction=seen_fraction)
        source = f"generated v{meta['version']} n={num_products} seed={seed}"
    else:
        files = find_files(data_dir)
        products = load_products(
            files["items"], files["attributes"], files["reviews"], limit=num_products
        )
        unseen = REAL_DATA_UNSEEN if unseen_categories is None else tuple(unseen_categories)
        if human_goals_file:
            if files["human"] is None:
                raise FileNotFoundError(f"no items_human_ins*.json in {data_dir}")
            goals = human_goals(
                products,
                load_human_instructions(files["human"]),
                unseen_categories=unseen,
                seen_fraction=seen_fraction,
            )
        else:
            goals = synthetic_goals(
                products,
                all_combinations=True,
                unseen_categories=unseen,
                seen_fraction=seen_fraction,
            )
        source = f"webshop files {data_dir}"
    if not goals:
        raise ValueError(f"the WebShop catalog ({source}) yields no goals")
    catalog = Catalog(products, goals, source, tuple(unseen))
    with _CACHE_LOCK:
        return _CACHE.setdefault(key, catalog)
