from __future__ import annotations

import random
import re
import zlib

import numpy as np
import pytest
import torch

import seed_gym
from seed_gym.trainer.algorithms.seed.analyzer import Skill, analyzer_messages, parse_skill_json
from seed_gym.trainer.algorithms.seed.annotators import PrivilegedAnnotator
from seed_gym.trainer.algorithms.seed.stage1 import (
    accept_skill,
    answer_nll,
    balance_outcomes,
    build_stage1_rows,
    encode_row,
    micro_batches,
    read_jsonl,
    sft_train,
    split_rows,
    write_jsonl,
)
from seed_gym.trainer.trajectory import StepSample, Trajectory

ENV = "seed_gym/Sokoban-v0"
MOVES = ("up", "down", "left", "right")


# --- the acceptance rule --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("base", "base_n", "skill", "skill_n", "accepted"),
    [
        (0, 8, 1, 8, True),  # +1 success = +0.125: exactly at both thresholds
        (3, 8, 4, 8, True),
        (3, 8, 3, 8, False),  # no rise
        (8, 8, 8, 8, False),  # nothing left to gain
        (5, 8, 4, 8, False),  # the skill hurts
        (1, 16, 2, 8, True),  # +1, rate 0.0625 -> 0.25
        (2, 16, 3, 16, False),  # +1 success but only +0.0625 rate
        (0, 8, 0, 0, False),  # no reruns: nothing to accept on
    ],
)
def test_accept_skill(base, base_n, skill, skill_n, accepted):
    acc = accept_skill(base, base_n, skill, skill_n)
    assert acc.accepted is accepted
    assert acc.to_dict()["baseline_rate"] == (base / base_n if base_n else 0.0)


def test_accept_skill_rejects_bad_counts():
    with pytest.raises(ValueError, match="baseline"):
        accept_skill(9, 8, 1, 8)
    with pytest.raises(ValueError, match="with-skill"):
        accept_skill(1, 8, -1, 8)


def test_split_rows_is_seeded_and_ten_percent():
    train, val = split_rows(20, 0.1, seed=0)
    assert len(val) == 2 and len(train) == 18 and not set(train) & set(val)
    assert split_rows(20, 0.1, seed=0) == (train, val)
    assert split_rows(20, 0.1, seed=1) != (train, val)
    assert split_rows(3, 0.1, seed=0)[1] != []  # at least one validation row
    assert split_rows(1, 0.1, seed=0) == ([0], [])
    with pytest.raises(ValueError):
        split_rows(10, 1.0, seed=0)


# --- Stage 1 rows from real Sokoban episodes ------------------------------------------------------
def play(task_id: str, seed: int, moves_fn, tid: str, group: str) -> tuple[Trajectory, dict]:
    """One raw-env episode; ``moves_fn(step_index, rng)`` picks each move."""
    env = seed_gym.make(ENV, split="train")
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    privileged = env.unwrapped.privileged_info()
    traj = Trajectory(tid, group, task_id, info["task_type"], env.unwrapped.task_description, seed)
    # crc32, not hash(): str hashes change with every process (PYTHONHASHSEED), and the random
    # play of task 0 then won now and again, failing the fixture's premise
    rng = np.random.default_rng(zlib.crc32(tid.encode()))
    for i in range(15):
        move = moves_fn(i, rng)
        text = obs["text"]
        obs, reward, term, trunc, info = env.step(move)
        traj.steps.append(
            StepSample(
                [], [1], [2], [-1.0], f"<action>{move}</action>", text, move, True, float(reward)
            )
        )
        if term or trunc:
            traj.won, traj.truncated = bool(info["won"]), bool(trunc)
            break
    env.close()
    return traj, privileged


def random_moves(i, rng):
    return MOVES[int(rng.integers(4))]


def skill_follower(skill: str | None):
    """A rerun policy that replays the move list a skill names, else moves at random."""
    found = re.search(r"moves: ([a-z, ]+);", skill or "")
    plan = found.group(1).split(", ") if found else None
    return (lambda i, rng: plan[i] if i < len(plan) else "up") if plan else random_moves


