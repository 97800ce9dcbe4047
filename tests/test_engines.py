"""The HF rollout engine and the trainer's logprobs agree; stop strings; padding; determinism."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_gym.trainer.backends.engines import (  # noqa: E402
    Generation,
    HFEngine,
    RolloutEngine,
    _top_p_filter,
    left_pad,
    sample_tokens,
)
from seed_gym.trainer.backends.logprobs import (  # noqa: E402
    pack,
    packed_logprobs,
    response_logprobs,
    shared_prefix_len,
)
from seed_gym.trainer.backends.models import load_policy  # noqa: E402


@pytest.fixture(scope="module")
def policy():
    torch.set_num_threads(1)
    return load_policy("tiny", seed=0)


def _chats(n):
    # different lengths, so left padding is exercised
    return [
        [{"role": "user", "content": "Your task is to: push the box " * (k + 1)}] for k in range(n)
    ]


def _full_forward_logprobs(model, prompt, response):
    """The slow reference: one unpadded forward over prompt + response, full logits."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + response])).logits[0].float()  # [P+L, V]
    lp = logits.log_softmax(-1)
    return torch.stack([lp[len(prompt) - 1 + j, t] for j, t in enumerate(response)])


def test_engine_is_a_rollout_engine(policy):
    engine = HFEngine(policy.model, policy.tokenizer)
    assert isinstance(engine, RolloutEngine)
    assert engine.supports_banned and not engine.supports_json_schema
    with pytest.raises(NotImplementedError, match="supports_json_schema"):
        engine.generate_json([[1, 2]], {"type": "object"}, max_new_tokens=4)


def test_the_vllm_engine_declares_every_member_of_the_protocol():
    from seed_gym.trainer.backends.vllm_engine import VLLMEngine  # imports without vllm

    members = ("generate", "sync_weights", "sleep", "wake", "generate_json")
    assert all(callable(getattr(VLLMEngine, m, None)) for m in members)
    assert (VLLMEngine.supports_banned, VLLMEngine.supports_json_schema) == (False, True)


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 0.9), (0.0, 1.0)])
def test_engine_logprobs_match_recomputed(policy, temperature, top_p):
    engine = HFEngine(policy.model, policy.tokenizer, max_batch=3)
    gens = engine.generate(
        _chats(5), max_new_tokens=12, temperature=temperature, top_p=top_p, seed=1
    )
    lps, ents = response_logprobs(
        policy.model,
        [g.prompt_ids for g in gens],
        [g.ids for g in gens],
        micro_batch=2,
        pad_id=policy.pad_id,
        temperature=temperature,
        with_entropy=True,
    )
    for g, lp, ent in zip(gens, lps, ents, strict=True):
        assert len(g.ids) == len(g.logprobs) == len(lp) == len(ent) > 0
        torch.testing.assert_close(torch.tensor(g.logprobs), lp, atol=1e-4, rtol=1e-4)
        assert (ent >= 0).all()
        if temperature in (0.0, 1.0):
            torch.testing.assert_close(
                _full_forward_logprobs(policy.model, g.prompt_ids, g.ids), lp, atol=1e-4, rtol=1e-4
            )


def test_same_seed_same_samples_whatever_the_batching(policy):
    a = HFEngine(policy.model, policy.tokenizer, max_batch=5)
    b = HFEngine(policy.model, policy.tokenizer, max_batch=1)
    g1 = a.generate(_chats(4), max_new_tokens=8, seed=5)
    g2 = a.generate(_chats(4), max_new_tokens=8, seed=5)
    g3 = a.generate(_chats(4), max_new_tokens=8, seed=6)
    assert [g.ids for g in g1] == [g.ids for g in g2]
    assert [g.ids for g in g1] != [g.ids for g in g3]
    # one random stream per prompt: chunking and other rows stopping early change nothing
    assert [g.ids for g in b.generate(_chats(4), max_new_tokens=8, seed=5)] == [g.ids for g in g1]
    greedy_a = a.generate(_chats(4), max_new_tokens=8, temperature=0.0)
    greedy_b = b.generate(_chats(4), max_new_tokens=8, temperature=0.0)
    assert [g.ids for g in greedy_a] == [g.ids for g in greedy_b]  # left padding changes nothing


