from __future__ import annotations

import json

import pytest

from seed_gym.trainer.algorithms.seed.analyzer import (
    SKILL_INSTRUCTIONS,
    Skill,
    SkillParseError,
    analyze,
    analyzer_messages,
    analyzer_prompt,
    decisive_steps,
    parse_rate,
    parse_skill_json,
)
from seed_gym.trainer.trajectory import StepSample, Trajectory


def step(obs: str, resp: str, action: str | None, *, reward: float = 0.0) -> StepSample:
    return StepSample(
        messages=[{"role": "user", "content": obs}],
        prompt_ids=[1, 2],
        response_ids=[3],
        old_logprobs=[-1.0],
        response_text=resp,
        observation=obs,
        action=action,
        valid=action is not None,
        reward=reward if action is not None else -0.1,
        penalty=0.0 if action is not None else 0.1,
    )


def traj(steps: list[StepSample], *, won: bool, tid: str = "it0-b0-g0") -> Trajectory:
    return Trajectory(
        traj_id=tid,
        group_id="it0-b0",
        task_id="t0",
        task_type="pick",
        task="put a clean mug in the coffeemachine",
        seed=0,
        steps=steps,
        won=won,
    )


GOOD = {
    "episode_summary": "The agent cleaned the mug.",
    "episode_skill": "Clean the mug at the sinkbasin before placing it.",
}


# --- rendering ------------------------------------------------------------------------------------
def test_prompt_layout_exact():
    t = traj(
        [
            step(
                "You are in a room.",
                "<think>a</think><action>go to sinkbasin 1</action>",
                "go to sinkbasin 1",
            ),
            step("On the sinkbasin 1 you see a mug 1.", "garbage", None),
        ],
        won=False,
    )
    prompt = analyzer_prompt(t)
    assert prompt.startswith("Analyze the following agent episode and return ONLY valid JSON")
    assert prompt == (
        "Analyze the following agent episode and return ONLY valid JSON with exactly two string "
        'fields:\n{"episode_summary": "...", "episode_skill": "..."}\n'
        '- "episode_summary": one or two sentences on what the agent did and how the episode '
        "ended.\n"
        '- "episode_skill": the episode failed, so give a failure-avoidance rule: the core '
        "mistake, the warning signs that show it happening, and what to do instead, as an "
        "instruction for the agent (at least 5 words).\n"
        "Write nothing before or after the JSON object.\n\n"
        "Task description: put a clean mug in the coffeemachine\n"
        "episode_success: failure\n\n"
        "Step 1\nObservation: You are in a room.\n"
        "Response: <think>a</think><action>go to sinkbasin 1</action>\nAction valid: true\n\n"
        "Step 2\nObservation: On the sinkbasin 1 you see a mug 1.\nResponse: garbage\nAction valid: false"
    )
    assert '"episode_summary"' in prompt and '"episode_skill"' in prompt
    t.won = True
    won = analyzer_prompt(t)  # the instruction follows the outcome, as the reference's
    assert "episode_success: success\n" in won and SKILL_INSTRUCTIONS[True] in won
    assert SKILL_INSTRUCTIONS[False] not in won and "reusable workflow" in won
    msgs = analyzer_messages(t)
    assert msgs == [{"role": "user", "content": analyzer_prompt(t)}]


def test_decisive_steps():
    t = traj(
        [
            step("o", "r", "look"),
            step("o", "r", None),  # invalid
            step("o", "r", "look"),  # first repeat
            step("o", "r", "look"),  # further repeats are not new information
            step("o", "r", "take mug", reward=10.0),
        ],
        won=True,
    )
    assert decisive_steps(t) == [1, 2, 4]


def test_truncation_keeps_task_end_and_decisive_steps():
    steps = [
        step(f"observation number {i} " + "x" * 200, f"response {i}", f"go to place {i}")
        for i in range(40)
    ]
    steps[7] = step("the decisive one " + "x" * 200, "bad output", None)
    t = traj(steps, won=False)
    full = analyzer_prompt(t, max_prompt_tokens=None)
    short = analyzer_prompt(t, max_prompt_tokens=1200)
    assert len(short) < len(full)
    assert len(short) // 4 <= 1200 + 10  # approx_tokens is the default counter
    assert "Task description: put a clean mug in the coffeemachine" in short
    assert "episode_success: failure" in short
    for i in (1, 8, 38, 39, 40):  # first, the invalid step, the last three
        assert f"Step {i}\n" in short
    assert "steps omitted) ..." in short
    # kept steps stay in order
    positions = [short.index(f"Step {i}\n") for i in (1, 8, 38, 39, 40)]
    assert positions == sorted(positions)


