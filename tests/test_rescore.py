from __future__ import annotations

import pytest
import torch

from seed_gym.trainer.algorithms.seed.rescore import (
    flatten_with_skills,
    mean_teacher_gap,
    teacher_inputs,
    teacher_logprobs,
)
from seed_gym.trainer.trajectory import StepSample, Trajectory
from seed_gym.wrappers.skill import SKILL_HEADER, insert_skill, skill_block

SKILL = "Clean the mug at the sinkbasin before you put it in the coffeemachine."
BLOCK = (
    "**Episode-Level Skill**\n"
    "Refer to this episode-level skill when deciding what action to take in the current episode:\n"
    f"[{SKILL}]"
)


# --- insert_skill ---------------------------------------------------------------------------------
def test_block_is_exactly_the_seed_block():
    assert skill_block(SKILL) == BLOCK
    assert skill_block("use {braces} and [brackets]").endswith("[use {braces} and [brackets]]")
    assert SKILL_HEADER.startswith("**Episode-Level Skill**\n")


def test_insert_after_an_alfworld_task_line_mid_line_marker():
    text = (
        "You are an expert agent operating in the ALFRED Embodied Environment. Your task is to: "
        "put a clean mug in coffeemachine.\nPrior to this step, you have taken 2 steps.\n"
        "Now it's your turn to take an action."
    )
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": text}]
    out, where = insert_skill(
        msgs, SKILL, ("Your task is to:",), "Now it's your turn", return_where=True
    )
    assert where == "task"
    assert out[1]["content"] == (
        "You are an expert agent operating in the ALFRED Embodied Environment. Your task is to: "
        "put a clean mug in coffeemachine.\n\n"
        + BLOCK
        + "\n\nPrior to this step, you have taken 2 steps.\n"
        "Now it's your turn to take an action."
    )
    assert msgs[1]["content"] == text  # the input is not modified
    assert out[0] == msgs[0]


def test_insert_after_a_search_question_line_at_the_end():
    msgs = [{"role": "user", "content": "Answer the question.\nYour question: who wrote Hamlet?"}]
    out, where = insert_skill(
        msgs, SKILL, ("Your task is to:", "Your question:"), return_where=True
    )
    assert where == "task"
    assert out[0]["content"] == "Answer the question.\nYour question: who wrote Hamlet?\n\n" + BLOCK


def test_blank_lines_around_the_block_are_not_doubled():
    text = "You are an expert agent playing Sokoban. Push boxes.\n\n# Rules\n- no pulling"
    out = insert_skill(
        [{"role": "user", "content": text}], SKILL, ("You are an expert agent playing Sokoban",)
    )
    assert out[0]["content"] == (
        "You are an expert agent playing Sokoban. Push boxes.\n\n"
        + BLOCK
        + "\n\n# Rules\n- no pulling"
    )


def test_earliest_marker_wins_and_later_copies_are_untouched():
    text = "Your task is to: A\nobs: Your task is to: A\nNow it's your turn"
    out = insert_skill([{"role": "user", "content": text}], SKILL, ("Your task is to:",))
    assert out[0]["content"].count(BLOCK) == 1
    assert out[0]["content"].index(BLOCK) < out[0]["content"].index("obs:")


def test_fallback_before_now_its_your_turn():
    text = "Sokoban board:\n#####\n#P_O#\n\nNow it's your turn to take an action."
    out, where = insert_skill(
        [{"role": "user", "content": text}], SKILL, ("Your task is to:",), return_where=True
    )
    assert where == "fallback"
    assert (
        out[0]["content"]
        == "Sokoban board:\n#####\n#P_O#\n\n" + BLOCK + "\n\nNow it's your turn to take an action."
    )
    # mid-line fallback marker: the block becomes its own paragraph
    out = insert_skill(
        [{"role": "user", "content": "History: none. Now it's your turn."}], SKILL, ()
    )
    assert out[0]["content"] == "History: none.\n\n" + BLOCK + "\n\nNow it's your turn."


def test_append_when_no_marker_and_assistant_messages_untouched():
    msgs = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "Your task is to: fake"},
        {"role": "user", "content": "Choose a move.\n"},
    ]
    out, where = insert_skill(
        msgs, SKILL, ("Your task is to:",), "Now it's your turn", return_where=True
    )
    assert where == "append"
    assert out[1] == msgs[1]
    assert out[2]["content"] == "Choose a move.\n\n" + BLOCK
    assert out[0] == msgs[0]