def test_prompts_as_ids_equal_prompts_as_messages(policy):
    engine = HFEngine(policy.model, policy.tokenizer)
    chats = _chats(2)
    by_msg = engine.generate(chats, max_new_tokens=6, seed=3)
    by_ids = engine.generate([g.prompt_ids for g in by_msg], max_new_tokens=6, seed=3)
    assert [g.ids for g in by_msg] == [g.ids for g in by_ids]
    text = policy.tokenizer.apply_chat_template(
        chats[0], add_generation_prompt=True, tokenize=False
    )
    assert text.endswith("<|im_start|>assistant\n")


def test_stop_strings_keep_the_stop_and_truncate_after_it(policy):
    engine = HFEngine(policy.model, policy.tokenizer)
    free = engine.generate(_chats(6), max_new_tokens=24, seed=2)
    # a stop string that the free-running samples produce: a 2-char piece of the first text
    text = next(g.text for g in free if len(g.text) > 6)
    stop = text[4:6]
    gens = engine.generate(_chats(6), max_new_tokens=24, seed=2, stop=[stop])
    hit = 0
    for g, f in zip(gens, free, strict=True):
        assert g.ids == f.ids[: len(g.ids)]  # same stream, cut earlier
        if g.finish_reason == "stop":
            hit += 1
            assert g.text.endswith(stop) and g.text.count(stop) == 1
            # the last token completes the stop string: without it the stop is absent
            assert stop not in policy.tokenizer.decode(g.ids[:-1], skip_special_tokens=True)
            assert stop in policy.tokenizer.decode(g.ids, skip_special_tokens=True)
        else:
            assert stop not in g.text and len(g.ids) == 24
    assert hit >= 1


def test_eos_ends_a_generation(policy):
    eos = policy.eos_id
    model = load_policy("tiny", seed=0).model
    # a bias on the output layer makes EOS the greedy choice at every position
    model.lm_head.bias = torch.nn.Parameter(torch.zeros(model.lm_head.out_features))
    with torch.no_grad():
        model.lm_head.bias[eos] = 100.0
    engine = HFEngine(model, policy.tokenizer)
    gens = engine.generate(_chats(2), max_new_tokens=5, temperature=0.0, stop=["x"])
    assert all(g.ids == [eos] and g.finish_reason == "eos" and g.text == "" for g in gens)


def test_sync_weights_copies_into_a_separate_model(policy):
    other = load_policy("tiny", seed=1).model
    engine = HFEngine(other, policy.tokenizer)
    engine.sync_weights(policy.model)
    assert all(
        torch.equal(a, b)
        for a, b in zip(
            other.state_dict().values(), policy.model.state_dict().values(), strict=True
        )
    )


def test_top_p_filter_keeps_the_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(_top_p_filter(logits, 0.7))[0].tolist()
    assert kept == [True, True, False, False]
    assert torch.isfinite(_top_p_filter(logits, 0.1))[0].tolist() == [True, False, False, False]


def test_left_pad_after_a_shared_prefix():
    ids, mask, pos = left_pad([[5, 6, 7], [8]], pad_id=0, c_len=2, device="cpu")
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 1]]  # 2 prefix columns, then the row
    assert pos.tolist() == [[2, 3, 4], [1, 1, 2]]  # counted over real tokens (pads clamp)


def test_sample_tokens_greedy_and_per_row_streams():
    logits = torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, 0.0]])
    assert sample_tokens(logits, 0.0, 1.0, []).tolist() == [1, 0]

    def gens(*seeds):
        return [torch.Generator().manual_seed(s) for s in seeds]

    # a row's token depends on its own stream only, not on which rows share the batch
    both = sample_tokens(logits, 1.0, 1.0, gens(1, 2))
    assert sample_tokens(logits[1:], 1.0, 1.0, gens(2)).tolist() == both[1:].tolist()
    # top_p small enough keeps only the argmax
    assert sample_tokens(logits, 1.0, 0.01, gens(3, 4)).tolist() == [1, 0]
    # the draws follow the softmax: token 1 of row 0 has probability ~0.84
    draws = [int(sample_tokens(logits[:1], 1.0, 1.0, gens(s))[0]) for s in range(400)]
    assert 0.77 < draws.count(1) / 400 < 0.91


