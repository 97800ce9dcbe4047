"""seed_gym/WebShop-v0: the contract, pages and actions, oracle and random policies, splits, search,
the catalog build and the agent spec."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import seed_gym
from seed_gym.envs.webshop import vocab
from seed_gym.envs.webshop.build import build_catalog, catalog_dir, is_built
from seed_gym.envs.webshop.catalog import load_catalog
from seed_gym.envs.webshop.engine import SEARCH_ACTION
from seed_gym.envs.webshop.generate import generate
from seed_gym.splits import check_disjoint

ENV_ID = "seed_gym/WebShop-v0"


@pytest.fixture(scope="module")
def env():
    e = seed_gym.make(ENV_ID, split="seen")
    yield e
    e.close()


def _run(env, policy, task_id, seed=0):
    raw = env.unwrapped
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(100):
        action = (
            raw.oracle_action()
            if policy == "oracle"
            else raw.sample_action(rng, info["admissible_actions"])
        )
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            break
    return total, info


def test_check_env():
    e = seed_gym.make(ENV_ID, split="train")
    seed_gym.check_env(e)
    e.close()


def test_generated_goals_ask_only_for_rewardable_options():
    # goal.py compares the clicked value, colour-normalised, with "name value": a goal option
    # "scent: sandalwood" cannot be won (the click becomes "sand"), so generated goals avoid it
    from seed_gym.envs.webshop.reward import option_matches

    catalog = load_catalog()
    for g in catalog.goals:
        assert option_matches(dict(g.options), g.options, "goal.py") == len(g.options), g.task_id


@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_oracle_wins_every_goal(split):
    e = seed_gym.make(ENV_ID, split=split)
    ids = e.unwrapped.task_ids
    sample = ids if split == "seen" else ids[::2]
    for task_id in sample:
        total, info = _run(e, "oracle", task_id)
        assert info["won"] and info["webshop.score"] == 1.0 and total == 10.0, task_id
    e.close()


def test_random_policy_scores_low(env):
    ids = env.unwrapped.task_ids[:40]
    results = [_run(env, "random", t, seed=i) for i, t in enumerate(ids)]
    assert np.mean([info["webshop.score"] for _, info in results]) < 0.2
    assert sum(total for total, _ in results) <= 10.0


def test_pages_text_and_admissible_actions(env):
    raw = env.unwrapped
    obs, info = env.reset(seed=0)
    goal = raw.privileged_info()
    assert obs["text"] == f"WebShop [SEP] Instruction: [SEP] {goal['instruction']} [SEP] Search"
    assert info["admissible_actions"] == [SEARCH_ACTION]
    assert raw.task_description == goal["instruction"]

    obs, r, term, trunc, info = env.step(f"search[{goal['target_title']}]")
    parts = obs["text"].split(" [SEP] ")
    assert parts[:5] == [
        "Instruction:",
        goal["instruction"],
        "Back to Search",
        "Page 1 (Total results: 50)",
        "Next >",
    ]
    assert parts[5] == goal["target_asin"] and parts[6] == goal["target_title"]
    assert info["admissible_actions"][:2] == ["click[back to search]", "click[next >]"]
    assert len([a for a in info["admissible_actions"] if a.startswith("click[b0")]) == 10

    env.step("click[Next >]")  # case-insensitive
    _, _, _, _, info = env.step("click[< prev]")
    assert info["webshop.page"] == "results" and "Page 1 " in raw.render_text()
    env.step("click[next >]")
    assert (
        "Page 2 (Total results: 50)" in raw.render_text()
        and "click[< prev]" in raw.engine.view(raw.session).actions()
    )
    env.step("click[< prev]")

    obs, *_, info = env.step(f"click[{goal['target_asin'].lower()}]")
    assert info["webshop.page"] == "item"
    for value in goal["options"].values():
        assert f"click[{value}]" in info["admissible_actions"]
    for tab in ("description", "features", "reviews", "buy now", "back to search", "< prev"):
        assert f"click[{tab}]" in info["admissible_actions"]
    assert f"Price: {raw.catalog.by_asin[goal['target_asin']].price_tag}" in obs["text"]

    obs, *_, info = env.step("click[features]")
    product = raw.catalog.by_asin[goal["target_asin"]]
    assert obs["text"].endswith(" [SEP] ".join(product.bullet_points))
    assert info["admissible_actions"] == ["click[back to search]", "click[< prev]"]
    _, *_, info = env.step("click[< prev]")
    assert info["webshop.page"] == "item"
    _, *_, info = env.step("click[back to search]")
    assert info["webshop.page"] == "search"


def test_invalid_actions_are_no_ops(env):
    raw = env.unwrapped
    env.reset(seed=1)
    before = raw.render_text()
    for action in (
        "click[buy now]",
        "search[]",
        "search[<query>]",
        "jump",
        "click[]",
        "click[b0zzzzzzzz]",
    ):
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info["action_is_valid"] and info["webshop.error"]
        assert obs["text"] == before and reward == 0.0 and not terminated
    env.step("search[shampoo]")
    _, _, _, _, info = env.step("search[shampoo]")  # no search box on the results page
    assert not info["action_is_valid"] and "back to search" in info["webshop.error"]


def test_partial_purchase_scores_below_one(env):
    raw = env.unwrapped
    for task_id in raw.task_ids:
        env.reset(seed=0, options={"task_id": task_id})
        goal = raw.privileged_info()
        if goal["options"]:
            break
    env.step(f"search[{goal['target_title']}]")
    env.step(f"click[{goal['target_asin']}]")
    obs, reward, terminated, truncated, info = env.step("click[buy now]")  # no option chosen
    n_attr, n_opt = len(goal["attributes"]), len(goal["options"])
    assert terminated and reward == 0.0 and not info["won"]
    assert info["webshop.score"] == pytest.approx((n_attr + 0 + 1) / (n_attr + n_opt + 1))
    assert info["webshop.reward_info"]["n_option"] == 0 and info["admissible_actions"] == []
    assert obs["text"].startswith(
        "Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0)"
    )
    _, _, _, _, info = env.step("click[buy now]")
    assert not info["action_is_valid"]


def test_episode_truncates_at_15_steps():
    e = seed_gym.make(ENV_ID, split="train")
    e.reset(seed=0)
    for step in range(1, 16):
        _, _, terminated, truncated, _ = e.step("click[nothing]")
        assert not terminated and truncated == (step == 15)
    e.close()


def test_determinism_and_cheap_pickles(env):
    a = _run(env, "random", env.unwrapped.task_ids[3], seed=5)
    b = _run(copy.deepcopy(env), "random", env.unwrapped.task_ids[3], seed=5)
    assert a == b
    blob = pickle.dumps(env)
    assert len(blob) < 50_000  # the catalog and index are module caches, not pickled
    c = pickle.loads(blob)
    assert _run(c, "random", env.unwrapped.task_ids[3], seed=5) == a


def test_privileged_info_names_the_goal(env):
    raw = env.unwrapped
    env.reset(seed=2)
    info = raw.privileged_info()
    goal = raw.catalog.goals_by_id[raw.task_id]
    assert info["target_asin"] == goal.asin and info["price_upper"] == goal.price_upper
    assert info["attributes"] == list(goal.attributes) and info["options"] == dict(goal.options)
    assert goal.asin in raw.catalog.by_asin


# --- splits -------------------------------------------------------------------------------------
def test_splits_are_disjoint_and_hold_out_categories(env):
    raw = env.unwrapped
    manifests = [raw.manifest(s) for s in seed_gym.SPLITS]
    check_disjoint(manifests)
    by_id = raw.catalog.goals_by_id
    cats = {m.split: {by_id[t].category for t in m.task_ids} for m in manifests}
    assert cats["unseen"] == set(vocab.UNSEEN_CATEGORIES)
    assert not cats["train"] & set(vocab.UNSEEN_CATEGORIES) and not cats["seen"] & set(
        vocab.UNSEEN_CATEGORIES
    )
    assert cats["seen"] <= cats["train"]
    # seen holds out products, not just goals: no seen asin has a train goal
    train_asins = {by_id[t].asin for t in manifests[0].task_ids}
    assert not train_asins & {by_id[t].asin for t in manifests[1].task_ids}
    n = {m.split: len(m) for m in manifests}
    assert n["train"] > 5 * n["seen"] > 0 and n["unseen"] > 0
    assert sum(n.values()) == len(raw.catalog.goals)


def test_documented_split_counts_are_the_real_ones(env):
    # docs/webshop.md once said 682 / 89 / 229 for the 1k catalog; the manifests hold 703 / 68 / 229
    import re
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "webshop.md").read_text()
    m = re.search(r"1k catalog: ([\d,]+) / ([\d,]+) / ([\d,]+) goals", doc)
    assert m is not None
    documented = [int(x.replace(",", "")) for x in m.groups()]
    assert documented == [len(env.unwrapped.manifest(s)) for s in seed_gym.SPLITS]


def test_split_is_global_and_grows_with_the_catalog(env):
    small = env.unwrapped.catalog
    bigger = load_catalog(num_products=1200)
    assert [p.title for p in bigger.products[:1000]] == [p.title for p in small.products]
    for g in small.goals:
        other = bigger.goals_by_id[g.task_id]
        assert (other.split, other.instruction, other.price_upper) == (
            g.split,
            g.instruction,
            g.price_upper,
        )


# --- catalog, search ----------------------------------------------------------------------------
def test_generated_catalog_has_webshop_shape():
    items, attrs, reviews = generate(50, seed=3)
    assert len({i["asin"] for i in items}) == 50 and all(len(i["asin"]) == 10 for i in items)
    keys = {"asin", "name", "full_description", "small_description", "pricing", "customization_options",
            "category", "query", "product_category", "images"}  # fmt: skip
    assert all(keys <= set(i) for i in items)
    assert all(" › " in i["product_category"] and i["pricing"].startswith("$") for i in items)
    assert all(
        set(attrs[i["asin"]]) == {"attributes", "instruction", "instruction_attributes"}
        for i in items
    )
    assert all(set(a["instruction_attributes"]) <= set(a["attributes"]) for a in attrs.values())
    assert generate(50, seed=3) == (items, attrs, reviews)
    assert generate(50, seed=4)[0][0]["name"] != items[0]["name"]
    assert generate(10, seed=3)[0] == items[:10]  # a product depends only on (seed, index)


def test_build_is_cached_and_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_GYM_CACHE", str(tmp_path))
    path = build_catalog(n_products=30, seed=1)
    assert path == catalog_dir(30, 1) and is_built(path)
    stamp = (path / "items_shuffle.json").stat().st_mtime_ns
    assert build_catalog(n_products=30, seed=1) == path
    assert (path / "items_shuffle.json").stat().st_mtime_ns == stamp  # reused, not rebuilt
    (path / "reviews.json").write_text("[]")  # a damaged file is noticed
    assert not is_built(path)
    build_catalog(n_products=30, seed=1)
    assert is_built(path)
    assert not list(tmp_path.glob("webshop/*.tmp*"))


def test_search_finds_each_product_by_its_title(env):
    catalog = env.unwrapped.catalog
    for p in catalog.products[::5]:
        hits = [q.asin for q in catalog.search(p.title)][:10]
        assert p.asin in hits, p.title
    assert catalog.search("zzzz qqqq") == []
    assert len(catalog.search("black")) == 50  # at most 50 results, like WebShop
    assert catalog.search("shoes") == catalog.search("shoes")


def test_search_ranks_by_query_words(env):
    catalog = env.unwrapped.catalog
    top = catalog.search("yoga mat")[:5]
    assert all("yoga mat" in p.title.lower() for p in top)


# --- agent spec ---------------------------------------------------------------------------------
def test_agent_env_prompt():
    agent = seed_gym.make_agent_env(ENV_ID, split="seen")
    spec = agent.agent_spec
    assert spec.history == 2
    obs, info = agent.reset(seed=0)
    text = obs["messages"][-1]["content"]
    assert f"Your task is to: {info['task']}." in text and "'search[<query>]'," in text
    assert "<think>" in text and "<action>" in text
    raw = agent.unwrapped
    for _ in range(3):
        obs, reward, term, trunc, info = agent.step(
            f"<think>go</think><action>{raw.oracle_action()}</action>"
        )
        assert info["format_valid"] and info["action_is_valid"]
    text = obs["messages"][-1]["content"]
    assert "[Observation 2:" in text and "[Observation 3:" in text and "[Observation 1:" not in text
    assert "Instruction:" not in text  # the page text drops the instruction, as the reference does
    obs, reward, *_, info = agent.step("no tags")
    assert not info["format_valid"] and reward == -spec.invalid_penalty
    agent.close()


# --- the site -----------------------------------------------------------------------------------
def test_site_sessions_expire_and_are_capped():
    # sessions never expired before (~626 bytes each): a long-running site grew without bound
    from seed_gym.envs.webshop.site import create_app

    now = [0.0]
    app = create_app(max_sessions=3, session_ttl=60.0, clock=lambda: now[0])
    client = app.test_client()
    store = app.config["SEED_GYM_SESSIONS"]

    def start() -> str:
        return client.get("/").headers["Location"].rsplit("/", 1)[-1]

    ids = [start() for _ in range(4)]
    assert len(store) == 3 and client.get(f"/session/{ids[0]}").status_code == 404
    now[0] = 50.0
    assert client.get(f"/session/{ids[1]}/text").status_code == 200  # used: kept alive
    now[0] = 100.0  # ids[2] and ids[3] idle for 100 s, ids[1] for 50 s
    assert client.get(f"/session/{ids[1]}").status_code == 200
    assert client.get(f"/session/{ids[2]}").status_code == 404
    assert client.get(f"/session/{ids[3]}").status_code == 404
    assert len(store) == 1
