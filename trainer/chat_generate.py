"""Plain chat completion with a local HF model: messages in, text out (greedy or sampled).

The analyzer, the Stage 1 annotators and ``openai_server`` need "answer these chats" without the
rollout machinery (token ids, logprobs, stop handling per env). Batches are left-padded; stop
strings cut the text after generation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" (eos or a stop string) or "length"


def encode_chat(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    """Prompt ids of a chat with the generation prompt, exactly as the rollout engine encodes it
    (``engines.encode_chat``), so rescoring and SFT see the tokens the policy saw."""
    from seed_gym.trainer.engines import encode_chat as engine_encode_chat

    return engine_encode_chat(tokenizer, messages)


def chat_complete(
    model: Any,
    tokenizer: Any,
    chats: Sequence[list[dict[str, Any]]],
    *,
    max_new_tokens: int = 256,
    temperature: float = 0.0,
    top_p: float = 1.0,
    stop: Sequence[str] = (),
    batch_size: int = 8,
    seed: int | None = None,
) -> list[Completion]:
    """Complete each chat; ``temperature <= 0`` is greedy (deterministic)."""
    import torch

    device = next(model.parameters()).device
    pad_id = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )
    eos_id = tokenizer.eos_token_id
    out: list[Completion] = []
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(chats), batch_size):
            prompts = [encode_chat(tokenizer, c) for c in chats[start : start + batch_size]]
            width = max(len(p) for p in prompts)
            ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(prompts), width), dtype=torch.long)
            for i, p in enumerate(prompts):
                ids[i, width - len(p) :] = torch.as_tensor(p)
                mask[i, width - len(p) :] = 1
            kwargs: dict[str, Any] = dict(
                max_new_tokens=max_new_tokens, pad_token_id=pad_id, eos_token_id=eos_id
            )
            if temperature > 0:
                kwargs.update(do_sample=True, temperature=temperature, top_p=top_p)
                if seed is not None:
                    torch.manual_seed(seed + start)
            else:
                kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            with torch.no_grad():
                gen = model.generate(
                    input_ids=ids.to(device), attention_mask=mask.to(device), **kwargs
                )
            for i, p in enumerate(prompts):
                new = gen[i, width:].tolist()
                finish = "length"
                if eos_id in new:
                    new = new[: new.index(eos_id)]
                    finish = "stop"
                text = tokenizer.decode(new, skip_special_tokens=True)
                cut = [text.index(s) for s in stop if s and s in text]
                if cut:
                    text, finish = text[: min(cut)], "stop"
                out.append(Completion(text, len(p), len(new), finish))
    finally:
        model.train(was_training)
    return out


def hf_generate_fn(model: Any, tokenizer: Any, **kwargs: Any):
    """A ``generate_fn`` for ``analyzer.analyze``: greedy chat completion with a local model."""

    def generate(chats: list[list[dict[str, Any]]]) -> list[str]:
        return [c.text for c in chat_complete(model, tokenizer, chats, **kwargs)]

    return generate
