"""WebShop: a shopping site (search, results, item pages, buy) with WebShop's reward.

``WebShopEnv`` is the gymnasium env (``seed_gym/WebShop-v0``); ``build.build_catalog`` writes a
generated catalog into the cache; ``loader`` reads the original WebShop files; ``engine`` is the
page state machine that both the env and the web site (``seed-gym serve webshop``) run on.
"""

from __future__ import annotations

from seed_gym.envs.webshop.env import WebShopEnv

__all__ = ["WebShopEnv"]
