"""``seed-gym eval`` failing safe (issue 28): every argument checked before anything is written,
``openai:`` servers that misbehave in every way, one writer per output folder, and
``seed-gym list / check --import``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import EXAMPLES, GUESS_ID, ROOT, import_example

import seed_gym
from seed_gym import evaluate as evaluate_module
from seed_gym.cli import main as cli_main
from seed_gym.evaluate import evaluate, size_problem
from seed_gym.evaluate import main as eval_main
from seed_gym.folder_lock import LOCK_NAME, FolderLockedError, folder_lock
from seed_gym.policies import OpenAIPolicy, PolicyError, register_policy

import_example()
EXAMPLE = str(EXAMPLES / "guess_number.py")
GUESS = ["--import", EXAMPLE, "--env", GUESS_ID, "--no-progress", "--n-boot", "10"]


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def one_line(err: str) -> str:
    err = err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


# --- every argument, before anything is written ----------------------------------------------
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--temperature", "-1"], ["--temperature", "-1", ">= 0"]),
        (["--temperature", "nan"], ["--temperature", "nan"]),
        (["--batch-size", "0"], ["--batch-size", "0", ">= 1"]),
        (["--max-new-tokens", "0"], ["--max-new-tokens", "0", ">= 1"]),
        (["--n-boot", "0"], ["--n-boot", "0", "[1, 1000000]"]),
        (["--n-boot", str(10**9)], ["--n-boot", str(10**9), "[1, 1000000]"]),
        (["--seed", "-1"], ["--seed", "-1", "[0, 2**63 - 1]"]),
        (["--top-p", "2"], ["--top-p", "2", "(0, 1]"]),
        (["--k", str(10**7)], ["--k", str(10**7), "[1, ", "20 tasks", "GiB available"]),
        (["--request-timeout", "0"], ["--request-timeout", "0", "> 0"]),
        (["--retries", "-1"], ["--retries", "-1", "[0, 10]"]),
        (["--policy", "openai:localhost:8000"], ["openai:localhost:8000", "http(s)"]),
    ],
)  # fmt: skip
def test_bad_eval_arguments_are_one_line_exit_2_and_write_nothing(argv, expected, tmp_path, capsys):
    # seed-gym 0.3 ran these (--k 10**7 until the OOM killer came), crashed with a traceback,
    # or (--top-p 2 with a model) wrote eval_config.json first so the corrected rerun was refused
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        cli_main(["eval", *GUESS, *argv, "--out", str(out)])
    assert e.value.code == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith("seed-gym eval: "), err
    for part in expected:
        assert part in err, err
    assert not out.exists()


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    afile = tmp_path / "results"
    afile.write_text("keep me\n")
    for out, says in [(afile, "is a file"), (afile / "sub", f"{afile} is a file")]:
        with pytest.raises(SystemExit) as e:
            eval_main([*GUESS, "--out", str(out)])
        assert e.value.code == 2
        err = one_line(capsys.readouterr().err)
        assert f"--out {out}" in err and says in err, err
    assert afile.read_text() == "keep me\n"


def test_a_refused_run_leaves_nothing_that_refuses_the_corrected_rerun(tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit):
        eval_main([*GUESS, "--episodes", "3", "--top-p", "2", "--out", str(out)])
    capsys.readouterr()
    assert eval_main([*GUESS, "--episodes", "3", "--top-p", "0.9", "--out", str(out)]) == 0
    assert len(lines(out / "episodes.jsonl")) == 3


def test_k_and_n_boot_are_bounded_by_the_memory_they_take(tmp_path, monkeypatch, capsys):
    # bounds from a small (pretended) memory, with values that are cheap to run when unbounded
    monkeypatch.setattr(evaluate_module, "available_memory", lambda: 64 * 2**20)
    assert size_problem(k=102, n_boot=2000, n_tasks=10, memory=64 * 2**20) is None
    assert "--k must be in [1, 204] for 10 tasks" in size_problem(
        k=205, n_boot=2000, n_tasks=10, memory=64 * 2**20
    )
    for argv, says in [
        (["--k", "1000"], "--k must be in [1, 102] for 20 tasks in half of the 0.1 GiB available"),
        (["--n-boot", "200000"], "--n-boot must be in [1, 167772] for 20 tasks"),
    ]:
        with pytest.raises(SystemExit) as e:
            eval_main([*GUESS[:-2], *argv, "--out", str(tmp_path / "out")])
        assert e.value.code == 2
        assert says in one_line(capsys.readouterr().err)
    assert not (tmp_path / "out").exists()
    # the library refuses the same, before writing
    with pytest.raises(ValueError, match="--k must be in"):
        evaluate(GUESS_ID, "seen", "random", k=1000, out=tmp_path / "lib", progress=False)
    assert not (tmp_path / "lib").exists()


# --- modality: a text-only policy on an image env ---------------------------------------------
def test_text_model_on_an_image_env_is_refused_before_writing(tmp_path, capsys):
    # 0.3 loaded the model, wrote eval_config.json, then died in a 7-frame traceback
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        eval_main(["--env", "seed_gym/EZPoints-v0", "--policy", "model:tiny", "--out", str(out)])
    assert e.value.code == 2
    err = one_line(capsys.readouterr().err)
    assert "model:tiny reads text only" in err and "'image' (its default)" in err, err
    assert err.endswith("pass --modality text"), err
    assert not out.exists()


class _TextOnly:
    """An agent policy that declares it cannot read images."""

    name, acts_on, accepts_images = "textonly", "agent", False

    def reset(self, env, *, seed):
        pass

    def act(self, env, obs, info):
        return "<action>1</action>"

    def close(self):
        pass


def test_policies_that_declare_text_only_are_refused_by_the_library(tmp_path):
    register_policy("textonly", lambda arg: _TextOnly())
    with pytest.raises(ValueError, match="pass --modality text"):
        evaluate("seed_gym/EZPoints-v0", "seen", "textonly", out=tmp_path / "o", progress=False)
    assert not (tmp_path / "o").exists()
    res = evaluate(
        "seed_gym/EZPoints-v0", "seen", "textonly", modality="text", episodes=2, max_steps=1,
        out=tmp_path / "t", progress=False, n_boot=10,
    )  # fmt: skip
    assert res["episodes"] == 2


# --- openai:URL against a server that misbehaves ----------------------------------------------
COMPLETION = {"choices": [{"message": {"content": "<action>7</action>"}, "finish_reason": "stop"}]}


class Misbehaving:
    """A local OpenAI-compatible server: ``ok`` completions for the first ``good`` chat
    requests, then ``mode`` for ``bad`` requests, then ``ok`` again."""

    def __init__(self, mode: str, good: int = 0, bad: int = 10**9):
        self.mode, self.good, self.bad, self.chats = mode, good, bad, 0
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, code: int, body: bytes, ctype: str = "application/json", length=None):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self.send(200, json.dumps({"data": [{"id": "served"}]}).encode())

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.chats += 1
                bad = owner.good < owner.chats <= owner.good + owner.bad
                mode = owner.mode if bad else "ok"
                if mode == "ok":
                    self.send(200, json.dumps(COMPLETION).encode())
                elif mode == "json":
                    self.send(200, b'{"choices": [{"message": ')
                elif mode == "html":
                    self.send(200, b"<html>\n<body>Bad gateway</body>\n</html>", "text/html")
                elif mode == "empty":
                    self.send(200, b'{"choices": []}')
                elif mode == "500":
                    self.send(500, b'{"error": "out of memory"}')
                elif mode == "truncated":
                    self.send(200, b'{"choices": [', length=500)
                elif mode == "hang":
                    owner.release.wait(30)
                # "drop": no answer at all; the connection closes when the handler returns

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def misbehaving():
    servers = []

    def start(mode: str, good: int = 0, bad: int = 10**9) -> Misbehaving:
        servers.append(Misbehaving(mode, good, bad))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def openai_eval(url: str, out, *extra: str) -> list[str]:
    return [
        *GUESS, "--split", "seen", "--episodes", "6", "--max-steps", "1", "--batch-size", "1",
        "--policy", f"openai:{url}", "--out", str(out), "--retries", "1", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("json", 'the answer is not JSON: \'{"choices": [{"message":\''),
        ("html", "the answer is not JSON: '<html> <body>Bad gateway</body> </html>'"),
        ("empty", "the answer holds no completion: '{\"choices\": []}'"),
        ("500", 'HTTP 500 Internal Server Error: \'{"error": "out of memory"}\''),
        ("drop", "connection lost: RemoteDisconnected"),
        ("truncated", "connection lost: IncompleteRead"),
    ],
)
def test_openai_failures_keep_finished_episodes_and_end_in_one_line(
    mode, says, misbehaving, tmp_path, capsys
):
    # 0.3: a 45-line traceback, 0 episodes saved
    server = misbehaving(mode, good=3)
    out = tmp_path / "out"
    assert eval_main(openai_eval(server.url, out)) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith(f"seed-gym eval: openai:{server.url} failed: {server.url}/v1/chat"), err
    assert says in err and "(2 attempts)" in err, err
    assert "3 of 6 episodes saved" in err and "rerun the same command" in err, err
    assert server.chats == 3 + 2  # each failure retried once
    assert len(lines(out / "episodes.jsonl")) == 3 and not (out / "results.json").exists()
    # the rerun against a healthy server plays only the rest
    server.mode = "ok"
    assert eval_main(openai_eval(server.url, out)) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["episodes"] == 6 and results["resumed_episodes"] == 3
    assert server.chats == 5 + 3


@pytest.mark.parametrize("mode", ["500", "drop", "html", "empty"])
def test_retries_ride_out_a_flaky_server(mode, misbehaving):
    server = misbehaving(mode, bad=2)
    policy = OpenAIPolicy(server.url, retries=2, backoff=0.01)
    env = seed_gym.make_agent_env(GUESS_ID, split="seen")
    obs, info = env.reset(seed=0)
    policy.reset(env, seed=0)
    assert policy.act(env, obs, info) == "<action>7</action>"
    assert server.chats == 3


def test_a_server_that_never_answers_times_out(misbehaving, tmp_path, capsys):
    server = misbehaving("hang")
    start = time.monotonic()
    argv = openai_eval(server.url, tmp_path / "out", "--request-timeout", "0.5", "--retries", "0")
    assert eval_main(argv) == 1
    assert time.monotonic() - start < 10  # 0.3 waited 300 s x 3 attempts
    err = one_line(capsys.readouterr().err)
    assert "no answer within 0.5 s (--request-timeout) (1 attempt)" in err, err
    assert "0 of 6 episodes saved" in err, err


def test_an_unreachable_server_is_one_line(tmp_path, capsys):
    # 0.3: 31 lines of traceback
    out = tmp_path / "out"
    assert eval_main(openai_eval("http://127.0.0.1:9", out, "--retries", "0")) == 1
    err = one_line(capsys.readouterr().err)
    assert err.startswith("seed-gym eval: openai:http://127.0.0.1:9 failed: "), err
    assert "http://127.0.0.1:9/v1/models: cannot connect: ConnectionRefusedError" in err, err
    assert not (out / "eval_config.json").exists()


def test_policy_error_is_one_line_naming_the_url(misbehaving):
    server = misbehaving("html")
    policy = OpenAIPolicy(server.url, retries=0, model_name="m")
    with pytest.raises(PolicyError) as e:
        policy._complete([{"role": "user", "content": "hi"}], [], seed=0)
    assert "\n" not in str(e.value) and f"{server.url}/v1/chat/completions: " in str(e.value)


# --- one writer per folder --------------------------------------------------------------------
HOLD = """
import sys
from seed_gym.folder_lock import folder_lock
with folder_lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.readline()
"""


def hold_lock(folder) -> subprocess.Popen:
    """A child process that holds ``folder``'s lock until its stdin closes (or it is killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_folder_lock_refuses_a_second_holder_and_a_killed_one_does_not_block(tmp_path):
    holder = hold_lock(tmp_path)
    with (
        pytest.raises(
            FolderLockedError, match=f"in use by a seed-gym process \\(pid {holder.pid}\\)"
        ),
        folder_lock(tmp_path),
    ):
        pass
    holder.kill()  # SIGKILL: no cleanup runs, the lock file stays
    holder.wait()
    assert (tmp_path / LOCK_NAME).exists()
    with folder_lock(tmp_path):
        pass
    with folder_lock(tmp_path):  # released on exit
        pass


