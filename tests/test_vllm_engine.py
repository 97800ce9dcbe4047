"""VLLMEngine against the HF recomputation: logprobs of the sampled tokens, stops, seeds, weight sync.

Skipped unless vLLM imports (``vllm`` on GPU or ``vllm-cpu``); ``scripts/test_vllm.sh`` builds a
venv with vllm-cpu and runs this file. The model is the seeded random tiny Llama saved to a folder
(hidden 256 so heads are 64 wide, which every vLLM attention backend supports); the SmolLM2 check
runs with ``-m slow`` when the converted SmolLM2 folder exists.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_gym.trainer.backends.engines import HFEngine  # noqa: E402
from seed_gym.trainer.backends.logprobs import response_logprobs  # noqa: E402
from seed_gym.trainer.backends.models import apply_lora, tiny_model, tiny_tokenizer  # noqa: E402
from seed_gym.trainer.backends.vllm_engine import VLLMEngine, hf_weights  # noqa: E402

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
HAVE_VLLM = importlib.util.find_spec("vllm") is not None
HAVE_PEFT = importlib.util.find_spec("peft") is not None
needs_vllm = pytest.mark.skipif(
    not HAVE_VLLM, reason="vLLM is not installed (scripts/test_vllm.sh)"
)

# fp32 on both sides; vLLM's CPU kernels sum in another order than torch's, so not bit-equal
TOL = 2e-3

PROMPTS = [
    [{"role": "user", "content": "Your task is to: push the box onto the target."}],
    [{"role": "user", "content": "Your task is to: push the box onto the target."}],  # a G copy
    [
        {"role": "system", "content": "You are an expert agent."},
        {"role": "user", "content": "3 + 9 = 12"},
    ],
    [{"role": "user", "content": "search[red shoes under 50 dollars] click[buy now]"}],
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    if not HAVE_VLLM:
        pytest.skip("vLLM is not installed (scripts/test_vllm.sh)")
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer, hidden=256).eval()
    path = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    engine = VLLMEngine(path, tokenizer=tokenizer, dtype="float32", max_model_len=512)
    yield engine, model, tokenizer
    engine.close()


def recompute(model, tokenizer, gens, temperature):
    lps, _ = response_logprobs(
        model,
        [g.prompt_ids for g in gens],
        [g.ids for g in gens],
        micro_batch=8,
        pad_id=tokenizer.pad_token_id,
        temperature=temperature,
    )
    return lps


def max_gap(gens, lps) -> float:
    return max(
        float((torch.tensor(g.logprobs) - lp).abs().max()) for g, lp in zip(gens, lps, strict=True)
    )


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_match_hf_recomputation(tiny, temperature):
    engine, model, tokenizer = tiny
    gens = engine.generate(PROMPTS, max_new_tokens=24, temperature=temperature, seed=3)
    assert len(gens) == len(PROMPTS)
    for g in gens:
        assert len(g.ids) == len(g.logprobs) >= 1 and g.prompt_ids
        assert all(lp <= 0.0 for lp in g.logprobs)
    gap = max_gap(gens, recompute(model, tokenizer, gens, temperature))
    print(f"T={temperature}: max |vLLM - HF| logprob = {gap:.2e}")
    assert gap < TOL
    # the two copies of one prompt sample independently
    assert gens[0].prompt_ids == gens[1].prompt_ids and gens[0].ids != gens[1].ids


def test_greedy_matches_hf_engine(tiny):
    engine, model, tokenizer = tiny
    gens = engine.generate(PROMPTS, max_new_tokens=16, temperature=0.0)
    hf = HFEngine(model, tokenizer).generate(PROMPTS, max_new_tokens=16, temperature=0.0)
    assert [g.ids for g in gens] == [h.ids for h in hf]
    assert [g.prompt_ids for g in gens] == [h.prompt_ids for h in hf]
    gap = max_gap(gens, [torch.tensor(h.logprobs) for h in hf])
    print(f"greedy: max |vLLM - HFEngine| logprob = {gap:.2e}")
    assert gap < TOL


def test_seed_reproduces_and_stop_string_is_kept(tiny):
    engine, _, tokenizer = tiny
    a = engine.generate(PROMPTS[:1], max_new_tokens=32, temperature=1.0, seed=11)[0]
    b = engine.generate(PROMPTS[:1], max_new_tokens=32, temperature=1.0, seed=11)[0]
    c = engine.generate(PROMPTS[:1], max_new_tokens=32, temperature=1.0, seed=12)[0]
    assert a.ids == b.ids and a.logprobs == b.logprobs and a.ids != c.ids
    assert a.finish_reason in ("length", "eos")
    # a stop string taken from the middle of the free completion: the same sample, cut after it
    text = tokenizer.decode(a.ids, skip_special_tokens=True)
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    assert stop.strip(), text
    cut = engine.generate(PROMPTS[:1], max_new_tokens=32, temperature=1.0, seed=11, stop=[stop])[0]
    assert cut.finish_reason == "stop"
    assert cut.text == text[: text.find(stop) + len(stop)]
    assert cut.ids == a.ids[: len(cut.ids)] and len(cut.ids) < len(a.ids)


def test_weight_sync_changes_outputs(tiny):
    engine, model, tokenizer = tiny
    before = engine.generate(PROMPTS, max_new_tokens=16, temperature=0.0)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        with torch.no_grad():  # an "update": big enough to move every greedy choice
            gen = torch.Generator().manual_seed(0)
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=gen) * 0.5)
        engine.sync_weights(model)
        after = engine.generate(PROMPTS, max_new_tokens=16, temperature=0.0)
        assert [g.ids for g in after] != [g.ids for g in before]
        gap = max_gap(after, recompute(model, tokenizer, after, 1.0))
        print(f"after sync: max |vLLM - HF| logprob = {gap:.2e}")
        assert gap < TOL
        sampled = engine.generate(PROMPTS, max_new_tokens=16, temperature=1.0, seed=5)
        assert max_gap(sampled, recompute(model, tokenizer, sampled, 1.0)) < TOL
    finally:
        model.load_state_dict(original)
        engine.sync_weights(model)
    again = engine.generate(PROMPTS, max_new_tokens=16, temperature=0.0)
    assert [g.ids for g in again] == [g.ids for g in before]


@pytest.mark.skipif(not HAVE_PEFT, reason="peft is not installed")
def test_hf_weights_of_a_merged_lora_model_are_plain_checkpoint_names():
    tokenizer = tiny_tokenizer()
    base_names = set(tiny_model(tokenizer).state_dict())
    model = apply_lora(tiny_model(tokenizer), r=4)
    model.merge_adapter()
    try:
        weights = dict(hf_weights(model))
    finally:
        model.unmerge_adapter()
    assert set(weights) == base_names


@pytest.mark.skipif(not HAVE_PEFT, reason="peft is not installed")
def test_lora_weight_sync_samples_from_the_merged_model(tiny):
    engine, model, tokenizer = tiny
    before = engine.generate(PROMPTS, max_new_tokens=16, temperature=0.0)
    lora = apply_lora(tiny_model(tokenizer, hidden=256), r=4)
    with torch.no_grad():  # trained adapters: B is zero at init, which would merge to a no-op
        gen = torch.Generator().manual_seed(1)
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
    try:
        engine.sync_weights(lora)
        assert not any(getattr(m, "merged", False) for m in lora.modules())  # unmerged again
        after = engine.generate(PROMPTS, max_new_tokens=16, temperature=0.0)
        assert [g.ids for g in after] != [g.ids for g in before]
        gap = max_gap(after, recompute(lora, tokenizer, after, 1.0))
        print(f"LoRA sync: max |vLLM - HF(peft)| logprob = {gap:.2e}")
        assert gap < TOL
    finally:
        engine.sync_weights(model)


def test_structured_outputs_give_schema_valid_analyzer_answers(tiny):
    # a random model under vLLM's structured outputs: every answer is the analyzer's JSON object
    import json

    from seed_gym.trainer.algorithms.seed.analyzer import (
        SKILL_FIELDS,
        skill_schema,
        structured_generate_fn,
    )

    engine, _, _ = tiny
    for text in engine.generate_json(PROMPTS, skill_schema(20), max_new_tokens=80):
        obj = json.loads(text)  # 20 chars a field: the object closes within 80 tokens
        assert sorted(obj) == sorted(SKILL_FIELDS) and all(len(v) <= 20 for v in obj.values())
    for text in structured_generate_fn(engine, max_new_tokens=8)(PROMPTS):
        assert sorted(json.loads(text)) == sorted(SKILL_FIELDS)


@pytest.mark.skipif(HAVE_VLLM, reason="checks the error without vLLM")
def test_missing_vllm_names_the_extra(tmp_path):
    tokenizer = tiny_tokenizer()
    tiny_model(tokenizer).save_pretrained(tmp_path)
    with pytest.raises(ImportError, match=r"seed-gym\[vllm\].*vllm-cpu"):
        VLLMEngine(tmp_path)


def test_bad_arguments(tiny):
    engine = tiny[0]
    with pytest.raises(ValueError, match="max_new_tokens"):
        engine.generate(PROMPTS, max_new_tokens=0)
    with pytest.raises(ValueError, match="top_p"):
        engine.generate(PROMPTS, max_new_tokens=4, top_p=0.0)
    with pytest.raises(ValueError, match="empty"):
        engine.generate([[]], max_new_tokens=4)
    assert engine.generate([], max_new_tokens=4) == []
    with pytest.raises(FileNotFoundError, match="never downloads"):
        VLLMEngine("/nonexistent/model")


@pytest.mark.slow
@needs_vllm
def test_smollm2_logprobs_match_hf():
    from seed_gym.trainer.backends.models import load_policy, smollm2_dir

    # the folder is keyed by the transformers version that converted it; the vLLM venv may carry
    # another version, and any converted folder holds the same weights
    folders = [smollm2_dir(), *sorted(smollm2_dir().parent.glob("smollm2-135m-instruct-tf*"))]
    folders = [f for f in folders if (f / "config.json").exists()]
    if not folders:
        pytest.skip("SmolLM2 is not converted (seed-gym data build smollm2)")
    policy = load_policy(str(folders[0]))
    with VLLMEngine(
        folders[0], tokenizer=policy.tokenizer, dtype="float32", max_model_len=1024
    ) as engine:
        prompts = [[{"role": "user", "content": "Name three colours."}]] * 2 + PROMPTS[2:]
        gens = engine.generate(prompts, max_new_tokens=32, temperature=1.0, seed=0)
        gap = max_gap(gens, recompute(policy.model, policy.tokenizer, gens, 1.0))
        print(f"SmolLM2 T=1: max |vLLM - HF| logprob = {gap:.2e}; sample: {gens[0].text!r}")
        assert gap < 1e-2