@pytest.fixture(scope="module")
def base_rollouts():
    task_ids = seed_gym.task_ids(ENV, "train")[:2]
    trajs, infos = [], []
    # task 0: random play (fails); task 1: the solver's moves (already succeeds)
    for g in range(4):
        t, p = play(task_ids[0], 5, random_moves, f"b0-g{g}", "b0")
        trajs.append(t)
        infos.append(p)
    _, p1 = play(task_ids[1], 6, random_moves, "probe", "b1")
    for g in range(4):
        t, p = play(task_ids[1], 6, lambda i, rng: p1["solution"][i], f"b1-g{g}", "b1")
        trajs.append(t)
        infos.append(p)
    return trajs, infos


def report_skill_b1(trajs, infos) -> str:
    return PrivilegedAnnotator(ENV).annotate(trajs[4:5], infos[4:5])[0].skill


def test_stage1_rows_accept_helpful_skills_only(base_rollouts, tmp_path):
    trajs, infos = base_rollouts
    assert not any(t.won for t in trajs[:4]) and all(t.won for t in trajs[4:])
    calls = []

    def rerun(traj, skill, n):
        calls.append((traj.group_id, skill))
        return [
            play(traj.task_id, traj.seed, skill_follower(skill), f"r{k}", "r")[0] for k in range(n)
        ]

    report = build_stage1_rows(
        trajs, PrivilegedAnnotator(ENV), rerun, env_id=ENV, privileged=infos, reruns=4
    )
    assert report.n_trajectories == 8 and report.n_annotated == 8
    # task 0: the solver's plan turns 0/4 into 4/4 -> accepted; task 1 was already 4/4 -> rejected
    assert report.n_accepted == 4
    assert {r["provenance"]["group_id"] for r in report.rows} == {"b0"}
    # a (group, skill text) pair is rerun once: b1's four identical success skills share one rerun
    assert len(calls) == len(set(calls))
    assert [c for c in calls if c[0] == "b1"] == [("b1", report_skill_b1(trajs, infos))]
    row = report.rows[0]
    assert row["messages"] == analyzer_messages(trajs[0])
    assert parse_skill_json(row["completion"])["episode_skill"].startswith("Avoid this mistake")
    prov = row["provenance"]
    assert prov["annotator"] == "privileged" and prov["env_id"] == ENV
    assert (
        prov["traj_id"] == "b0-g0" and prov["task_id"] == trajs[0].task_id and prov["won"] is False
    )
    assert prov["acceptance"] == {
        "baseline_successes": 0,
        "baseline_n": 4,
        "skill_successes": 4,
        "skill_n": 4,
        "accepted": True,
        "baseline_rate": 0.0,
        "skill_rate": 1.0,
    }
    assert report.metrics()["stage1/accepted_rate"] == 0.5
    path = write_jsonl(report.rows, tmp_path / "stage1" / "rows.jsonl")
    assert read_jsonl(path) == report.rows
    # baseline="rerun" plays the no-skill baseline instead of reusing the group
    calls.clear()
    again = build_stage1_rows(
        trajs[:4],
        PrivilegedAnnotator(ENV),
        rerun,
        env_id=ENV,
        privileged=infos[:4],
        reruns=4,
        baseline="rerun",
    )
    assert ("b0", None) in calls and again.n_accepted == 4


def test_stage1_keeps_every_parsed_annotation_without_the_filter(base_rollouts):
    # the reference's card pipeline: no reruns, a row for every annotated trajectory, each
    # labelled by its outcome (the annotator is told it: a workflow for a win, a rule for a loss)
    trajs, infos = base_rollouts
    report = build_stage1_rows(trajs, PrivilegedAnnotator(ENV), None, env_id=ENV, privileged=infos)
    assert report.n_accepted == 8 and report.reruns == 0 and len(report.rows) == 8
    for row, t in zip(report.rows, trajs, strict=True):
        assert row["provenance"]["won"] == t.won and row["provenance"]["acceptance"] is None
        skill = parse_skill_json(row["completion"])["episode_skill"]
        assert skill.startswith("Avoid this mistake") != t.won
    m = report.metrics()
    assert m["stage1/won_rows"] == 4 and m["stage1/lost_rows"] == 4


