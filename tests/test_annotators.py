from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pytest
from conftest import import_example

import seed_gym
from seed_gym.trainer.algorithms.seed.analyzer import analyzer_messages, parse_skill_json
from seed_gym.trainer.algorithms.seed.annotators import OpenAIAnnotator, PrivilegedAnnotator
from seed_gym.trainer.trajectory import StepSample, Trajectory
from seed_gym.wrappers.spec import AgentSpec, parse_think_action

guess_number = import_example()


def step(obs: str, action: str | None, reward: float = 0.0) -> StepSample:
    resp = f"<think>x</think><action>{action}</action>" if action else "babble"
    return StepSample(
        messages=[],
        prompt_ids=[1],
        response_ids=[2],
        old_logprobs=[-1.0],
        response_text=resp,
        observation=obs,
        action=action,
        valid=action is not None,
        reward=reward if action else -0.1,
    )


def traj(
    task: str, actions: list[str | None], *, won: bool, tid: str = "t0", obs: str = "o"
) -> Trajectory:
    return Trajectory(
        tid, "g0", "task0", "type", task, 0, steps=[step(obs, a) for a in actions], won=won
    )


def real_privileged(env_id: str, seed: int) -> tuple[str, dict]:
    env = seed_gym.make(env_id, split="train")
    try:
        env.reset(seed=seed)
        return env.unwrapped.task_description, env.unwrapped.privileged_info()
    finally:
        env.close()


# --- privileged annotator -------------------------------------------------------------------------
def test_sokoban_success_and_failure_from_the_real_solver():
    task, info = real_privileged("seed_gym/Sokoban-v0", 3)
    assert info["solution"]
    ann = PrivilegedAnnotator("seed_gym/Sokoban-v0")
    won = traj(task, info["solution"], won=True, tid="win")
    lost = traj(task, ["up", "up", "up", "up"], won=False, tid="loss")
    s_won, s_lost = ann.annotate([won, lost], [info, info])
    assert s_won.traj_id == "win" and s_lost.traj_id == "loss"
    plan = ", ".join(info["solution"])
    assert s_won.skill.startswith(
        "To push every box onto a target, repeat the workflow that worked:"
    )
    assert (
        f"a shortest solution from the start is {len(info['solution'])} moves: {plan}"
        in s_won.skill
    )
    assert s_lost.skill.startswith(
        "Avoid this mistake: the agent repeated 'up' 4 times without progress"
    )
    assert "Instead, a shortest solution" in s_lost.skill
    assert (
        s_lost.summary == f"The agent failed the task '{task}' in 4 steps with 0 invalid outputs."
    )
    for s in (s_won, s_lost):  # what Stage 1 trains on must parse under the analyzer's rules
        assert parse_skill_json(s.to_json())["episode_skill"] == s.skill
    assert ann.annotate([lost], [info]) == [s_lost]  # deterministic


def test_ezpoints_from_the_real_env():
    task, info = real_privileged("seed_gym/EZPoints-v0", 3)
    (s,) = PrivilegedAnnotator("seed_gym/EZPoints-v0").annotate(
        [traj(task, [None, None, "3"], won=False)], [info]
    )
    assert "most outputs were not valid actions" in s.skill
    assert (
        f"append '{info['solution']}' one token per step, using each card value exactly once"
        in s.skill
    )
    assert info["cards"][0] in s.skill
    assert "'=', using" not in s.skill or info["solution"].endswith("=")


def test_webshop_goal_phrasing():
    info = {
        "query": "red running shoes",
        "attributes": ["lightweight", "non-slip"],
        "options": {"size": "9", "color": "red"},
        "price_upper": 50.0,
        "target_asin": "B000",
    }
    (s,) = PrivilegedAnnotator("seed_gym/WebShop-v0").annotate(
        [traj("buy red shoes", ["search[shoes]", "click[B111]", "click[buy now]"], won=False)],
        [info],
    )
    assert s.skill == (
        "Avoid this mistake: the actions taken did not reach the goal; warning sign: steps that do not "
        "bring the goal closer. Instead, search for 'red running shoes', open an item whose page shows "
        "lightweight, non-slip, click the options size: 9, color: red, check the price is below 50.0, "
        "then click buy now."
    )


def test_search_names_the_answer_only_when_the_agent_saw_it():
    info = {
        "golden_answers": ["Ada Lovelace"],
        "supporting_docs": [{"id": "d1", "title": "Analytical Engine", "text": "..."}],
        "oracle_queries": ["first computer program author"],
    }
    ann = PrivilegedAnnotator("seed_gym/SearchQA-v0")
    unseen = traj(
        "who wrote the first program?", ["search[x]"], won=False, obs="Doc 1: Babbage built it"
    )
    seen = traj(
        "who wrote the first program?", ["search[x]"], won=False, obs="Doc 1: Ada Lovelace wrote"
    )
    (a,), (b,) = ann.annotate([unseen], [info]), ann.annotate([seen], [info])
    assert "Ada Lovelace" not in a.skill and "answer only with the exact entity" in a.skill
    assert "answer 'Ada Lovelace' as soon as a document states it" in b.skill
    assert "search for 'first computer program author'" in a.skill
    assert "the document titled 'Analytical Engine' holds the answer" in a.skill


