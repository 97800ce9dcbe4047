"""The retrieval server, started for real on a free loopback port, and its client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

import seed_gym
from seed_gym.envs.search.retrieval import RemoteRetriever, make_retriever
from seed_gym.envs.search.server import RetrievalServer


@pytest.fixture(scope="module")
def served():
    local = make_retriever("bm25", seed_gym.make("seed_gym/SearchQA-v0").unwrapped.dataset.corpus)
    server = RetrievalServer(local, port=0).start()  # port 0: the OS picks a free one
    yield server, local
    server.close()


def test_remote_matches_local(served):
    server, local = served
    assert server.url.startswith("http://127.0.0.1:")
    queries = ["capital of a country", "founded by", "Which river flows through the city?"]
    remote = RemoteRetriever(server.url).search(queries, 3)
    here = local.search(queries, 3)
    assert [[(h.passage, round(h.score, 4)) for h in row] for row in remote] == [
        [(h.passage, round(h.score, 4)) for h in row] for row in here
    ]


def test_health_and_bad_requests(served):
    server, local = served
    with urllib.request.urlopen(server.url + "/health") as r:
        assert json.loads(r.read()) == {
            "status": "ok",
            "retriever": "bm25",
            "passages": len(local.corpus),
        }
    for body in (b"not json", b'{"queries": "one string"}', b'{"queries": ["x"], "topk": 0}'):
        req = urllib.request.Request(server.url + "/retrieve", data=body)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        assert e.value.code == 400 and "error" in json.loads(e.value.read())
    # without return_scores the rows are bare documents, as in Search-R1's server
    req = urllib.request.Request(
        server.url + "/retrieve", data=json.dumps({"queries": ["river"], "topk": 2}).encode()
    )
    with urllib.request.urlopen(req) as r:
        (row,) = json.loads(r.read())["result"]
    assert len(row) == 2 and set(row[0]) == {"id", "contents"}


def test_envs_share_the_server(served):
    server, _ = served
    envs = [
        seed_gym.make("seed_gym/SearchQA-v0", split="seen", retriever=server.url) for _ in range(2)
    ]
    local = seed_gym.make("seed_gym/SearchQA-v0", split="seen")
    for env in [*envs, local]:
        env.reset(seed=11)
    first = [env.step(env.unwrapped.oracle_action())[0]["text"] for env in [*envs, local]]
    assert first[0] == first[1] == first[2]
    while True:
        obs, r, term, trunc, info = envs[0].step(envs[0].unwrapped.oracle_action())
        if term or trunc:
            break
    assert info["won"]


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(ConnectionError, match="cannot reach the retrieval server"):
        RemoteRetriever("http://127.0.0.1:9", timeout=2).search(["x"], 3)