def test_bad_arguments(policy):
    engine = HFEngine(policy.model, policy.tokenizer)
    with pytest.raises(ValueError, match="max_new_tokens"):
        engine.generate(_chats(1), max_new_tokens=0)
    with pytest.raises(ValueError, match="top_p"):
        engine.generate(_chats(1), max_new_tokens=2, top_p=0.0)
    with pytest.raises(ValueError, match="empty prompt"):
        engine.generate([[]], max_new_tokens=2)


# --- logprobs.py on its own ---------------------------------------------------------------------
def test_pack_layout():
    b = pack([[5, 6, 7], [8]], [[1, 2], [3, 4, 9]], pad_id=0)
    assert b.input_ids.tolist() == [[5, 6, 7, 1, 2, 0], [0, 0, 8, 3, 4, 9]]
    assert b.attention_mask.tolist() == [[1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1]]
    assert b.position_ids.tolist() == [[0, 1, 2, 3, 4, 4], [0, 0, 0, 1, 2, 3]]
    assert b.response_mask.tolist() == [[1, 1, 0], [1, 1, 1]]
    assert b.prompt_len == 3
    with pytest.raises(ValueError, match="prompt"):
        pack([[]], [[1]], pad_id=0)


def test_logprobs_independent_of_micro_batch_and_empty_responses(policy):
    prompts = [[1, 5, 6, 7, 8, 9], [10, 11], [12, 13, 14]]
    responses = [[20, 21, 22], [], [23]]
    a, _ = response_logprobs(policy.model, prompts, responses, micro_batch=1, pad_id=policy.pad_id)
    b, _ = response_logprobs(policy.model, prompts, responses, micro_batch=3, pad_id=policy.pad_id)
    assert [len(x) for x in a] == [3, 0, 1]
    for x, y, p, r in zip(a, b, prompts, responses, strict=True):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
        if r:
            torch.testing.assert_close(
                x, _full_forward_logprobs(policy.model, p, r), atol=1e-5, rtol=1e-5
            )


def test_packed_logprobs_carry_gradients(policy):
    batch = pack([[1, 2, 3]], [[4, 5]], pad_id=policy.pad_id)
    lp, ent = packed_logprobs(policy.model, batch, with_entropy=True)
    assert lp.shape == ent.shape == (1, 2)
    lp.sum().backward()
    assert policy.model.lm_head.weight.grad is not None
    policy.model.zero_grad(set_to_none=True)


def test_shared_prefix_split():
    assert shared_prefix_len([[1, 2, 3], [1, 2, 4], [1, 2, 3, 5]]) == 2
    assert shared_prefix_len([[1, 2, 3], [1, 2, 3]]) == 2  # the last prompt token stays in the row
    assert shared_prefix_len([[1, 2]]) == 0 and shared_prefix_len([[1], [2]]) == 0
    head = list(range(100, 120))  # 20 shared tokens: split off
    b = pack([head + [5, 6], head + [7]], [[1, 2], [3]], pad_id=0, share_prefix=True)
    assert b.prefix_ids.tolist() == head and b.prefix_len == 20
    assert b.input_ids.tolist() == [[5, 6, 1, 2], [0, 7, 3, 0]]
    assert b.attention_mask[:, :20].eq(1).all() and b.attention_mask[:, 20:].tolist() == [
        [1, 1, 1, 1],
        [0, 1, 1, 0],
    ]
    assert b.position_ids.tolist() == [[20, 21, 22, 23], [19, 20, 21, 21]]  # pads: any
    short = pack([[1, 2, 5], [1, 2, 6]], [[3], [4]], pad_id=0, share_prefix=True)
    assert short.prefix_ids is None  # under MIN_SHARED_PREFIX: not worth a pass


