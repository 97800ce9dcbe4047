"""SearchQA-v0: the env contract, the Search-R1 protocol, oracle and closed-book policies, the
agent spec, on the offline data (built on demand into the cache)."""

from __future__ import annotations

import pickle

import pytest

import seed_gym
from seed_gym.checker import check_env
from seed_gym.envs.search.retrieval import make_retriever
from seed_gym.wrappers.templates.search import CLOSED_BOOK_SPEC, SPEC

ENV_ID = "seed_gym/SearchQA-v0"


@pytest.fixture(scope="module")
def envs():
    made = {s: seed_gym.make(ENV_ID, split=s) for s in ("train", "seen", "unseen")}
    yield made
    for e in made.values():
        e.close()


def _oracle_episode(env, task_id):
    obs, info = env.reset(seed=0, options={"task_id": task_id})
    steps = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        steps += 1
        if terminated or truncated:
            return reward, info, steps


def test_check_env(envs):
    check_env(envs["train"])


def test_splits(envs):
    m = {s: envs[s].unwrapped.manifest(s) for s in envs}
    assert (
        {"synth_single", "synth_bridge"}
        == set(m["train"].meta["datasets"])
        == set(m["seen"].meta["datasets"])
    )
    # unseen holds a held-out style (comparison) and held-out datasets (real text)
    assert set(m["unseen"].meta["datasets"]) == {"synth_comparison", "wiki_facts", "fanoutqa"}
    assert len(m["seen"]) == 300 and len(m["train"]) > 3000 and len(m["unseen"]) > 900
    print({s: m[s].to_dict() for s in m})


@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_oracle_wins_every_task(envs, split):
    env = envs[split]
    wins, steps = [], []
    for task_id in env.unwrapped.task_ids:
        reward, info, n = _oracle_episode(env, task_id)
        wins.append(
            reward == 1.0 and info["won"] and info["search.em"] == 1.0 and info["search.f1"] == 1.0
        )
        steps.append(n)
    print(
        f"{split}: oracle EM {sum(wins) / len(wins):.3f} over {len(wins)} tasks, max {max(steps)} steps"
    )
    assert all(wins)
    assert max(steps) <= 4


@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_oracle_queries_retrieve_the_gold_passages(envs, split):
    env = envs[split].unwrapped
    retriever = make_retriever("bm25", env.dataset.corpus)
    found = total = 0
    for task_id in env.task_ids:
        item = env.dataset.by_id[task_id]
        hits = retriever.search(list(item.oracle_queries), 3)
        for pid, row in zip(item.supporting_ids, hits, strict=True):
            total += 1
            found += pid in {h.passage.id for h in row}
    print(f"{split}: oracle searches retrieve {found}/{total} supporting passages in the top 3")
    assert found == total


def test_episode_rules(envs):
    env = envs["seen"]
    obs, info = env.reset(seed=3)
    question = obs["text"]
    assert info["task_type"] in ("synth_single", "synth_bridge") and question.endswith("?")
    assert info["search.em"] == 0.0 and info["admissible_actions"] is None
    # invalid: no-op with feedback, no reward, not terminal
    for bad in (
        "Paris",
        "<search>a</search><answer>b</answer>",
        "<answer>x</answer><answer>y</answer>",
        "<search>",
    ):
        obs, r, term, trunc, info = env.step(bad)
        assert (r, term, info["action_is_valid"]) == (
            0.0,
            False,
            False,
        ) and "Invalid action" in obs["text"]
    obs, info = env.reset(seed=3)
    obs, r, term, trunc, info = env.step(f"<search> {question} </search>")
    text = obs["text"]
    assert text.startswith('<information>Doc 1(Title: "') and text.endswith("</information>")
    assert "\nDoc 2(Title: " in text and "Doc 4(" not in text and (r, term) == (0.0, False)
    obs, r, term, trunc, info = env.step("<answer> certainly not this </answer>")
    assert (r, term, info["won"], info["search.em"]) == (0.0, True, False, 0.0)
    obs, r, term, trunc, info = env.step("<answer> again </answer>")
    assert not info["action_is_valid"] and r == 0.0


def test_four_turn_limit(envs):
    env = envs["train"]
    env.reset(seed=0)
    for _ in range(4):
        obs, r, term, trunc, info = env.step("<search> river </search>")
    assert trunc and not term


def test_topk_configurable():
    env = seed_gym.make(ENV_ID, split="seen", topk=5)
    env.reset(seed=0)
    obs, *_ = env.step("<search> city river founded population </search>")
    assert "\nDoc 5(Title: " in obs["text"] and "Doc 6(" not in obs["text"]
    with pytest.raises(ValueError, match="topk"):
        seed_gym.make(ENV_ID, topk=0)


def test_partial_answer_scores_f1(envs):
    env = envs["seen"]
    for task_id in env.unwrapped.task_ids:
        item = env.unwrapped.dataset.by_id[task_id]
        if len(item.golden_answers[0].split()) == 2 and not item.golden_answers[0].startswith(
            "the "
        ):
            break
    env.reset(options={"task_id": task_id})
    first = item.golden_answers[0].split()[0]
    *_, info = env.step(f"<answer> {first} </answer>")
    assert info["search.em"] == 0.0 and info["search.f1"] == pytest.approx(2 / 3)