def test_truncation_clips_a_huge_last_step():
    t = traj([step("y" * 20000, "z" * 20000, "look")], won=False)
    short = analyzer_prompt(t, max_prompt_tokens=800)
    assert "Step 1\n" in short and "...[truncated]..." in short
    assert len(short) < 5000


def test_truncation_with_a_real_token_counter():
    t = traj([step("word " * 100, "resp", f"a{i}") for i in range(30)], won=True)
    counter = lambda s: len(s.split())  # noqa: E731 - any callable str -> int works
    short = analyzer_prompt(t, max_prompt_tokens=700, count_tokens=counter)
    assert counter(short) <= 700
    assert "Step 30\n" in short


# --- parsing --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        json.dumps(GOOD),
        "```json\n" + json.dumps(GOOD, indent=2) + "\n```",
        "Sure! Here is the analysis:\n" + json.dumps(GOOD) + "\nHope this helps.",
        '{"episode_summary": "The agent cleaned the mug.", "episode_skill": "Clean the mug at the sinkbasin before placing it.",}',
        "{'episode_summary': 'The agent cleaned the mug.', 'episode_skill': 'Clean the mug at the sinkbasin before placing it.'}",
        '{"episode_summary": "The agent cleaned\nthe mug.", "episode_skill": "Clean the mug at the sinkbasin before placing it."}',
        "{\u201cepisode_summary\u201d: \u201cThe agent cleaned the mug.\u201d, \u201cepisode_skill\u201d: \u201cClean the mug at the sinkbasin before placing it.\u201d}",
        '```\n{"episode_summary": "The agent cleaned the mug.",\n "episode_skill": "Clean the mug at the sinkbasin before placing it.",\n}\n```',
    ],
)
def test_lenient_parsing(text):
    out = parse_skill_json(text)
    assert out["episode_skill"] == GOOD["episode_skill"]
    assert out["episode_summary"] == GOOD["episode_summary"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("no json here", "no JSON object"),
        ('{"episode_summary": "x"}', 'missing field "episode_skill"'),
        ('{"episode_summary": "x", "episode_skill": "too short rule"}', "needs at least 5"),
        ('{"episode_summary": 3, "episode_skill": "one two three four five"}', "must be a string"),
        (
            '{"episode_summary": "x", "episode_skill": ["a", "b", "c", "d", "e"]}',
            "must be a string",
        ),
        ('{"episode_summary": "x" "episode_skill": "a b c d e"', "no JSON object"),
    ],
)
def test_parse_errors_are_clear(text, message):
    with pytest.raises(SkillParseError, match=message):
        parse_skill_json(text)


def test_braces_inside_strings_do_not_confuse_the_scanner():
    text = 'prefix {"episode_summary": "used {curly} text", "episode_skill": "Never type } in the search box again."} suffix'
    assert parse_skill_json(text)["episode_summary"] == "used {curly} text"


# --- analyze: batching and the one retry ----------------------------------------------------------
class Scripted:
    """A generate_fn that answers from a fixed script and records what it was asked."""

    def __init__(self, rounds: list[list[str]]):
        self.rounds = rounds
        self.calls: list[list[list[dict]]] = []

    def __call__(self, chats):
        self.calls.append(chats)
        return self.rounds[len(self.calls) - 1]


def test_analyze_batches_and_retries_once_quoting_the_error():
    ts = [traj([step("o", "r", "look")], won=i == 0, tid=f"it0-b0-g{i}") for i in range(3)]
    gen = Scripted(
        [
            [json.dumps(GOOD), "not json", '{"episode_summary": "s", "episode_skill": "short"}'],
            [json.dumps(GOOD), "still not json"],
        ]
    )
    stats: dict = {}
    failures: dict = {}
    skills = analyze(ts, gen, stats=stats, failures=failures)
    # only the analysis that failed twice is a failure, with its last answer and why
    assert list(failures) == ["it0-b0-g2"]
    assert failures["it0-b0-g2"]["answer"] == "still not json"
    assert "no JSON object found" in failures["it0-b0-g2"]["error"]
    assert len(gen.calls) == 2 and len(gen.calls[0]) == 3 and len(gen.calls[1]) == 2
    retry_chat = gen.calls[1][0]
    assert [m["role"] for m in retry_chat] == ["user", "assistant", "user"]
    assert retry_chat[1]["content"] == "not json"
    assert "no JSON object found" in retry_chat[2]["content"]
    assert "needs at least 5" in gen.calls[1][1][2]["content"]
    assert isinstance(skills[0], Skill) and not skills[0].retried
    assert skills[0].traj_id == "it0-b0-g0"
    assert skills[1] is not None and skills[1].retried and skills[1].traj_id == "it0-b0-g1"
    assert skills[2] is None
    assert stats["analyzer/parse_rate"] == pytest.approx(2 / 3)
    assert stats["analyzer/first_try_rate"] == pytest.approx(1 / 3)
    assert stats["analyzer/retries"] == 2
    assert parse_rate(skills) == pytest.approx(2 / 3)


