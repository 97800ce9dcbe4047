"""The retrieval server, started for real on a free loopback port, and its client."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

import seed_gym
from seed_gym.envs.search.corpus import Passage
from seed_gym.envs.search.protocol import MAX_QUERY_CHARS
from seed_gym.envs.search.retrieval import Hit, RemoteRetriever, make_retriever
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
        RemoteRetriever("http://127.0.0.1:9", timeout=2, backoff=0.01).search(["x"], 3)


# --- under load and abuse: always an answer, never a reset or a hang ----------------------------
class Recording:
    """A retriever that records the queries it is asked and fails its first ``fail`` calls."""

    name = "recording"
    corpus = ()

    def __init__(self, fail: int = 0):
        self.fail, self.queries, self.lock = fail, [], threading.Lock()

    def search(self, queries, k):
        with self.lock:
            self.queries += queries
            if self.fail > 0:
                self.fail -= 1
                raise RuntimeError("index not loaded yet")
        return [[Hit(Passage("1", "T", "text"), 1.0)] for _ in queries]


def _raw_post(url: str, head: str, body: bytes = b"") -> tuple[int, dict]:
    """Send bytes as they are (urllib would fix a bad Content-Length) and read the answer; a
    server that waits for more bytes makes this time out instead of hanging the test."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"POST /retrieve HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1])


def test_bad_lengths_and_deep_json_get_clean_4xx():
    server = RetrievalServer(Recording(), port=0).start()
    try:
        # -1 made the server read to EOF past the 8 MB cap (the client waited forever)
        code, answer = _raw_post(server.url, "Content-Length: -1\r\n", b'{"queries": ["x"]}')
        assert code == 400 and "Content-Length" in answer["error"]
        code, _ = _raw_post(server.url, "Content-Length: lots\r\n")
        assert code == 400
        code, _ = _raw_post(server.url, f"Content-Length: {(8 << 20) + 1}\r\n")
        assert code == 413
        # nested JSON raised an uncaught RecursionError: the connection dropped with no answer
        deep = b"[" * 200_000 + b"]" * 200_000
        code, answer = _raw_post(server.url, f"Content-Length: {len(deep)}\r\n", deep)
        assert code == 400 and "nested" in answer["error"]
    finally:
        server.close()


def test_queries_are_cut_server_side():
    retriever = Recording()
    server = RetrievalServer(retriever, port=0).start()
    try:
        RemoteRetriever(server.url).search(["q" * 7_000_000, "short"], 1)
    finally:
        server.close()
    assert [len(q) for q in retriever.queries] == [MAX_QUERY_CHARS, 5]


def test_fifty_parallel_clients_all_get_answers():
    # socketserver's listen backlog of 5 reset 43 of 150 such requests
    server = RetrievalServer(Recording(), port=0).start()
    assert server.request_queue_size >= 128
    client = RemoteRetriever(server.url, retries=0)
    try:
        with ThreadPoolExecutor(50) as pool:
            rows = list(pool.map(lambda i: client.search([f"q{i}"], 1), range(150)))
    finally:
        server.close()
    assert len(rows) == 150 and all(r[0][0].passage.title == "T" for r in rows)


def test_client_retries_failed_queries_with_backoff():
    retriever = Recording(fail=2)  # the server answers 500 twice, then results
    server = RetrievalServer(retriever, port=0).start()
    try:
        (row,) = RemoteRetriever(server.url, backoff=0.01).search(["x"], 1)
        assert row[0].passage.title == "T" and retriever.queries == ["x", "x", "x"]
        retriever.fail = 5
        with pytest.raises(RuntimeError, match="answered 500"):
            RemoteRetriever(server.url, retries=2, backoff=0.01).search(["y"], 1)
    finally:
        server.close()
    # a 4xx is the caller's mistake: not retried
    server = RetrievalServer(retriever, port=0).start()
    try:
        retriever.queries.clear()
        with pytest.raises(RuntimeError, match="answered 400"):
            RemoteRetriever(server.url, backoff=0.01).search(["z"], 0)
        assert retriever.queries == []
    finally:
        server.close()


# --- a server that answers 200 with something that is not results -------------------------------
GOOD = {"result": [[{"document": {"id": "1", "contents": '"T"\ntext'}, "score": 1.0}]]}


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        (b"<html>502 Bad Gateway</html>", "a body that is not JSON"),
        (b'{"result": [[{"document": ', "a body that is not JSON"),
        (b"\xff\xfe", "a body that is not JSON"),
        (b"[" * 100_000, "a body that is not JSON"),
        (b'{"error": "index not loaded"}', "no 'result' list of 1 row"),
        (b'{"result": []}', "no 'result' list of 1 row"),
        (b'{"result": ["abc"]}', "a 'result' row that is not a list"),
        (b'{"result": [[{"document": {"id": "1"}}]]}', "a malformed passage"),
        (b'{"result": [[{"document": {"contents": 7}}]]}', "a malformed passage"),
        (b'{"result": [[{"document": {"contents": "x"}, "score": "high"}]]}', "a malformed"),
        (b'{"result": [[17]]}', "a malformed passage"),
    ],
)
def test_a_malformed_200_is_one_clear_error_after_the_retries(body, fault):
    # seed-gym 0.3 raised a bare JSONDecodeError / KeyError from env.step
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from seed_gym.envs.search.retrieval import RetrievalError

    answers = []

    class Broken(BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            # the first answers are broken, the last good: a client that retries recovers
            payload = json.dumps(GOOD).encode() if len(answers) >= 3 else body
            answers.append(payload)
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Broken)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        with pytest.raises(RetrievalError) as e:
            RemoteRetriever(url, retries=2, backoff=0.001).search(["q"], 1)
        message = str(e.value)
        assert f"retrieval server {url}/retrieve answered 200 with {fault}" in message
        assert message.endswith("gave up after 3 tries") and "\n" not in message
        assert len(answers) == 3
        (row,) = RemoteRetriever(url, backoff=0.001).search(["q"], 1)  # the 4th answer is good
        assert row == [Hit(Passage("1", "T", "text"), 1.0)]
    finally:
        server.shutdown()
        server.server_close()