@pytest.mark.parametrize("skill", [None, ""])
def test_no_skill_inserts_nothing(skill):
    msgs = [{"role": "user", "content": "Your task is to: x"}]
    out, where = insert_skill(msgs, skill, return_where=True)
    assert out == msgs and out is not msgs and where == "none"


# --- teacher_logprobs on the tiny policy ----------------------------------------------------------
@pytest.fixture(scope="module")
def policy():
    from seed_gym.trainer.backends.models import load_policy

    return load_policy("tiny")


def make_sample(
    policy, task: str, response: str, *, tail: str = "Now it's your turn."
) -> StepSample:
    from seed_gym.trainer.backends.engines import encode_chat
    from seed_gym.trainer.backends.logprobs import response_logprobs

    messages = [{"role": "user", "content": f"You are an agent. Your task is to: {task}\n{tail}"}]
    prompt_ids = encode_chat(policy.tokenizer, messages)
    response_ids = policy.tokenizer(response, add_special_tokens=False)["input_ids"] + [
        policy.eos_id
    ]
    (old,), _ = response_logprobs(
        policy.model, [prompt_ids], [response_ids], micro_batch=1, pad_id=policy.pad_id
    )
    return StepSample(
        messages=messages,
        prompt_ids=prompt_ids,
        response_ids=response_ids,
        old_logprobs=old.tolist(),
        response_text=response,
        observation="obs",
        action="look",
        valid=True,
        reward=0.0,
    )


@pytest.fixture(scope="module")
def samples(policy):
    return [
        make_sample(
            policy,
            "put a clean mug in the coffeemachine",
            "<think> go </think> <action>go to sinkbasin 1</action>",
        ),
        make_sample(policy, "find the box", "<think> push </think> <action>right</action>"),
        make_sample(
            policy,
            "heat an egg",
            "<think> microwave </think> <action>heat egg 1 with microwave 1</action>",
        ),
    ]


def test_response_ids_identical_between_plain_and_skill_prompts(policy, samples):
    skills = [SKILL, None, "Push the box toward the target one step at a time."]
    scored, prompts, responses, where = teacher_inputs(policy.tokenizer, samples, skills)
    assert scored == [0, 2]
    assert where == ["task", "none", "task"]
    for j, i in enumerate(scored):
        assert responses[j] == samples[i].response_ids
        assert prompts[j] != samples[i].prompt_ids
        assert len(prompts[j]) > len(samples[i].prompt_ids)
        text = policy.tokenizer.decode(prompts[j])
        assert skill_block(skills[i]) in text
        # the skill prompt still ends with the generation prompt the response followed
        assert prompts[j][-3:] == samples[i].prompt_ids[-3:]


def test_empty_skill_reproduces_the_plain_logprobs_exactly(policy, samples):
    from seed_gym.trainer.backends.logprobs import response_logprobs

    plain, _ = response_logprobs(
        policy.model,
        [s.prompt_ids for s in samples],
        [s.response_ids for s in samples],
        micro_batch=2,
        pad_id=policy.pad_id,
    )
    scores = teacher_logprobs(
        policy.model, policy.tokenizer, samples, ["", "", ""], micro_batch=2, verify_plain="raise"
    )
    for i, s in enumerate(samples):
        assert torch.equal(scores.per_sample[i], plain[i])
        assert torch.equal(scores.logprobs[i, : len(s.response_ids)], plain[i])
    assert scores.mask.sum() == 0  # "" is a control, not a teacher
    assert scores.where == ["none"] * 3