def test_analyze_without_retry_and_empty_batch():
    gen = Scripted([["nope"]])
    assert analyze([traj([], won=False)], gen, retry=False) == [None]
    assert len(gen.calls) == 1
    assert analyze([], Scripted([])) == []


def test_analyze_rejects_a_wrong_number_of_answers():
    with pytest.raises(ValueError, match="returned 1 answers for 2"):
        analyze([traj([], won=False), traj([], won=True)], Scripted([["x"]]))


def test_skill_to_json_roundtrip():
    s = Skill("sum", "Always open the fridge before taking food.")
    assert parse_skill_json(s.to_json()) == {"episode_summary": "sum", "episode_skill": s.skill}


def test_analyze_with_the_tiny_policy_runs_greedy_and_is_deterministic():
    from seed_gym.tools.chat_generate import hf_generate_fn
    from seed_gym.trainer.backends.models import load_policy

    policy = load_policy("tiny")
    gen = hf_generate_fn(policy.model, policy.tokenizer, max_new_tokens=12)
    ts = [traj([step("o", "r", "look")], won=True, tid=f"t{i}") for i in range(2)]
    stats: dict = {}
    first = analyze(ts, gen, stats=stats, max_prompt_tokens=512)
    assert first == [None, None]  # a random model writes no JSON; no crash, no signal
    assert stats["analyzer/parse_rate"] == 0.0 and stats["analyzer/retries"] == 2
    a = gen([analyzer_messages(ts[0])])
    assert a == gen([analyzer_messages(ts[0])])


# --- structured decoding ------------------------------------------------------------------------
def test_skeleton_is_what_the_sft_targets_write():
    from seed_gym.trainer.algorithms.seed.analyzer import Skill, skeleton_pieces

    a, b, c = skeleton_pieces()
    assert Skill("S x", "K y").to_json() == f"{a}S x{b}K y{c}"


@pytest.mark.parametrize(
    ("text", "trimmed"),
    [
        ("go up, go up, go up, go up, then left", "go up, go up,"),
        ("up up up up up", "up up"),
        ("Push the box right, then go up.", "Push the box right, then go up."),
        ("a b c a b c a b c a b c", "a b c a b c"),
    ],
)
def test_trim_repetition(text, trimmed):
    from seed_gym.trainer.algorithms.seed.analyzer import trim_repetition

    assert trim_repetition(text) == trimmed


