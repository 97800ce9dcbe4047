"""``seed-gym train --dry-run``: everything but the weights, and a memory plan per GPU.

It reads the model's ``config.json`` (no weights are loaded), builds the env and its split
manifests, measures the prompt length the agent env renders (after a history window of steps),
and prints the token budget of an iteration and, for 1, 2, 4 and 8 GPUs, the memory each GPU
needs: parameters, gradients and AdamW state (sharded by FSDP2 over the GPUs when ``--fsdp``,
else whole on every GPU), activations of one micro-batch, the KL reference, and vLLM's weights
and KV cache. It exits 2, naming what does not fit, when the job's own world size does not fit.

The estimates are the standard ones (mixed-precision full fine-tune with fp32 master weights and
AdamW: 16 bytes a parameter; activations after Korthikanti et al. 2022, one checkpoint per layer
with ``--gradient-checkpointing``); they are a plan, not a measurement: leave headroom.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.registration import split_manifest, task_ids
from seed_gym.trainer.backends.models import (
    VLM_BUILDERS,
    build_smollm2,
    model_dir,
    tiny_model,
    tiny_tokenizer,
)
from seed_gym.wrappers.agent import make_agent_env

GB = 1024**3
WORLD_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class ModelShape:
    """The sizes a memory plan needs, read off a Hugging Face ``config.json``."""

    name: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def params(self) -> int:
        """Parameter count: embeddings (+ an untied head), attention (q, o and the smaller k, v
        with their biases, as Qwen2 has), the gated MLP and the norms."""
        h, kv = self.hidden, self.kv_heads * self.head_dim
        attn = h * h * 2 + h * kv * 2 + h + 2 * kv
        mlp = 3 * h * self.intermediate
        per_layer = attn + mlp + 2 * h
        emb = self.vocab * h * (1 if self.tied else 2)
        return self.layers * per_layer + emb + h

    @classmethod
    def from_config(cls, path: str | Path) -> ModelShape:
        config = json.loads((Path(path) / "config.json").read_text())
        return cls.from_dict(config, str(Path(path).name))

    @classmethod
    def from_dict(cls, config: dict[str, Any], name: str) -> ModelShape:
        """From a Hugging Face config as a dict (``config.json``, or ``model.config.to_dict()``)."""
        text = config.get("text_config", config)  # vision-language models: the decoder
        heads = int(text["num_attention_heads"])
        return cls(
            name=name,
            layers=int(text["num_hidden_layers"]),
            hidden=int(text["hidden_size"]),
            intermediate=int(text["intermediate_size"]),
            heads=heads,
            kv_heads=int(text.get("num_key_value_heads", heads)),
            vocab=int(text["vocab_size"]),
            tied=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
        )


@dataclass(frozen=True)
class Budget:
    """Tokens of one iteration: sequences, the longest prompt and response, and the total."""

    episodes: int
    max_turns: int
    prompt_tokens: int
    response_tokens: int

    @property
    def samples(self) -> int:  # step-samples, at most
        return self.episodes * self.max_turns

    @property
    def tokens(self) -> int:
        return self.samples * (self.prompt_tokens + self.response_tokens)


def memory_plan(shape: ModelShape, cfg: Any, budget: Budget, world: int) -> dict[str, float]:
    """Bytes per GPU of each item, for ``world`` GPUs; ``peak`` is the larger of the update
    phase and the rollout phase (vLLM asleep during the update when ``cfg.system.vllm_sleep``)."""
    p = shape.params
    shard = world if cfg.system.fsdp else 1
    lora = cfg.lora_r > 0
    trainable = _lora_params(shape, cfg.lora_r) if lora else p
    out: dict[str, float] = {
        "parameters": p * 4 / shard,  # fp32 master weights
        "gradients": trainable * 4 / shard,
        "optimizer": trainable * 8 / shard,  # AdamW m and v in fp32
    }
    if cfg.optim.kl_coef > 0 and not lora:  # a frozen bf16 copy; under LoRA the base is it
        out["reference"] = p * 2 / shard
    if cfg.system.fsdp:  # the gathered bf16 weights of the layers in flight (this one and the next)
        out["unsharded layers"] = 2 * 2 * (p - shape.vocab * shape.hidden) / shape.layers
    tokens = cfg.optim.micro_batch * (budget.prompt_tokens + budget.response_tokens)
    sbh = tokens * shape.hidden
    if cfg.system.gradient_checkpointing:  # one saved input per layer, one layer recomputed in full
        act = sbh * 2 * shape.layers + sbh * 34
    else:
        act = sbh * 34 * shape.layers
    logits = (
        cfg.optim.micro_batch * budget.response_tokens * shape.vocab * 4 * 2
    )  # response rows only
    out["activations"] = act + logits
    if cfg.system.engine == "vllm":
        out["vllm weights"] = p * 2  # a bf16 copy per GPU (tensor parallel 1)
        kv_per_token = 2 * shape.layers * shape.kv_heads * shape.head_dim * 2
        sequences = (
            math.ceil(budget.episodes / world)
            if cfg.system.dist_rollout == "shard"
            else budget.episodes
        )
        out["vllm kv cache"] = (
            kv_per_token * sequences * (budget.prompt_tokens + budget.response_tokens)
        )
    training = sum(v for k, v in out.items() if not k.startswith("vllm"))
    rollout = out["parameters"] + out["optimizer"] + out.get("reference", 0.0)
    vllm = out.get("vllm weights", 0.0) + out.get("vllm kv cache", 0.0)
    if cfg.system.engine == "vllm" and not cfg.system.vllm_sleep:
        training += vllm  # the engine keeps its memory through the update
    out["peak"] = max(training, rollout + vllm)
    return out


def _lora_params(shape: ModelShape, r: int) -> int:
    """LoRA on the attention and MLP projections of every layer: r x (in + out) each."""
    h, kv, i = shape.hidden, shape.kv_heads * shape.head_dim, shape.intermediate
    per_layer = r * ((h + h) * 2 + (h + kv) * 2 + (h + i) * 2 + (i + h))
    return shape.layers * per_layer


def measure_budget(cfg: Any, tokenizer: Any | None) -> Budget:
    """The env built for real: its first training task played with random actions for the
    history window, and the prompt of the next step measured (tokens, or characters / 4 when
    the model folder has no tokenizer)."""
    env = make_agent_env(
        cfg.env, split="train", modality=cfg.modality, history=cfg.history, **cfg.env_kwargs
    )
    try:
        obs, info = env.reset(
            seed=cfg.seed, options={"task_id": task_ids(cfg.env, "train", **cfg.env_kwargs)[0]}
        )
        longest = _prompt_tokens(obs, tokenizer)
        rng = np.random.default_rng(cfg.seed)
        for _ in range(env.get_wrapper_attr("k") + 1):
            action = env.unwrapped.sample_action(rng, info.get("admissible_actions"))
            completion = env.agent_spec.format_completion("planning", str(action))
            obs, _, term, trunc, info = env.step(completion)
            longest = max(longest, _prompt_tokens(obs, tokenizer))
            if term or trunc:
                break
    finally:
        env.close()
    limit = cfg.rollout.max_turns or getattr(env.spec, "max_episode_steps", None) or 50
    return Budget(
        cfg.rollout.tasks_per_iter * cfg.rollout.group_size,
        limit,
        longest,
        cfg.rollout.max_new_tokens,
    )


def _prompt_tokens(obs: dict[str, Any], tokenizer: Any | None) -> int:
    text = "\n".join(str(m["content"]) for m in obs["messages"])
    if tokenizer is None:
        return (len(text) + 3) // 4
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _tokenizer(path: str | Path) -> Any | None:
    files = ("tokenizer.json", "tokenizer.model", "vocab.json")
    if not any((Path(path) / f).exists() for f in files):
        return None  # transformers would build an empty tokenizer that counts 0 tokens
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(path)
    except Exception:  # noqa: BLE001 - a folder with only config.json: estimate by characters
        return None


def plan_model(name: str) -> tuple[ModelShape, Any | None]:
    """(shape, tokenizer) of ``--model``: of a folder or hub id from its config and tokenizer
    files alone (no weights); the built-in models (``tiny``, ``tiny-vlm``, ``smollm2``,
    ``smollm2-vlm``), which have no folder to read, are built (small, offline)."""
    if name == "tiny":
        tokenizer = tiny_tokenizer()
        return ModelShape.from_dict(tiny_model(tokenizer).config.to_dict(), name), tokenizer
    if name in VLM_BUILDERS:
        model, processor = VLM_BUILDERS[name]()
        return ModelShape.from_dict(model.config.to_dict(), name), processor.tokenizer
    if name == "smollm2":
        folder = build_smollm2()
    else:  # the config and tokenizer files only: no weights
        folder = model_dir(name, files=["*.json", "*.txt", "*.model"])
    return ModelShape.from_config(folder), _tokenizer(str(folder))


def vllm_share(plan: dict[str, float], cfg: Any) -> float:
    """The ``gpu_memory_utilization`` to give vLLM: its weights and KV cache with 20 % headroom,
    as a share of the GPU (at least 0.1, at most 0.9)."""
    need = plan.get("vllm weights", 0.0) + plan.get("vllm kv cache", 0.0)
    return min(0.9, max(0.1, 1.2 * need / (cfg.system.gpu_memory_gb * GB)))


def dry_run(cfg: Any, *, world: int | None = None) -> int:
    """Print the plan; 0 when the job's world size fits ``cfg.system.gpu_memory_gb``, else 2."""
    world = world or int(os.environ.get("WORLD_SIZE", "1"))
    try:
        shape, tokenizer = plan_model(cfg.model)
    except FileNotFoundError as e:
        raise SystemExit(f"seed-gym train --dry-run: {e}") from None
    budget = measure_budget(cfg, tokenizer)
    print(f"model      {shape.name}: {shape.params / 1e9:.2f} B parameters, {shape.layers} layers")
    system, optim = cfg.system, cfg.optim
    print(f"algorithm  {cfg.algo} on {cfg.env} (engine {system.engine}, fsdp {system.fsdp}, "
          f"lr {optim.lr:g}, kl {optim.kl_coef:g}, entropy {optim.ent_coef:g}, "
          f"lambda {cfg.opd.coef:g})")  # fmt: skip
    for split in ("train", "seen", "unseen"):
        m = split_manifest(cfg.env, split, **cfg.env_kwargs)
        print(f"split      {split:<7} {len(m.task_ids):>6} tasks  sha256 {m.hash[:12]}")
    print(
        f"iteration  {budget.episodes} episodes x <= {budget.max_turns} turns = <= "
        f"{budget.samples} step-samples; prompt <= {budget.prompt_tokens} tokens, response <= "
        f"{budget.response_tokens}: <= {budget.tokens / 1e6:.2f} M tokens"
    )
    items = list(memory_plan(shape, cfg, budget, 1))
    print(f"\nmemory per GPU (GiB; {cfg.system.gpu_memory_gb:g} GiB each)")
    print(f"{'':>20}" + "".join(f"{n} GPU{'s' if n > 1 else '':<1}".rjust(10) for n in WORLD_SIZES))
    plans = {n: memory_plan(shape, cfg, budget, n) for n in WORLD_SIZES}
    for item in items:
        print(f"{item:>20}" + "".join(f"{plans[n][item] / GB:10.1f}" for n in WORLD_SIZES))
    fits = {n: plans[n]["peak"] <= cfg.system.gpu_memory_gb * GB for n in WORLD_SIZES}
    print(f"{'fits':>20}" + "".join(f"{'yes' if fits[n] else 'NO':>10}" for n in WORLD_SIZES))
    plan = plans.get(world) or memory_plan(shape, cfg, budget, world)
    if plan["peak"] > cfg.system.gpu_memory_gb * GB:
        biggest = max((k for k in plan if k != "peak"), key=plan.get)
        hint = (
            "" if cfg.system.fsdp else "; --fsdp shards parameters, gradients and optimizer state"
        )
        print(
            f"\nseed-gym train --dry-run: does not fit on {world} GPU(s): {plan['peak'] / GB:.1f} "
            f"GiB needed per GPU, {cfg.system.gpu_memory_gb:g} available (largest: {biggest}, "
            f"{plan[biggest] / GB:.1f} GiB){hint}"
        )
        return 2
    if cfg.system.engine == "vllm":
        print(f"\nvLLM gpu_memory_utilization for {world} GPU(s): {vllm_share(plan, cfg):.2f}")
    print(f"\nfits on {world} GPU(s): {plan['peak'] / GB:.1f} of {cfg.system.gpu_memory_gb:g} GiB")
    return 0