def test_shared_prefix_gives_the_same_logprobs_and_gradients(policy):
    head = list(range(30, 70))
    prompts = [head + [5, 6, 7], head + [8], head + [9, 10]]
    responses = [[20, 21, 22], [23, 24], [25]]
    grads = []
    for share in (False, True):
        batch = pack(prompts, responses, pad_id=policy.pad_id, share_prefix=share)
        assert (batch.prefix_ids is not None) == share
        lp, ent = packed_logprobs(policy.model, batch, with_entropy=True)
        (lp * batch.response_mask).sum().backward()
        grads.append(({k: p.grad.clone() for k, p in policy.model.named_parameters()}, lp, ent))
        policy.model.zero_grad(set_to_none=True)
    (g0, lp0, e0), (g1, lp1, e1) = grads
    mask = pack(prompts, responses, pad_id=policy.pad_id).response_mask.bool()
    torch.testing.assert_close(lp0[mask], lp1[mask], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e0[mask], e1[mask], atol=1e-5, rtol=1e-5)
    for k in g0:  # the embedding of the prefix tokens too: its gradient flows through the cache
        torch.testing.assert_close(g0[k], g1[k], atol=1e-5, rtol=1e-4)


def test_generation_with_a_shared_prefix_matches_one_prompt_at_a_time(policy):
    engine = HFEngine(policy.model, policy.tokenizer)
    chats = [[{"role": "user", "content": "Your task is to: push the box. " * 8 + tail}]
             for tail in ("Left?", "Right or up?", "Down.")]  # fmt: skip
    # greedy ids are the same with the prefix shared (together) and without (alone), and the
    # sampled tokens' logprobs are what the plain layout recomputes
    greedy_t = engine.generate(chats, max_new_tokens=6, temperature=0.0)
    greedy_a = [engine.generate([c], max_new_tokens=6, temperature=0.0)[0] for c in chats]
    assert [g.ids for g in greedy_t] == [g.ids for g in greedy_a]
    for g in engine.generate(chats, max_new_tokens=6, temperature=1.0, seed=3):
        again, _ = response_logprobs(
            policy.model, [g.prompt_ids], [g.ids], micro_batch=1, pad_id=policy.pad_id
        )
        torch.testing.assert_close(torch.tensor(g.logprobs), again[0], atol=1e-4, rtol=1e-4)


def test_generation_record_defaults():
    g = Generation([1], [-0.5], "x")
    assert g.finish_reason == "length" and g.prompt_ids == []


def test_samples_follow_the_model_distribution(policy):
    # E[-log p(x)] over x ~ p is the entropy: 256 one-token samples of the same prompt
    engine = HFEngine(policy.model, policy.tokenizer)
    gens = engine.generate(_chats(1) * 256, max_new_tokens=1, temperature=1.0, seed=0)
    _, ent = response_logprobs(
        policy.model,
        [gens[0].prompt_ids],
        [gens[0].ids],
        micro_batch=1,
        pad_id=policy.pad_id,
        with_entropy=True,
    )
    nll = -torch.tensor([g.logprobs[0] for g in gens])
    assert len({g.ids[0] for g in gens}) > 100  # near-uniform random model: many distinct tokens
    assert float(nll.mean()) == pytest.approx(float(ent[0][0]), abs=0.15)