class LoopingEngine:
    """An engine whose every answer loops ("up, up, up, ...") and never closes its quote, the
    failure seen on SmolLM2; records the prompts it got."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.prompts = []

    def generate(self, prompts, *, max_new_tokens, temperature, stop, seed, no_repeat_ngram):
        from seed_gym.trainer.backends.engines import Generation

        assert temperature == 0.0 and stop == ('"',) and no_repeat_ngram > 0
        self.prompts.append([self.tokenizer.decode(p) for p in prompts])
        return [Generation([1], [0.0], "The agent went " + "up, " * 50) for _ in prompts]


def test_structured_answers_parse_even_when_the_model_loops():
    from seed_gym.trainer.algorithms.seed.analyzer import structured_generate_fn
    from seed_gym.trainer.backends.models import tiny_tokenizer

    engine = LoopingEngine(tiny_tokenizer())
    t = traj([step("obs", "<think>a</think><action>up</action>", "up")], won=False)
    skills = analyze([t, t], structured_generate_fn(engine, max_new_tokens=64), stats=(st := {}))
    assert st["analyzer/parse_rate"] == 1.0
    assert skills[0].skill == "The agent went up, up,"  # the loop is cut after two copies
    # two prefill rounds: up to the summary's opening quote, then the skill's
    first, second = engine.prompts
    assert first[0].endswith('{"episode_summary": "')
    assert second[0].endswith('{"episode_summary": "The agent went up, up,", "episode_skill": "')


def test_structured_answers_from_a_real_model_are_json(tiny_policy):
    import json

    from seed_gym.trainer.algorithms.seed.analyzer import SKILL_FIELDS, structured_generate_fn
    from seed_gym.trainer.backends.engines import HFEngine

    engine = HFEngine(tiny_policy.model, tiny_policy.tokenizer)
    t = traj([step("obs", "<think>a</think><action>up</action>", "up")], won=True)
    answers = structured_generate_fn(engine, max_new_tokens=12)([analyzer_messages(t)] * 3)
    for a in answers:  # a random model's fields are noise, but the answer is always JSON
        assert sorted(json.loads(a)) == sorted(SKILL_FIELDS)


def test_no_repeat_ngram_bans_repeated_ngrams(tiny_policy):
    from seed_gym.trainer.backends.engines import HFEngine

    engine = HFEngine(tiny_policy.model, tiny_policy.tokenizer)
    chats = [[{"role": "user", "content": "say something"}]] * 2
    for g in engine.generate(chats, max_new_tokens=40, temperature=0.0, no_repeat_ngram=2):
        bigrams = list(zip(g.ids, g.ids[1:], strict=False))
        assert len(bigrams) == len(set(bigrams))


@pytest.fixture(scope="module")
def tiny_policy():
    from seed_gym.trainer.backends.models import load_policy

    return load_policy("tiny", seed=0)


def test_structured_answers_are_the_same_with_the_chat_prefilled_once(tiny_policy, monkeypatch):
    from seed_gym.trainer.algorithms.seed.analyzer import structured_generate_fn
    from seed_gym.trainer.backends.engines import HFEngine

    engine = HFEngine(tiny_policy.model, tiny_policy.tokenizer)
    chats = [
        analyzer_messages(
            traj([step(f"obs {k}", "<think>a</think><action>up</action>", "up")], won=bool(k % 2))
        )
        for k in range(3)
    ]
    once = structured_generate_fn(engine, max_new_tokens=10)(chats)
    monkeypatch.setattr(HFEngine, "supports_prompt_kv", False)
    twice = structured_generate_fn(engine, max_new_tokens=10)(chats)
    assert once == twice


def test_a_random_model_writes_parseable_skills_under_structured_decoding(tiny_policy):
    # the closing quote and blanks are banned below a field's words, loops are banned, and when
    # the budget left is short only new words may follow: every answer of the random model parses
    from seed_gym.trainer.algorithms.seed.analyzer import structured_generate_fn
    from seed_gym.trainer.backends.engines import HFEngine

    engine = HFEngine(tiny_policy.model, tiny_policy.tokenizer)
    chats = [
        analyzer_messages(traj([step(f"obs {k}", f"<think>{k}</think>", None)], won=k % 3 == 0))
        for k in range(12)
    ]
    for budget in (8, 32):
        answers = structured_generate_fn(engine, max_new_tokens=budget)(chats)
        for a in answers:
            fields = parse_skill_json(a)
            assert len(fields["episode_skill"].split()) >= 5 and fields["episode_summary"]


def test_loop_starts_and_vocabulary_roles(tiny_policy):
    from seed_gym.trainer.algorithms.seed.analyzer import loop_starts, vocabulary_roles

    assert loop_starts([5, 7, 7]) == [7]  # "7 7" -> a third 7 would loop
    assert loop_starts([1, 2, 1, 2]) == [1]  # "1 2 1 2" -> a third "1 2"
    assert loop_starts([1, 2, 3]) == [] and loop_starts([]) == []
    tok = tiny_policy.tokenizer
    roles = vocabulary_roles(tok)
    quote = tok('"', add_special_tokens=False)["input_ids"]
    assert set(quote) <= set(roles["closing"])
    space = tok(" ", add_special_tokens=False)["input_ids"]
    assert set(space) <= set(roles["blank"])
    for i in range(len(tok)):
        text = tok.decode([i])
        starts_word = i not in roles["not_word_start"]
        assert starts_word == (text[:1].isspace() and bool(text.strip()) and '"' not in text)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Avoid this mistake: the formula missed 12; warning sign: a sum of 7.", "avoidance"),
        ("Do not append '+' when the cards are 3 and 4; multiply instead.", "avoidance"),
        ("To build 12, repeat the workflow that worked: 3, *, 4, =.", "workflow"),
        ("Push the box up twice, then left, to reach the target.", "workflow"),
    ],
)
def test_skill_kind(text, kind):
    from seed_gym.trainer.algorithms.seed.analyzer import skill_kind

    assert skill_kind(text) == kind


def test_kind_shares_count_lost_avoidance_and_won_workflow():
    from seed_gym.trainer.algorithms.seed.analyzer import kind_shares

    won, lost = traj([], won=True), traj([], won=False)
    skills = [Skill("s", "repeat the workflow that worked: a b c"),
              Skill("s", "Avoid this mistake: looping; instead go left"),
              Skill("s", "repeat the workflow that worked: a b c"), None]  # fmt: skip
    shares = kind_shares([won, lost, lost, lost], skills)
    assert shares == {"analyzer/avoidance_share_lost": 0.5, "analyzer/workflow_share_won": 1.0}
    assert kind_shares([won], [None]) == {}
