"""The vision-language path with the tiny LLaVA-style policy (random CLIP tower + tiny Llama).

Image observations (Sokoban and EZPoints with ``modality="image"``) go through the engine as pixel
values, the loss and SEED's rescoring see the same pictures, and ``--preset tiny-vlm`` trains.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import checkpoint_params  # noqa: E402

import seed_gym  # noqa: E402
from seed_gym.images import IMAGE_PLACEHOLDER as IMAGE_TOKEN  # noqa: E402
from seed_gym.trainer.algorithms.seed.rescore import teacher_logprobs  # noqa: E402
from seed_gym.trainer.backends.engines import HFEngine  # noqa: E402
from seed_gym.trainer.backends.image_inputs import encode_image_prompt, image_inputs  # noqa: E402
from seed_gym.trainer.backends.logprobs import response_logprobs  # noqa: E402
from seed_gym.trainer.backends.models import load_policy, save_policy  # noqa: E402
from seed_gym.trainer.config import TrainConfig, parse_args, tiny_vlm  # noqa: E402
from seed_gym.trainer.train import train  # noqa: E402
from seed_gym.trainer.trajectory import StepSample  # noqa: E402
from seed_gym.wrappers.skill import insert_skill  # noqa: E402

IMAGE_TOKENS = 16  # (64 // 16) ** 2 per picture


@pytest.fixture(scope="module")
def policy():
    torch.set_num_threads(1)
    return load_policy("tiny-vlm", seed=0)


def _image_obs(env_id: str, seed: int = 0):
    env = seed_gym.make_agent_env(env_id, split="train", modality="image")
    obs, _ = env.reset(seed=seed)
    env.close()
    return obs


def _cfg(tmp_path, name: str, **kw) -> TrainConfig:
    base = tiny_vlm().to_dict()
    base.update(
        out=str(tmp_path / name),
        progress=False,
        tensorboard=False,
        save_hf=False,
        eval_splits=("seen",),
        eval_tasks=1,
    )
    base.update(kw)
    return TrainConfig.from_dict(base)


def test_prompt_has_one_block_of_image_tokens_per_picture(policy):
    obs = _image_obs("seed_gym/Sokoban-v0")
    assert len(obs["images"]) == 1
    ids = encode_image_prompt(policy.processor, obs["messages"], obs["images"])
    image_id = policy.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    assert ids.count(image_id) == IMAGE_TOKENS
    with pytest.raises(ValueError, match="placeholders"):
        encode_image_prompt(policy.processor, obs["messages"], obs["images"] * 2)
    assert image_inputs(policy.processor, [[], []]) == {}
    assert image_inputs(policy.processor, [obs["images"]])["pixel_values"].shape == (1, 3, 64, 64)


@pytest.mark.parametrize("env_id", ["seed_gym/Sokoban-v0", "seed_gym/EZPoints-v0"])
def test_engine_logprobs_equal_recomputed_ones_for_image_prompts(policy, env_id):
    obs = [_image_obs(env_id, seed) for seed in (0, 1, 2)]
    engine = HFEngine(policy.model, policy.tokenizer, max_batch=2, processor=policy.processor)
    # a text prompt in the same call: rows without pictures take no pixel values
    prompts = [o["messages"] for o in obs] + [[{"role": "user", "content": "Speak."}]]
    images = [o["images"] for o in obs] + [[]]
    gens = engine.generate(prompts, max_new_tokens=12, temperature=1.0, seed=3, images=images)
    image_id = policy.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    for g, imgs in zip(gens, images, strict=True):
        assert g.prompt_ids.count(image_id) == IMAGE_TOKENS * len(imgs)
        assert image_id not in g.ids  # never sampled
    lps, _ = response_logprobs(
        policy.model,
        [g.prompt_ids for g in gens],
        [g.ids for g in gens],
        micro_batch=3,
        pad_id=policy.pad_id,
        images=images,
        processor=policy.processor,
    )
    for g, lp in zip(gens, lps, strict=True):
        torch.testing.assert_close(lp, torch.tensor(g.logprobs), rtol=0, atol=1e-5)
    # the pictures matter: other pictures give other logprobs for the same ids
    shuffled = [images[1], images[2], images[0], []]
    other, _ = response_logprobs(
        policy.model,
        [g.prompt_ids for g in gens],
        [g.ids for g in gens],
        micro_batch=3,
        pad_id=policy.pad_id,
        images=shuffled,
        processor=policy.processor,
    )
    assert not torch.allclose(other[0], lps[0])
    # the same seed gives the same completions, whatever the batching
    again = HFEngine(policy.model, policy.tokenizer, max_batch=4, processor=policy.processor)
    regen = again.generate(prompts, max_new_tokens=12, temperature=1.0, seed=3, images=images)
    assert [g.ids for g in regen] == [g.ids for g in gens]


def test_text_policy_sees_placeholders_as_before():
    text = load_policy("tiny")
    engine = HFEngine(text.model, text.tokenizer)
    obs = _image_obs("seed_gym/Sokoban-v0")
    plain = engine.generate([obs["messages"]], max_new_tokens=4, seed=1)
    with pytest.warns(UserWarning, match="placeholders"):
        with_images = engine.generate(
            [obs["messages"]], max_new_tokens=4, seed=1, images=[obs["images"]]
        )
    assert [g.ids for g in with_images] == [g.ids for g in plain]
    with pytest.raises(ValueError, match="vision-language"):
        encode_image_prompt(None, obs["messages"], obs["images"])


def test_rescore_image_sample_with_a_skill(policy):
    obs = _image_obs("seed_gym/EZPoints-v0")
    engine = HFEngine(policy.model, policy.tokenizer, processor=policy.processor)
    (gen,) = engine.generate(
        [obs["messages"]], max_new_tokens=10, temperature=1.0, seed=0, images=[obs["images"]]
    )
    sample = StepSample(
        messages=obs["messages"],
        prompt_ids=gen.prompt_ids,
        response_ids=gen.ids,
        old_logprobs=gen.logprobs,
        response_text=gen.text,
        observation="",
        action=None,
        valid=False,
        reward=0.0,
        images=obs["images"],
    )
    skill = "Add the two card values first, then press = . <image>"
    scores = teacher_logprobs(
        policy.model,
        policy.processor,  # a VLM passes its processor
        [sample, sample],
        [skill, ""],
        verify_plain="raise",  # the plain image prompt re-encodes to the stored ids
    )
    # "" is the no-insertion control: it reproduces the engine's logprobs
    torch.testing.assert_close(scores.per_sample[1], torch.tensor(gen.logprobs), rtol=0, atol=1e-5)
    assert scores.mask[0].sum() == len(gen.ids) and scores.mask[1].sum() == 0
    assert not torch.allclose(scores.per_sample[0], scores.per_sample[1])
    assert scores.where[0] == "fallback"  # EZPoints: before "Now it's your turn"
    # the teacher prompt holds the skill text and still exactly one picture's image tokens
    teacher_msgs = insert_skill(obs["messages"], skill.replace(IMAGE_TOKEN, ""))
    teacher_ids = encode_image_prompt(policy.processor, teacher_msgs, obs["images"])
    image_id = policy.tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    assert teacher_ids.count(image_id) == IMAGE_TOKENS and len(teacher_ids) > len(gen.prompt_ids)
    # a text tokenizer cannot rescore pictures
    with pytest.raises(NotImplementedError, match="processor"):
        teacher_logprobs(policy.model, policy.tokenizer, [sample], [skill])


def test_grpo_two_iterations_on_sokoban_image_change_parameters(tmp_path, policy):
    cfg = _cfg(tmp_path, "grpo", env="seed_gym/Sokoban-v0", ent_coef=0.01)
    last = train(cfg)
    assert last["rollout/episodes"] == 4.0 and last["train/response_tokens"] > 0
    assert last["train/grad_norm"] > 0
    params = checkpoint_params(tmp_path / "grpo")
    init = load_policy("tiny-vlm", seed=cfg.seed).model.state_dict()
    changed = [k for k in init if not torch.equal(init[k], params[k])]
    assert any("vision_tower" in k for k in changed)  # gradients reach the CLIP tower
    assert any("language_model" in k for k in changed)
    lines = (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(ln)["iteration"] for ln in lines] == [1, 2]
    assert "eval/seen/success" in json.loads(lines[-1])


@pytest.mark.parametrize(
    ("env_id", "algo"),
    [("seed_gym/EZPoints-v0", "grpo"), ("seed_gym/Sokoban-v0", "seed")],
)
def test_cli_preset_trains_on_image_envs(tmp_path, env_id, algo):
    cfg = parse_args(
        ["--preset", "tiny-vlm", "--env", env_id, "--algo", algo, "--out", str(tmp_path / "r")]
        + ["--no-progress", "--no-tensorboard", "--no-save-hf", "--eval-splits", "seen"]
        + ["--eval-tasks", "1"]
    )
    assert (cfg.model, cfg.modality) == ("tiny-vlm", "image")
    m = train(cfg)
    assert m["rollout/episodes"] == 4.0 and "train/loss" in m
    if algo == "seed":  # the random model's analyses fail to parse: SEED runs as GRPO here
        assert m["analyzer/n"] == 4.0


def test_image_rescoring_inside_the_train_loop(tmp_path):
    # static-skills gives every trajectory a skill, so rescoring and OPD run on image samples
    last = train(_cfg(tmp_path, "static", env="seed_gym/EZPoints-v0", algo="static-skills"))
    assert last["opd/teacher_tokens"] > 0
    assert last["train/grad_norm"] > 0


def test_saved_vlm_reloads_with_its_processor(tmp_path, policy):
    save_policy(policy, tmp_path / "vlm")
    again = load_policy(str(tmp_path / "vlm"))
    obs = _image_obs("seed_gym/Sokoban-v0")
    ids = encode_image_prompt(again.processor, obs["messages"], obs["images"])
    assert ids == encode_image_prompt(policy.processor, obs["messages"], obs["images"])
    a = image_inputs(policy.processor, [obs["images"]])["pixel_values"]
    b = image_inputs(again.processor, [obs["images"]])["pixel_values"]
    assert torch.equal(a, b)


def test_text_policy_still_trains_on_image_observations(tmp_path):
    # the pre-VLM behaviour: a text policy sees the <image> placeholders and trains on them
    m = train(_cfg(tmp_path, "text", env="seed_gym/EZPoints-v0", model="tiny", ent_coef=0.01))
    assert m["rollout/episodes"] == 4.0 and m["train/grad_norm"] > 0
