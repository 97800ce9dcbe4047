"""Model loading: the tiny Llama, save/load round trips, LoRA, and the embedded SmolLM2."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_gym.trainer.backends.models import (  # noqa: E402
    EOS_TOKEN,
    autocast,
    load_policy,
    save_policy,
    tiny_tokenizer,
)


def test_tiny_model_is_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, b, c = (load_policy("tiny", seed=s).model for s in (0, 0, 1))
    assert torch.equal(torch.get_rng_state(), before)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa)
    n = sum(p.numel() for p in a.parameters())
    assert 50_000 < n < 200_000
    assert (
        a.config.hidden_size == 64
        and a.config.num_hidden_layers == 2
        and a.config.vocab_size == 512
    )


def test_tiny_tokenizer_roundtrip_and_chatml():
    tok = tiny_tokenizer()
    text = "<think> push it </think> <action>left</action> ünïcode"
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    assert tok.eos_token == tok.pad_token == EOS_TOKEN
    chat = tok.apply_chat_template(
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert (
        chat
        == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tok.convert_tokens_to_ids("<|im_start|>") != tok.unk_token_id


def test_save_and_load_from_a_local_folder(tmp_path):
    p = load_policy("tiny", seed=3)
    save_policy(p, tmp_path / "m")
    q = load_policy(str(tmp_path / "m"))
    ids = torch.tensor([[1, 50, 60, 70]])
    torch.testing.assert_close(p.model(ids).logits, q.model(ids).logits)
    assert q.pad_id == p.pad_id and q.tokenizer.chat_template == p.tokenizer.chat_template


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(
        FileNotFoundError, match="a local Hugging Face model folder with a config.json nor a hub id"
    ):
        load_policy(str(tmp_path / "nope"))


def test_lora_trains_only_adapters():
    p = load_policy("tiny", lora={"r": 4, "lora_alpha": 8})
    trainable = [n for n, q in p.model.named_parameters() if q.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    # at init LoRA is the identity (B = 0), so outputs equal the base model's
    base = load_policy("tiny").model
    ids = torch.tensor([[1, 5, 9]])
    torch.testing.assert_close(p.model(input_ids=ids).logits, base(ids).logits)


def test_bf16_autocast_flag():
    p = load_policy("tiny")
    with autocast(True):
        out = p.model(torch.tensor([[1, 2, 3]])).logits
    assert out.dtype == torch.bfloat16
    assert next(p.model.parameters()).dtype == torch.float32
    with autocast(False):
        assert p.model(torch.tensor([[1, 2, 3]])).logits.dtype == torch.float32


@pytest.mark.slow
def test_smollm2_from_the_wheel():
    """Converts the GGUF once (about a minute, cached afterwards) and answers in ChatML."""
    pytest.importorskip("gguf")
    from seed_gym.trainer.backends.models import smollm2_gguf

    try:
        smollm2_gguf()
    except (ImportError, FileNotFoundError) as e:
        pytest.skip(str(e))
    p = load_policy("smollm2")
    tok = p.tokenizer
    assert tok.eos_token == tok.pad_token == EOS_TOKEN
    assert p.model.config.vocab_size == 49152 and p.model.config.num_hidden_layers == 30
    text = tok.apply_chat_template(
        [{"role": "user", "content": "What is 2+2?"}], add_generation_prompt=True, tokenize=False
    )
    ids = tok(text, add_special_tokens=False, return_tensors="pt")
    out = p.model.generate(**ids, max_new_tokens=16, do_sample=False)
    answer = tok.decode(out[0, ids.input_ids.shape[1] :], skip_special_tokens=True)
    assert "4" in answer
