"""``seed_gym/WebShop-v0``: shop for a product that fits an instruction, on WebShop's pages."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.core import SeedEnv
from seed_gym.envs.webshop.catalog import Catalog, load_catalog
from seed_gym.envs.webshop.engine import SEARCH_ACTION, Engine, Session
from seed_gym.envs.webshop.reward import OPTION_RULES
from seed_gym.splits import SplitManifest

SUCCESS_REWARD = 10.0


class WebShopEnv(SeedEnv):
    """WebShop (Yao et al., 2022) on a rebuilt engine: search, browse, choose options, buy.

    Description:
        Each episode gives an instruction ("i need men's running shoes that is non slip with
        color: black, and size: 9, and price lower than 60.00 dollars"). The agent searches the
        catalog (BM25), pages through results (10 per page), opens products, reads their
        description / features / reviews, picks options and buys. The catalog is a seeded
        generated one of ``num_products`` products with WebShop's shape (built into the cache on
        first use), or the original WebShop files from ``data_dir``.

    Observation:
        ``{"text": str}``: WebShop's simple text view of the current page, its visible strings
        joined by `` [SEP] `` (the instruction is on every page but the last). The same page is
        served as HTML by ``seed-gym serve webshop``.

    Actions:
        ``search[keywords]`` on the search page; ``click[text]`` for a button (``back to search``,
        ``next >``, ``< prev``, ``description``, ``features``, ``reviews``, ``buy now``), a
        product asin on the results page or an option value on the item page (case-insensitive).
        ``info["admissible_actions"]`` lists them (the search box as ``search[<query>]``).
        Anything else, including a well-formed click on something not on the page, is a no-op
        with ``action_is_valid=False``, reward 0 and the page unchanged (``webshop.error`` says
        why).

    Rewards:
        ``10`` when the purchase scores exactly 1, else ``0``. The score (WebShop's ``goal.py``:
        attributes, options, price bound, times the product-type factor) is in
        ``info["webshop.score"]`` after the purchase, with its parts in ``webshop.reward_info``.
        ``option_rule="goal.py"`` (default) scores options exactly as ``goal.py`` does, quirks
        included; ``option_rule="strict"`` compares values and requires exact sizes (see
        ``seed_gym.envs.webshop.reward``).

    Termination:
        ``terminated`` on ``click[buy now]``; ``truncated`` after 15 steps (the registry's
        ``TimeLimit``).

    Splits:
        One fixed global goal split: ``unseen`` = every goal of the held-out categories (sports
        and pets in the generated catalog, garden in WebShop's real files), ``seen`` = 10% of the other products' goals (by a
        hash of the asin), ``train`` = the rest. ``info["task_type"]`` is the goal's category.

    Version History:
        v0: first release (generated catalog v1). seed-gym 0.2: options scored exactly as
        ``goal.py`` (``option_rule``); real-data unseen category ``garden``.
    """

    env_id = "seed_gym/WebShop-v0"
    modalities = ("text",)

    def __init__(
        self,
        split: str = "train",
        modality: str | None = None,
        render_mode: str | None = None,
        *,
        num_products: int | None = 1000,
        catalog_seed: int = 0,
        data_dir: str | Path | None = None,
        human_goals: bool = False,
        unseen_categories: tuple[str, ...] | None = None,
        option_rule: str = "goal.py",
    ):
        super().__init__(split=split, modality=modality, render_mode=render_mode)
        if option_rule not in OPTION_RULES:
            raise ValueError(f"unknown option_rule {option_rule!r}; choose one of {OPTION_RULES}")
        self.option_rule = option_rule
        self._catalog_kwargs = {
            "num_products": None if num_products is None else int(num_products),
            "seed": int(catalog_seed),
            "data_dir": str(data_dir) if data_dir is not None else None,
            "human_goals_file": bool(human_goals),
            "unseen_categories": tuple(unseen_categories)
            if unseen_categories is not None
            else None,
        }
        self._catalog: Catalog | None = None
        self._engine: Engine | None = None
        self.session: Session | None = None
        self.catalog  # noqa: B018 - load (or build) now so a bad data_dir fails at construction

    # --- shared, never pickled ----------------------------------------------------------------
    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = load_catalog(**self._catalog_kwargs)
        return self._catalog

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(self.catalog, self.option_rule)
        return self._engine

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_catalog"] = None
        state["_engine"] = None
        return state

    def __deepcopy__(self, memo: dict) -> WebShopEnv:
        clone = copy.copy(self)
        memo[id(self)] = clone
        for key, value in self.__getstate__().items():
            setattr(clone, key, copy.deepcopy(value, memo))
        clone._catalog, clone._engine = self._catalog, self._engine  # shared, read-only
        return clone

    def manifest(self, split: str) -> SplitManifest:
        catalog = self.catalog
        task_ids = catalog.split_ids(split)
        if not task_ids and split == "unseen":
            # the usual cause: held-out categories that the data does not have
            held_out = catalog.unseen_categories
            present = sorted({p.category for p in catalog.products})
            raise ValueError(
                f"{self.env_id}: no goals in the unseen categories {list(held_out)} of "
                f"{catalog.source}; its categories are {present} (pass unseen_categories=...)"
            )
        return SplitManifest(
            env_id=self.env_id,
            split=split,
            task_ids=task_ids,
            version="1",
            meta={"catalog": catalog.source},
        )

    def content_key(self, task_id: str) -> str:
        """A goal's content is its instruction: the whole start page besides the catalog."""
        return self.catalog.goals_by_id[task_id].instruction

    # --- gymnasium ----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.task_id = self._choose_task(options)
        goal = self.catalog.goals_by_id[self.task_id]
        self.task_type = goal.category
        self.task_description = goal.instruction
        self.session = Session(goal=goal)
        return self._observation(self.render_text()), self._step_info(valid=True)

    def step(self, action: Any):
        if self.session is None:
            raise RuntimeError("call reset() before step()")
        text = self._as_action(action)
        if text is None:
            outcome_valid, error, score = False, "the action must be a string", None
        else:
            outcome = self.engine.act(self.session, text)
            outcome_valid, error, score = outcome.valid, outcome.error, outcome.score
        won = score is not None and score.score >= 1.0 - 1e-9
        reward = SUCCESS_REWARD if won else 0.0
        terminated = self.session.done
        info = self._step_info(valid=outcome_valid, error=error)
        return self._observation(self.render_text()), reward, terminated, False, info

    def _step_info(self, *, valid: bool, error: str | None = None) -> dict[str, Any]:
        s = self.session
        assert s is not None
        page = self.engine.view(s)
        score = s.score.score if s.score is not None else 0.0
        extras: dict[str, Any] = {
            "webshop.score": float(score),
            "webshop.page": page.name,
            "webshop.error": error,
        }
        if s.score is not None:
            extras["webshop.reward_info"] = s.score.to_dict()
            extras["webshop.purchased_asin"] = s.asin
            extras["webshop.purchased_options"] = dict(s.options)
        won = s.score is not None and s.score.score >= 1.0 - 1e-9
        return self._info(
            won=won,
            action_is_valid=valid,
            admissible_actions=[] if s.done else page.actions(),
            **extras,
        )

    def render_text(self) -> str:
        self._require_reset(self.session is not None)
        return self.engine.view(self.session).text()

    # --- policies -----------------------------------------------------------------------------
    def oracle_action(self) -> str:
        self._require_reset(self.session is not None)
        return self.engine.oracle_action(self.session)

    def sample_action(self, rng: np.random.Generator, admissible_actions: list[str] | None) -> str:
        """A uniform admissible action; the search box searches a random product-type query."""
        if not admissible_actions:
            return "click[buy now]"
        action = admissible_actions[int(rng.integers(len(admissible_actions)))]
        if action == SEARCH_ACTION:
            queries = self.catalog.queries
            action = f"search[{queries[int(rng.integers(len(queries)))]}]"
        return action

    def privileged_info(self) -> dict[str, Any]:
        """The goal: attributes, options, price bound and the product it was written from."""
        if self.session is None:
            return {}
        g = self.session.goal
        return {
            "target_asin": g.asin,
            "target_title": g.name,
            "attributes": list(g.attributes),
            "options": dict(g.options) if isinstance(g.options, dict) else list(g.options),
            "price_upper": g.price_upper,
            "query": g.query,
            "category": g.category,
            "product_category": g.product_category,
            "instruction": g.instruction,
        }
