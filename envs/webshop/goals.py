"""Goals from products (synthetic, as WebShop's ``get_synthetic_goals``) or from human
instructions (``get_human_goals``), their price bounds, and the one fixed global split.

The price bound follows WebShop: the multiples of 10 dollars above the product's price, the first
four of them, two drawn and the larger kept ("and price lower than 40.00 dollars"); a product
whose price leaves fewer than two such values gets no bound. The draw is seeded by the task id,
not by a global ``random.seed``, so every process sees the same goals.

Split: goals of the categories in ``unseen_categories`` form ``unseen``; of the rest, a fixed
fraction of *products* (by a hash of the asin, so all goals of one product stay together) forms
``seen`` and the others ``train``. Hashes, not positions, decide, so a goal keeps its split when
the catalog grows.
"""

from __future__ import annotations

import itertools

from seed_gym.envs.webshop.records import Goal, Product, int_hash, unit_hash
from seed_gym.envs.webshop.reward import option_matches

PRICE_RANGE = [10.0 * i for i in range(1, 100)]
NO_PRICE_BOUND = 1_000_000.0


def price_bound(price: float, key: str) -> tuple[float, str]:
    """``(price_upper, text)``: WebShop's bound for a product costing ``price``."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) < 2:
        return NO_PRICE_BOUND, ""
    # two distinct candidates drawn from one hash (a Generator per goal is slow at 100k goals)
    h, n = int_hash("price_upper", key), len(candidates)
    i, j = h % n, (h // n) % (n - 1)
    j += j >= i
    upper = float(max(candidates[i], candidates[j]))
    return upper, f", and price lower than {upper:.2f} dollars"


def assign_split(
    category: str, asin: str, *, unseen_categories: tuple[str, ...], seen_fraction: float
) -> str:
    if category in unseen_categories:
        return "unseen"
    return "seen" if unit_hash("split", asin) < seen_fraction else "train"


def _product_goal(
    p: Product,
    *,
    task_id: str,
    instruction: str,
    attributes: tuple[str, ...],
    options: dict[str, str] | tuple[str, ...],
    price_upper: float,
    unseen_categories: tuple[str, ...],
    seen_fraction: float,
) -> Goal:
    """A goal for product ``p``: its catalog fields and split, with the given instruction."""
    return Goal(
        task_id=task_id,
        asin=p.asin,
        instruction=instruction,
        attributes=attributes,
        options=options,
        price_upper=price_upper,
        category=p.category,
        query=p.query,
        product_category=p.product_category,
        name=p.title,
        split=assign_split(
            p.category,
            p.asin,
            unseen_categories=unseen_categories,
            seen_fraction=seen_fraction,
        ),
    )


def _rewardable(name: str, value: str) -> bool:
    """Whether buying ``value`` satisfies the goal option ``name: value`` under ``goal.py``'s
    rule: not always (goal ``sandalwood`` is compared as ``"scent sandalwood"`` with the clicked
    value colour-normalised to ``sand``)."""
    return option_matches({name: value}, {name: value}, "goal.py") == 1


def _pick_option(p: Product, name: str) -> str:
    """The generated catalog's goal value for option ``name``, drawn from the asin among the
    values a purchase can be rewarded for (all values when none can), so every generated goal
    can score 1."""
    values = [v for v in p.options[name] if _rewardable(name, v)] or p.options[name]
    return values[int_hash("option", p.asin, name) % len(values)]


def synthetic_goals(
    products: list[Product],
    *,
    all_combinations: bool = False,
    unseen_categories: tuple[str, ...] = (),
    seen_fraction: float = 0.1,
) -> list[Goal]:
    """Goals written from each product's ``instruction``, its ``instruction_attributes`` and a
    combination of its options. WebShop makes one goal per option combination
    (``all_combinations=True``, kept for the real data even where ``goal.py`` cannot reward an
    option); the generated catalog keeps one combination per product, drawn from the asin among
    the rewardable values, so goal count grows linearly with the catalog and the oracle can win
    every goal."""
    goals: list[Goal] = []
    for p in products:
        if not p.instruction or not p.instruction_attributes:
            continue
        names = sorted(p.options)
        combos = (
            list(itertools.product(*(p.options[n] for n in names))) if all_combinations else None
        )
        if combos is None:
            combos = [tuple(_pick_option(p, n) for n in names)]
        for k, combo in enumerate(combos):
            task_id = f"{p.asin}-{k}" if all_combinations else p.asin
            goal_options = dict(zip(names, combo, strict=True))
            option_text = ", and ".join(f"{n}: {v}" for n, v in goal_options.items())
            option_text = f" with {option_text}" if option_text else ""
            upper, price_text = price_bound(p.price, task_id)
            goals.append(
                _product_goal(
                    p,
                    task_id=task_id,
                    instruction=f"{p.instruction}{option_text}{price_text}",
                    attributes=tuple(p.instruction_attributes),
                    options=goal_options,
                    price_upper=upper,
                    unseen_categories=unseen_categories,
                    seen_fraction=seen_fraction,
                )
            )
    return goals


def human_goals(
    products: list[Product],
    instructions: dict[str, list[dict]],
    *,
    unseen_categories: tuple[str, ...] = (),
    seen_fraction: float = 0.1,
) -> list[Goal]:
    """Goals from ``items_human_ins.json``; instructions without attributes are skipped, as in
    WebShop. Goal options are a list of values (the human file does not name them)."""
    goals: list[Goal] = []
    for p in products:
        for j, ins in enumerate(instructions.get(p.asin, [])):
            attributes = ins.get("instruction_attributes") or []
            if not attributes:
                continue
            task_id = f"{p.asin}-h{j}"
            upper, price_text = price_bound(p.price, task_id)
            raw_options = ins.get("instruction_options") or []
            options = (
                tuple(raw_options.values()) if isinstance(raw_options, dict) else tuple(raw_options)
            )
            goals.append(
                _product_goal(
                    p,
                    task_id=task_id,
                    instruction=str(ins.get("instruction", "")).strip(".") + price_text,
                    attributes=tuple(attributes),
                    options=tuple(str(o).lower() for o in options),
                    price_upper=upper,
                    unseen_categories=unseen_categories,
                    seen_fraction=seen_fraction,
                )
            )
    return goals