def test_generic_template_and_phrasing_hook():
    info = {"expert_plan": ["go to fridge 1", "open fridge 1", "take egg 1 from fridge 1"]}
    (s,) = PrivilegedAnnotator("my/UnknownEnv-v0").annotate(
        [traj("cool an egg", ["look"], won=True)], [info]
    )
    assert s.skill == (
        "To cool an egg, repeat the workflow that worked: look. In general, the reference expert plan "
        "is: go to fridge 1, open fridge 1, take egg 1 from fridge 1."
    )
    # an env's own clause comes from its agent spec (no trainer edit): a user env registers one
    spec = AgentSpec(
        render=lambda ctx: "", parse=parse_think_action, history=0,
        hindsight=lambda info, t: f"press the {info['button']} button",
    )  # fmt: skip
    seed_gym.register(
        "test/MyEnv-v0", guess_number.GuessNumberEnv, max_episode_steps=3, agent_spec=spec
    )
    (s,) = PrivilegedAnnotator("test/MyEnv-v0").annotate(
        [traj("open the door", [], won=False)], [{"button": "green"}]
    )
    assert s.skill == (
        "Avoid this mistake: the agent never took an action; warning sign: ending a step without "
        "an action. Instead, press the green button."
    )
    # ALFWorld's hook reads the expert plan
    (s,) = PrivilegedAnnotator("seed_gym/ALFWorld-v0").annotate(
        [traj("cool an egg", ["look"] * 3, won=False)], [info]
    )
    assert "Instead, the expert order of actions is: go to fridge 1, open fridge 1" in s.skill


def test_privileged_annotator_input_errors():
    ann = PrivilegedAnnotator("seed_gym/Sokoban-v0")
    with pytest.raises(ValueError, match="needs privileged_info"):
        ann.annotate([traj("t", [], won=False)])
    with pytest.raises(ValueError, match="1 trajectories but 2"):
        ann.annotate([traj("t", [], won=False)], [{}, {}])
    # no privileged info at all still yields a valid skill from the trajectory alone, with a warning
    with pytest.warns(UserWarning, match=r"privileged_info\(\) is empty"):
        (s,) = ann.annotate([traj("t", ["up"], won=False)], [{}])
    assert s is not None and len(s.skill.split()) >= 5


# --- OpenAI-compatible endpoint, against a real local server ---------------------------------------
@pytest.fixture(scope="module")
def server():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "seed_gym.tools.openai_server",
            "--model",
            "tiny",
            "--port",
            "0",
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {proc.stderr.read()[-2000:]}")
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_server_models_and_errors(server):
    with urllib.request.urlopen(server + "/v1/models", timeout=60) as r:
        assert json.loads(r.read())["data"][0]["id"] == "tiny"
    ann = OpenAIAnnotator(server, "tiny", http_retries=0)
    with pytest.raises(RuntimeError, match="HTTP 400.*messages"):
        ann.chat([])
    bad = OpenAIAnnotator(server + "/v1", "tiny", http_retries=0, max_tokens=10**6)
    with pytest.raises(RuntimeError, match="max_tokens must be in"):
        bad.chat([{"role": "user", "content": "hi"}])


def test_server_greedy_matches_the_local_model(server):
    from seed_gym.tools.chat_generate import chat_complete
    from seed_gym.trainer.backends.models import load_policy

    chat = [{"role": "user", "content": "Your task is to: push the box. <action>"}]
    ann = OpenAIAnnotator(server, "tiny", max_tokens=16)
    remote = ann.chat(chat)
    policy = load_policy("tiny")
    (local,) = chat_complete(
        policy.model, policy.tokenizer, [chat], max_new_tokens=16, temperature=0.0
    )
    assert remote == local.text
    assert ann.chat(chat) == remote  # temperature 0 is deterministic


def test_openai_annotator_end_to_end_with_retry(server):
    trajs = [traj("push the box", ["up", "left"], won=i == 0, tid=f"t{i}") for i in range(2)]
    ann = OpenAIAnnotator(server, "tiny", max_tokens=8, workers=2, max_prompt_tokens=400)
    skills = ann.annotate(trajs)
    # the random tiny model writes no JSON: every trajectory is asked twice and gets no skill
    assert skills == [None, None]
    assert ann.stats["analyzer/parse_rate"] == 0.0 and ann.stats["analyzer/retries"] == 2
    assert ann.failures == 0
    assert len(analyzer_messages(trajs[0])) == 1


def test_unreachable_endpoint_counts_failures_and_yields_none():
    ann = OpenAIAnnotator("http://127.0.0.1:9", "x", http_retries=0, timeout=5)
    assert ann.annotate([traj("t", ["up"], won=False)]) == [None]
    assert ann.failures == 2  # the first try and the analyzer's retry
    assert ann.url == "http://127.0.0.1:9/v1/chat/completions"


def test_static_skill_bank(tmp_path):
    from seed_gym.trainer.algorithms.seed.annotators import StaticSkillAnnotator

    bank = {
        "pick": "Take the object before going to the target.",
        "*": "Check the goal before every action.",
    }
    path = tmp_path / "bank.json"
    path.write_text(json.dumps(bank))
    ann = StaticSkillAnnotator.from_json(str(path))
    a, b = traj("t", ["look"], won=False, tid="a"), traj("t", ["look"], won=True, tid="b")
    b.task_type = "pick"
    sa, sb = ann.annotate([a, b])
    assert sa.skill == bank["*"] and sb.skill == bank["pick"] and sb.traj_id == "b"
    assert StaticSkillAnnotator({"pick": bank["pick"]}).annotate([a]) == [None]
    with pytest.raises(Exception, match="at least 5"):
        StaticSkillAnnotator({"x": "too short"})
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="skill bank"):
        StaticSkillAnnotator.from_json(str(path))