def test_balance_outcomes_repeats_the_rarer_side():
    rows = [{"provenance": {"won": i < 3, "i": i}} for i in range(10)]
    kept = balance_outcomes(rows, seed=0)
    assert kept[:10] == rows  # every row, then the repeats
    won = [r["provenance"]["i"] for r in kept if r["provenance"]["won"]]
    assert len(won) == 7 and len(kept) == 14 and sorted(set(won)) == [0, 1, 2]
    assert max(won.count(i) for i in range(3)) - min(won.count(i) for i in range(3)) <= 1
    assert kept == balance_outcomes(rows, seed=0) and kept != balance_outcomes(rows, seed=1)
    one_side = [{"provenance": {"won": False}}] * 4
    assert balance_outcomes(one_side, seed=0) == one_side
    even = [{"provenance": {"won": i % 2 == 0}} for i in range(4)]
    assert balance_outcomes(even, seed=0) == even


# --- SFT on the tiny policy -----------------------------------------------------------------------
@pytest.fixture()
def policy():
    from seed_gym.trainer.backends.models import load_policy

    return load_policy("tiny", seed=1)


def small_rows(n: int = 10) -> list[dict]:
    rows = []
    for i in range(n):
        won = i % 2 == 0
        task = f"push box {i}"
        skill = Skill(
            f"The agent {'solved' if won else 'failed'} {task}.",
            "Push the box right then up." if won else "Do not push the box into a corner.",
        )
        rows.append(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": f"Task description: {task}\nepisode_success: "
                        f"{'success' if won else 'failure'}",
                    }
                ],
                "completion": skill.to_json(),
            }
        )
    return rows


def test_loss_counts_only_the_answer_tokens(policy):
    row = small_rows(1)[0]
    prompt, answer = encode_row(policy.tokenizer, row)
    assert answer[-1] == policy.eos_id
    assert policy.tokenizer.decode(answer[:-1]) == row["completion"]
    loss = answer_nll(policy.model, [(prompt, answer)], pad_id=policy.pad_id)
    with torch.no_grad():
        logits = policy.model(input_ids=torch.tensor([prompt + answer])).logits[0]
    logp = torch.log_softmax(logits.float(), -1)[len(prompt) - 1 : -1]
    manual = -logp.gather(-1, torch.tensor(answer)[:, None]).mean()
    torch.testing.assert_close(loss.detach(), manual, atol=1e-5, rtol=1e-5)


def test_sft_train_lowers_train_and_val_loss(policy):
    seen = []
    policy.model.eval()
    result = sft_train(
        policy.model,
        policy.tokenizer,
        small_rows(10),
        epochs=3,
        lr=1e-2,
        batch_size=3,
        log_fn=seen.append,
    )
    assert result.n_train == 9 and result.n_val == 1 and result.skipped == 0
    assert len(result.train_losses) == 9 and len(result.epoch_losses) == 3
    assert len(result.val_losses) == 4  # before training and after each epoch
    assert result.epoch_losses[-1] < result.epoch_losses[0]
    assert result.val_losses[-1] < result.val_losses[0]
    assert {"sft/loss", "sft/epoch"} <= set(seen[1]) and "sft/val_loss" in seen[0]
    assert policy.model.training is False  # the caller's mode is restored


def test_micro_batches_group_rows_by_prompt_and_cover_every_row_once():
    # 24 rows of three kinds, shuffled: grouped micro-batches of 4 hold one kind each
    kinds = [[1, 2, 3], [1, 2, 4], [9, 9]]
    prompts = [kinds[i % 3] + [i] for i in range(24)]
    grouped = micro_batches(prompts, 4, random.Random(0))
    assert sorted(i for b in grouped for i in b) == list(range(24))
    assert all(len(b) == 4 and len({i % 3 for i in b}) == 1 for b in grouped)
    assert grouped == micro_batches(prompts, 4, random.Random(0))  # seeded
    assert grouped != micro_batches(prompts, 4, random.Random(1))
    plain = micro_batches(prompts, 4, random.Random(0), group=False)
    assert sorted(i for b in plain for i in b) == list(range(24))
    assert any(len({i % 3 for i in b}) > 1 for b in plain)
    # a partial last batch stays (7 rows, batches of 3: 3 + 3 + 1)
    assert sorted(len(b) for b in micro_batches(prompts[:7], 3, random.Random(0))) == [1, 3, 3]


def test_sft_skips_rows_over_max_length_and_handles_empty(policy):
    result = sft_train(policy.model, policy.tokenizer, small_rows(2), epochs=1, max_length=10)
    assert result.skipped == 2 and result.train_losses == [] and result.n_train == 0