def test_skill_scores_match_an_unbatched_full_forward(policy, samples):
    skills = [SKILL, None, "Push the box toward the target one step at a time."]
    scores = teacher_logprobs(
        policy.model, policy.tokenizer, samples, skills, micro_batch=2, verify_plain="raise"
    )
    _, prompts, responses, _ = teacher_inputs(policy.tokenizer, samples, skills)
    width = max(len(s.response_ids) for s in samples)
    assert scores.logprobs.shape == scores.mask.shape == (3, width)
    for j, i in enumerate([0, 2]):
        ids = torch.tensor([prompts[j] + responses[j]])
        with torch.no_grad():
            logits = policy.model(input_ids=ids).logits[0].float()  # [P + L, V]
        logp = torch.log_softmax(logits, -1)
        p = len(prompts[j])
        ref = logp[p - 1 : p - 1 + len(responses[j])].gather(
            -1, torch.tensor(responses[j])[:, None]
        )[:, 0]
        torch.testing.assert_close(scores.per_sample[i], ref, atol=1e-5, rtol=1e-5)
        k = len(responses[j])
        assert scores.mask[i, :k].eq(1).all() and scores.mask[i, k:].eq(0).all()
        # the skill context changes the scores of the same tokens
        assert not torch.allclose(scores.per_sample[i], torch.tensor(samples[i].old_logprobs))
    assert scores.per_sample[1] is None
    assert scores.mask[1].sum() == 0 and scores.logprobs[1].abs().sum() == 0


def test_micro_batch_does_not_change_results(policy, samples):
    skills = [SKILL, SKILL, SKILL]
    a = teacher_logprobs(policy.model, policy.tokenizer, samples, skills, micro_batch=1)
    b = teacher_logprobs(policy.model, policy.tokenizer, samples, skills, micro_batch=3)
    torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=1e-5)


def test_tokenization_mismatch_is_reported(policy, samples):
    bad = StepSample(**{**samples[0].__dict__, "prompt_ids": samples[0].prompt_ids[1:]})
    with pytest.raises(ValueError, match="does not give the stored prompt_ids"):
        teacher_logprobs(policy.model, policy.tokenizer, [bad], [SKILL], verify_plain="raise")
    with pytest.warns(UserWarning, match="encode_prompt"):
        teacher_logprobs(policy.model, policy.tokenizer, [bad], [SKILL])
    with pytest.raises(ValueError, match="1 samples but 2 skills"):
        teacher_logprobs(policy.model, policy.tokenizer, [bad], [SKILL, SKILL])


def test_image_samples_are_refused_clearly(policy, samples):
    img = StepSample(**{**samples[0].__dict__, "images": ["<image>"]})
    with pytest.raises(NotImplementedError, match="text-only"):
        teacher_logprobs(policy.model, policy.tokenizer, [img], [SKILL])
    # ... but an image sample without a skill is simply skipped
    out = teacher_logprobs(policy.model, policy.tokenizer, [img], [None])
    assert out.mask.sum() == 0


def test_flatten_and_mean_teacher_gap(policy, samples):
    def traj(tid, steps):
        return Trajectory(tid, "g", "t", "type", "task", 0, steps=steps)

    trajs = [traj("a", samples[:2]), traj("b", samples[2:]), traj("c", [])]
    flat, texts, owner = flatten_with_skills(trajs, [SKILL, None, SKILL])
    assert texts == [SKILL, SKILL, None] and owner == [0, 0, 1]
    scores = teacher_logprobs(policy.model, policy.tokenizer, flat, texts)
    gaps = mean_teacher_gap(flat, scores, owner, len(trajs))
    lp0, lp1 = scores.per_sample[0], scores.per_sample[1]
    expected = (
        float(lp0.sum() + lp1.sum()) - sum(samples[0].old_logprobs) - sum(samples[1].old_logprobs)
    ) / (len(lp0) + len(lp1))
    assert gaps[0] == pytest.approx(expected, abs=1e-5)
    assert gaps[1] is None and gaps[2] is None


@pytest.mark.parametrize("env_id", ["seed_gym/Sokoban-v0", "seed_gym/EZPoints-v0"])
def test_insertion_into_real_agent_prompts(env_id):
    # the card games have no task line (as the reference's templates): the skill goes right
    # before "Now it's your turn", next to where the model starts writing
    import seed_gym

    env = seed_gym.make_agent_env(env_id, split="train", modality="text")
    obs, _ = env.reset(seed=0)
    spec = env.agent_spec
    out, where = insert_skill(
        obs["messages"], SKILL, spec.task_markers, spec.fallback_marker, return_where=True
    )
    env.close()
    assert where == "fallback"
    plain = "\n".join(m["content"] for m in obs["messages"])
    text = "\n".join(m["content"] for m in out)
    assert text.count(BLOCK) == 1
    before, after = text.split(BLOCK)
    assert after.startswith("\n\nNow it's your turn") and before.endswith("\n\n")
    assert len(after) < 300  # the closing instruction only
    assert (before + after).replace("\n", "") == plain.replace("\n", "")  # nothing else changed