def test_privileged_info_and_closed_book(envs):
    env = envs["seen"]
    env.reset(seed=5)
    raw = env.unwrapped
    priv = raw.privileged_info()
    assert priv["golden_answers"] == list(raw._item.golden_answers)
    assert all(d["text"] for d in priv["supporting_docs"])
    assert (
        priv["golden_answers"][0].lower().removeprefix("the ")
        in " ".join(d["text"] for d in priv["supporting_docs"]).lower()
    )
    action = raw.closed_book_action()
    assert action.startswith("<answer>")
    *_, term, _, info = env.step(action)
    assert term and info["search.n_searches"] == 0


def test_closed_book_baseline_is_weak(envs):
    env = envs["unseen"]
    wins = 0
    ids = env.unwrapped.task_ids
    for task_id in ids:
        env.reset(options={"task_id": task_id})
        wins += env.step(env.unwrapped.closed_book_action())[1]
    print(f"closed-book prior EM on unseen: {wins / len(ids):.3f}")
    assert wins / len(ids) < 0.2


def test_pickled_env_reloads_its_data(envs):
    env = envs["seen"]
    env.reset(seed=7)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped._dataset is None
    a = env.step("<search> founded </search>")[0]
    b = clone.step("<search> founded </search>")[0]
    assert a == b


def test_agent_spec_parse():
    ok = SPEC.parse("<think>need facts</think>\n<search> Lasind </search>")
    assert ok.valid and ok.action == "<search> Lasind </search>" and ok.thought == "need facts"
    assert (
        SPEC.parse("<answer>Paris</answer>").action == "<answer> Paris </answer>"
    )  # think optional
    for bad in (
        "<think>x</think>",
        "<search>a</search> <answer>b</answer>",
        "<search>a</search><search>b</search>",
        "<answer>",
    ):
        assert not SPEC.parse(bad).valid
    # a tag inside the reasoning does not count as an action
    assert (
        SPEC.parse("<think>maybe <search> x </search>?</think><answer> y </answer>").action
        == "<answer> y </answer>"
    )
    assert SPEC.invalid_penalty == 0.01 and SPEC.history == 4
    assert set(SPEC.stop) == {"</search>", "</answer>"}
    assert not CLOSED_BOOK_SPEC.parse("<search> x </search>").valid
    assert CLOSED_BOOK_SPEC.parse("<answer> x </answer>").valid


def test_agent_env_prompt_and_penalty():
    env = seed_gym.make_agent_env(ENV_ID, split="seen")
    obs, info = env.reset(seed=0)
    user = obs["messages"][-1]["content"]
    assert f"Your question: {info['task']}" in user and "<search> your query </search>" in user
    obs, r, term, trunc, info = env.step("I think the answer is Paris")
    assert r == pytest.approx(-0.01) and not info["format_valid"]
    query = env.unwrapped.oracle_action()
    obs, r, term, trunc, info = env.step(f"<think>look it up</think>{query}")
    assert info["action_is_valid"] and "<information>" in obs["messages"][-1]["content"]
    assert query in obs["messages"][-1]["content"]  # history shows the search and its result


def test_closed_book_eval_policy():
    from seed_gym.envs.search.policies import ClosedBookPolicy
    from seed_gym.policies import make_policy

    assert isinstance(make_policy("closed_book"), ClosedBookPolicy)


def test_information_is_search_r1s_text_byte_for_byte():
    # wiki-18 rows: contents = the quoted title, a newline, the text. Search-R1 shows the first
    # line as the title verbatim (quotes kept), no colon after the doc number, one doc per line.
    from seed_gym.envs.search.corpus import Passage
    from seed_gym.envs.search.env import format_information
    from seed_gym.envs.search.retrieval import Hit

    rows = [
        '"Evan Morris"\nEvan L. Morris (January 26, 1977 \u2013 July 9, 2015) was a lobbyist.',
        '"Morris Park"\nMorris Park is a neighborhood.\nIt lies in the Bronx.',
        "no title line",  # a one-line row: all of it is the "title"
    ]
    hits = [Hit(Passage.from_contents(str(i), c), 1.0) for i, c in enumerate(rows)]
    assert format_information(hits) == (
        '<information>Doc 1(Title: "Evan Morris") Evan L. Morris (January 26, 1977 \u2013 '
        "July 9, 2015) was a lobbyist.\n"
        'Doc 2(Title: "Morris Park") Morris Park is a neighborhood.\nIt lies in the Bronx.\n'
        "Doc 3(Title: no title line)</information>"
    )
    # a row with stray spaces is shown as stored, not as re-assembled from title and text
    odd = Passage.from_contents("9", '"Odd" \n  spaced text ')
    assert (odd.title, odd.text) == ("Odd", "spaced text")
    assert format_information([Hit(odd, 0.0)]) == (
        '<information>Doc 1(Title: "Odd" )   spaced text</information>'
    )


def test_a_huge_answer_is_scored_but_not_echoed_whole(envs):
    # seed-gym 0.1 put a whole 1 MB <answer> into the observation; queries were already capped
    env = envs["seen"]
    env.reset(seed=0)
    huge = "word " * 200_000
    obs, r, term, trunc, info = env.step(f"<answer> {huge} </answer>")
    assert term and info["action_is_valid"] and r == 0.0
    assert obs["text"].startswith("Your answer: word word") and len(obs["text"]) <= 1_100
