"""``model:PATH`` for ``seed-gym eval``: a local Hugging Face model sampled with ``HFEngine``.

It lives in the trainer package because it samples with the trainer's engine and loads with its
model loader; ``seed_gym.policies`` builds it by import path when ``model:`` is asked for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym

from seed_gym.data import file_sha256
from seed_gym.policies import _EpisodeStreams
from seed_gym.trainer.backends.engines import HFEngine
from seed_gym.trainer.backends.models import load_policy, model_dir, smollm2_dir, state_dict_sha256

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def weights_sha256(folder: str | Path) -> str:
    """sha256 over the weight files of a model folder: each file's relative name and content, in
    sorted order (configs and tokenizers are not weights and are left out)."""
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    if not files:
        raise FileNotFoundError(f"no weight files ({', '.join(WEIGHT_SUFFIXES)}) in {folder}")
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(folder).as_posix()}\0{file_sha256(p)}\n".encode())
    return h.hexdigest()


class ModelPolicy:
    """A local Hugging Face causal LM sampled with the trainer's ``HFEngine``.

    Args:
        path: a model folder, a hub id ``ORG/NAME`` (through the Hugging Face cache), ``"smollm2"``
            or ``"tiny"`` (``trainer.models.load_policy``).
        temperature: 0 (default) is greedy.
        max_new_tokens: completion budget per turn.
        batch_size: prompts per forward pass; ``seed-gym eval`` runs this many episodes at once.
        bf16: sample under bf16 autocast (faster on CPU).
    """

    acts_on: Literal["game", "agent"] = "agent"

    def __init__(
        self,
        path: str | None,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_new_tokens: int = 256,
        batch_size: int = 16,
        bf16: bool = False,
        seed: int = 0,
    ):
        self.path = path or "smollm2"
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.name = f"model:{self.path}"
        self.loaded = load_policy(self.path, seed=seed)
        self.tokenizer = self.loaded.tokenizer
        self.engine = HFEngine(
            self.loaded.model, self.tokenizer, max_batch=batch_size, autocast_bf16=bf16
        )
        self.temperature, self.top_p = float(temperature), float(top_p)
        self.max_new_tokens, self.batch_size, self.bf16 = int(max_new_tokens), batch_size, bf16
        self.streams = _EpisodeStreams()

    def describe(self) -> dict[str, Any]:
        """What ``results.json`` records about the model."""
        if self.path == "tiny":
            where, method = "tiny (seeded random)", "state_dict"
            digest = state_dict_sha256(self.loaded.model)
        else:
            folder = smollm2_dir() if self.path == "smollm2" else model_dir(self.path)
            where, digest, method = str(folder), weights_sha256(folder), "weight files"
        return {
            "model": self.path,
            "model_path": where,
            "model_sha256": digest,
            "model_hash_of": method,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_new_tokens": self.max_new_tokens,
            "batch_size": self.batch_size,
            "bf16": self.bf16,
        }

    def reset(self, env: gym.Env, *, seed: int) -> None:
        self.streams.reset(env, seed)

    def act(self, env: gym.Env, obs: Any, info: dict[str, Any]) -> str:
        return self.act_batch([env], [obs], [info])[0]

    def act_batch(
        self, envs: Sequence[gym.Env], obs: Sequence[Any], infos: Sequence[dict[str, Any]]
    ) -> list[str]:
        if any(o.get("images") for o in obs):
            raise ValueError(
                f"{self.name}: image observations need a vision-language engine; evaluate this "
                "text model with --modality text"
            )
        # each row samples from its own episode's stream, whatever else is in the batch
        gens = self.engine.generate(
            [o["messages"] for o in obs],
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            stop=list(envs[0].agent_spec.stop),
            seed=[self.streams.next_seed(env) for env in envs],
        )
        for env, g in zip(envs, gens, strict=True):
            self.streams.last[id(env)] = {
                "tokens": [self.tokenizer.decode([t]) for t in g.ids],
                "token_ids": list(g.ids),
                "logprobs": [float(x) for x in g.logprobs],
                "finish_reason": g.finish_reason,
            }
        return [g.text for g in gens]

    def details(self, env: gym.Env) -> dict[str, Any] | None:
        """Token strings, ids and logprobs of the last completion for ``env``."""
        return self.streams.last.get(id(env))

    def close(self) -> None:
        self.engine = None  # type: ignore[assignment]
        self.loaded = None  # type: ignore[assignment]