def test_a_prompt_that_extends_a_cached_prompt_runs_only_the_extension(policy, monkeypatch):
    engine = HFEngine(policy.model, policy.tokenizer)
    tok = policy.tokenizer
    firsts = [
        tok(f"Your task is to: analyze episode {k}. " * (k + 2))["input_ids"] for k in range(3)
    ]
    ext = [tok(f" The answer {k} is")["input_ids"] for k in range(3)]
    head = engine.generate(firsts, max_new_tokens=5, temperature=0.0, keep_prompt_kv=True)
    assert all(g.prompt_kv is not None for g in head)
    # the second call's prompts: row 0 and 2 extend their first prompt, row 1 is unrelated
    seconds = [firsts[0] + ext[0], ext[1] + firsts[1], firsts[2] + ext[2]]
    seen = []
    real = engine._generate_batch
    monkeypatch.setattr(
        engine, "_generate_batch", lambda p, *a, **k: seen.append(p) or real(p, *a, **k)
    )
    reused = engine.generate(
        seconds, max_new_tokens=6, temperature=0.0, past=[g.prompt_kv for g in head]
    )
    # one batch of the two extensions (their new tokens only), one of the whole unrelated prompt
    assert sorted(map(len, seen[0])) == sorted([len(ext[0]), len(ext[2])])
    assert seen[1] == [seconds[1]]
    whole = engine.generate(seconds, max_new_tokens=6, temperature=0.0)
    assert [g.ids for g in reused] == [g.ids for g in whole]
    assert [g.prompt_ids for g in reused] == seconds
    for a, b in zip(reused, whole, strict=True):
        torch.testing.assert_close(
            torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4, rtol=1e-4
        )


def test_past_must_match_the_prompts(policy):
    engine = HFEngine(policy.model, policy.tokenizer)
    head = engine.generate([[5, 6, 7]], max_new_tokens=2, temperature=0.0, keep_prompt_kv=True)
    with pytest.raises(ValueError, match="past"):
        engine.generate([[5, 6, 7, 8], [9]], max_new_tokens=2, past=[head[0].prompt_kv])
    # the same prompt again is not an extension: prefilled whole, same greedy tokens
    again = engine.generate(
        [[5, 6, 7]], max_new_tokens=2, temperature=0.0, past=[head[0].prompt_kv]
    )
    assert again[0].ids == head[0].ids


def test_growing_kv_cache_holds_what_concatenation_holds():
    from transformers.cache_utils import DynamicLayer

    from seed_gym.trainer.backends.kv_cache import GrowingLayer

    gen = torch.Generator().manual_seed(0)
    grow, cat = GrowingLayer(reserve=3), DynamicLayer()

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    def both(fn):
        for layer in (grow, cat):
            fn(layer)
        torch.testing.assert_close(grow.keys, cat.keys, rtol=0, atol=0)
        torch.testing.assert_close(grow.values, cat.values, rtol=0, atol=0)
        assert grow.get_seq_length() == cat.get_seq_length()

    for n_new in (2, 1, 1, 4):  # past the reserve of 3 the buffer doubles: 3 -> 6 -> 12
        k, v = randn(1, 2, n_new, 4), randn(1, 2, n_new, 4)
        both(lambda layer, k=k, v=v: layer.update(k, v))
    assert grow.key_buf.shape[-2] == 12 and grow.get_seq_length() == 8
    both(lambda layer: layer.batch_repeat_interleave(3))
    both(lambda layer: layer.batch_select_indices(torch.tensor([2, 0])))
    both(lambda layer: layer.crop(-2))
    k, v = randn(2, 2, 1, 4), randn(2, 2, 1, 4)
    both(lambda layer: layer.update(k, v))  # writes over the cropped positions


@pytest.mark.parametrize("shared", [True, False])
def test_the_growing_kv_cache_samples_what_hugging_face_s_cache_samples(policy, shared):
    head = "Your task is to: push the box. " * (6 if shared else 0)
    chats = [[{"role": "user", "content": head + "go " * k}] for k in range(1, 5)]
    # sampled at T = 1 with a stop string, so rows end at different steps and leave the batch;
    # the second call extends the first's cached prompts past the room reserved for them
    kwargs = dict(max_new_tokens=12, temperature=1.0, seed=5, stop=["e"], keep_prompt_kv=True)

    def run(in_place: bool):
        engine = HFEngine(policy.model, policy.tokenizer, kv_in_place=in_place)
        first = engine.generate(chats, **kwargs)
        more = [g.prompt_ids + g.ids + [7] * 30 for g in first]
        again = engine.generate(more, max_new_tokens=8, seed=6, past=[g.prompt_kv for g in first])
        return [(g.ids, g.logprobs) for g in first + again]

    grown = run(True)
    assert run(False) == grown  # the same tokens and the same logprobs, to the last bit
    assert {len(ids) for ids, _ in grown[:4]} != {12}  # some rows stopped early