def test_a_second_eval_into_a_held_folder_refuses_in_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    holder = hold_lock(out)
    try:
        assert eval_main([*GUESS, "--episodes", "3", "--out", str(out)]) == 1
    finally:
        holder.kill()
        holder.wait()
    err = one_line(capsys.readouterr().err)
    assert err == (
        f"seed-gym eval: {out} is in use by a seed-gym process (pid {holder.pid}); "
        "wait for it to finish or use another folder"
    ), err
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]
    assert eval_main([*GUESS, "--episodes", "3", "--out", str(out)]) == 0


def test_two_evals_started_together_write_every_episode_once(tmp_path):
    # 0.3: both played every episode, leaving 24 trajectory lines for 12 episodes
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "seed_gym.cli", "eval", *GUESS, "--episodes", "12"]
    argv += ["--save-trajectories", "--out", str(out)]
    procs = [
        subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert any(rc == 0 for rc, _ in results), results
    for rc, err in results:
        if rc != 0:
            assert rc == 1 and "is in use by seed-gym eval (pid " in one_line(err), err
    assert len(lines(out / "episodes.jsonl")) == 12
    assert len(lines(out / "trajectories" / "eval.jsonl")) == 12


# --- list / check --import --------------------------------------------------------------------
BROKEN = """
import sys
sys.path.insert(0, {examples!r})
import guess_number
import seed_gym


class RaisingOracle(guess_number.GuessNumberEnv):
    env_id = "example/RaisingOracle-v0"

    def oracle_action(self):
        raise KeyError("oracle broke")


seed_gym.register(
    "example/RaisingOracle-v0", RaisingOracle, max_episode_steps=12, agent_spec=guess_number.SPEC
)
"""


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip


def test_list_import_shows_the_files_envs():
    result = cli("list", "--import", EXAMPLE)
    assert result.returncode == 0, result.stderr
    assert GUESS_ID in result.stdout.split() and "seed_gym/Sokoban-v0" in result.stdout


def test_check_import_runs_check_env_on_the_files_envs(tmp_path):
    result = cli("check", "--import", EXAMPLE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ok   {GUESS_ID} (") and len(result.stdout.splitlines()) == 1
    assert result.stderr == ""  # the example keeps every rule: no warn line
    broken = tmp_path / "broken_env.py"
    broken.write_text(BROKEN.format(examples=str(EXAMPLES)))
    result = cli("check", "--import", str(broken))
    assert result.returncode == 1
    assert f"ok   {GUESS_ID}" in result.stdout  # the file registers both
    assert result.stderr.splitlines() == [
        "FAIL example/RaisingOracle-v0: check_nothing_paid_after_the_end: KeyError: 'oracle broke'"
    ], result.stderr
    result = cli("check", "--import", str(broken), GUESS_ID)  # ENV_ID: that env only
    assert result.returncode == 0 and result.stdout.count("ok") == 1, result


def test_check_refuses_unknown_envs_and_files_that_register_none(tmp_path):
    result = cli("check", "example/Nope-v0")
    assert result.returncode == 2 and "unknown env 'example/Nope-v0'" in one_line(result.stderr)
    empty = tmp_path / "nothing.py"
    empty.write_text("x = 1\n")
    result = cli("check", "--import", str(empty))
    assert result.returncode == 2 and "registered no env" in one_line(result.stderr)
