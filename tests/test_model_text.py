"""Model text that UTF-8 cannot encode (a lone surrogate from an ``openai:`` server) is cleaned at
the boundary and never crashes an eval or a recorder."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import GUESS_ID, import_example

import seed_gym
from seed_gym.evaluate import evaluate
from seed_gym.trajlog import append_trajectory, clean_text, json_line, read_jsonl
from seed_gym.wrappers import EpisodeRecorder

import_example()

# the JSON text a server sends: "\ud800" is a valid JSON escape that decodes to a lone surrogate
COMPLETION_JSON = r'"<think>\ud800 hm</think><action>50</action>"'


class _Chat(BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass

    def _send(self, text: str) -> None:
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send('{"data": [{"id": "surrogate-model"}]}')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        choice = '{"message": {"content": ' + COMPLETION_JSON + '}, "finish_reason": "length"}'
        self._send('{"choices": [' + choice + "]}")


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_clean_text_replaces_lone_surrogates_only():
    assert clean_text("ok \u00e9 \U0001f600") == "ok \u00e9 \U0001f600"
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\udfff") == "\ufffd"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a split pair is joined, not replaced
    assert json.loads(json_line({"x": "\ud800"})) == {"x": "\ufffd"}


def test_eval_with_a_server_sending_lone_surrogates_writes_every_episode(tmp_path, server):
    # seed-gym 0.1 raised UnicodeEncodeError in evaluate.py and left episodes.jsonl empty
    res = evaluate(
        GUESS_ID,
        "seen",
        f"openai:{server}",
        episodes=3,
        max_steps=2,
        out=tmp_path / "eval",
        progress=False,
        n_boot=10,
        save_trajectories=True,
        policy_options={"retries": 0},
    )
    assert res["episodes"] == 3
    episodes = read_jsonl(tmp_path / "eval" / "episodes.jsonl")
    assert len(episodes) == 3
    trajectories = read_jsonl(tmp_path / "eval" / "trajectories" / "eval.jsonl")
    assert len(trajectories) == 3
    response = trajectories[0]["steps"][0]["response"]
    assert response.startswith("<think>\ufffd hm</think>")


def test_recorders_write_lone_surrogates(tmp_path):
    env = EpisodeRecorder(seed_gym.make_agent_env(GUESS_ID, split="seen"), tmp_path / "rec")
    env.reset(seed=0)
    env.step("<think>\ud800</think><action>50</action>")
    env.close()
    (line,) = read_jsonl(tmp_path / "rec" / "steps.jsonl")
    assert line["completion"] == "<think>\ufffd</think><action>50</action>"
    append_trajectory(tmp_path / "t.jsonl", {"traj_id": "x", "steps": [{"response": "\udc80"}]})
    assert read_jsonl(tmp_path / "t.jsonl")[0]["steps"][0]["response"] == "\ufffd"
