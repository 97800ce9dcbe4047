"""Plain chat completion with a local HF model: messages in, text out (greedy or sampled).

``openai_server`` and tests need "answer these chats" without the rollout machinery (token ids,
logprobs, per-env stops); this is ``HFEngine.generate`` (the one generation loop) with the
stop string cut off the text, as chat APIs return it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seed_gym.trainer.backends.engines import HFEngine


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" (eos or a stop string) or "length"


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
    """Complete each chat; ``temperature <= 0`` is greedy (deterministic). The text ends before
    the first stop string."""
    engine = HFEngine(model, tokenizer, max_batch=batch_size)
    gens = engine.generate(
        list(chats),
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        stop=[s for s in stop if s],
        seed=0 if seed is None else seed,
    )
    out = []
    for g in gens:
        text, finish = g.text, "length" if g.finish_reason == "length" else "stop"
        cut = [text.index(s) for s in stop if s and s in text]
        if cut:
            text = text[: min(cut)]
        out.append(Completion(text, len(g.prompt_ids), len(g.ids), finish))
    return out


def hf_generate_fn(model: Any, tokenizer: Any, **kwargs: Any):
    """A ``generate_fn`` for ``analyzer.analyze``: greedy chat completion with a local model."""

    def generate(chats: list[list[dict[str, Any]]]) -> list[str]:
        return [c.text for c in chat_complete(model, tokenizer, chats, **kwargs)]

    return generate
