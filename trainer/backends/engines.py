"""Rollout engines: turn many prompts into sampled completions with their token logprobs.

``RolloutEngine`` is the protocol the collector talks to; ``HFEngine`` implements it with a plain
Hugging Face model (batched, left-padded, KV-cached sampling written out here so that the returned
logprobs are exactly the ones the trainer recomputes). A vLLM engine implements the same protocol.

Conventions every engine follows:
- ``Generation.ids`` are the sampled token ids, never re-tokenized; they end with the token that
  completed a stop string, with the EOS token, or at ``max_new_tokens``.
- ``Generation.logprobs[j] = log softmax(logits_j / T)[ids[j]]`` with the sampling temperature ``T``
  and *without* top-p truncation (``T <= 0``, greedy, is scored at ``T = 1``), i.e. what
  ``logprobs.response_logprobs(..., temperature=T)`` recomputes.
- ``Generation.text`` is the decoded completion (special tokens dropped), cut right after the first
  stop string, which is kept.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from seed_gym.trainer.backends.distributed import full_state_dict
from seed_gym.trainer.backends.image_inputs import encode_image_prompt, image_inputs
from seed_gym.trainer.backends.kv_cache import growing_cache
from seed_gym.trainer.backends.logprobs import (
    MIN_SHARED_PREFIX,
    cache_field,
    prefix_cache,
    shared_prefix_len,
    token_logprobs_from_logits,
)
from seed_gym.trainer.backends.models import autocast

Messages = list[dict[str, Any]]
Prompt = list[int] | Messages


@dataclass
class Generation:
    ids: list[int]  # sampled token ids, as sampled
    logprobs: list[float]  # sampling-policy logprob of each id (see module docstring)
    text: str  # decoded, cut right after the stop string
    finish_reason: str = "length"  # "stop" (stop string), "eos" or "length"
    prompt_ids: list[int] = dataclasses.field(default_factory=list)  # the ids the model saw
    # (the prompt's KV cache, this row in it): with ``HFEngine.generate(..., keep_prompt_kv=True)``
    prompt_kv: tuple[PromptKV, int] | None = dataclasses.field(default=None, repr=False)


@dataclass
class PromptKV:
    """The KV cache of one batch of prompts right after their prefill, before any sampled token
    (``HFEngine.generate(..., keep_prompt_kv=True)``). A later call whose prompt *extends* row r's
    prompt passes ``past=`` and runs only the extension: the structured analyzer's second field
    continues the first one's prompt (chat + the answer so far) without prefilling it again."""

    cache: Any  # the model's cache object over the batch's rows
    attention: torch.Tensor  # [n, K] the mask over the cached columns (left pads 0)
    last_pos: torch.Tensor  # [n] position id of each row's last prompt token
    prompts: list[list[int]]  # [n] each row's full prompt ids

    def select(self, rows: list[int]) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """(a copy of the cache holding ``rows`` only, their mask [r, K], last positions [r])."""
        sel = torch.as_tensor(rows, dtype=torch.long, device=self.attention.device)
        cache = copy.deepcopy(self.cache)
        cache.batch_select_indices(sel)
        return cache, self.attention[sel], self.last_pos[sel]


@runtime_checkable
class RolloutEngine(Protocol):
    """What the loop needs from an inference backend (``HFEngine``, ``VLLMEngine``).

    Capabilities are declared, not probed: ``supports_banned`` (``generate(..., banned=)``: token
    ids never sampled, the analyzer's structured decoding) and ``supports_json_schema``
    (``generate_json``: decoding under a JSON schema, vLLM's structured outputs).
    """

    supports_banned: bool
    supports_json_schema: bool

    def generate(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        stop: Sequence[str] = (),
        seed: int | None = None,
    ) -> list[Generation]:
        """One completion per prompt (token ids, or chat messages the engine templates)."""
        ...

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Make the engine sample from ``model``'s current weights."""
        ...

    def sleep(self) -> None:
        """Give the accelerator's memory to the update (vLLM's sleep mode; else a no-op)."""
        ...

    def wake(self) -> None:
        """Take it back for rollouts (before ``sync_weights``)."""
        ...

    def generate_json(
        self, prompts: Sequence[Prompt], schema: dict[str, Any], *, max_new_tokens: int
    ) -> list[str]:
        """Greedy completions under a JSON ``schema`` (only where ``supports_json_schema``)."""
        ...


def encode_chat(tokenizer, messages: Messages) -> list[int]:
    """Chat messages -> prompt ids with the generation prompt, exactly as the model sees them."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def left_pad(
    prompts: list[list[int]], pad_id: int, c_len: int, device: Any
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The prompts left-padded into one batch after a shared prefix of ``c_len`` tokens (already
    in the cache): input ids [n, P], the attention mask over prefix + prompt [n, C + P] (pads 0)
    and the prompt tokens' positions [n, P] (each row counts from its first real token)."""
    n, p_len = len(prompts), max(len(p) for p in prompts)
    input_ids = torch.full((n, p_len), pad_id, dtype=torch.long)
    attention = torch.ones((n, c_len + p_len), dtype=torch.long)  # prefix columns: 1
    for i, p in enumerate(prompts):
        input_ids[i, p_len - len(p) :] = torch.as_tensor(p, dtype=torch.long)
        attention[i, c_len : c_len + p_len - len(p)] = 0
    input_ids, attention = input_ids.to(device), attention.to(device)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)[:, c_len:]  # [n, P]
    return input_ids, attention, positions


def sample_tokens(
    logits: torch.Tensor, temperature: float, top_p: float, gens: list[torch.Generator]
) -> torch.Tensor:
    """One token per row of ``logits`` [b, V]: the argmax when ``temperature`` is 0, else
    inverse-CDF sampling of the top-p filtered softmax with one uniform from each row's own
    generator (so a row's draws do not depend on the other rows). Returns [b]."""
    if temperature <= 0:
        return logits.argmax(-1)
    probs = torch.softmax(_top_p_filter(logits / temperature, top_p), dim=-1)  # [b, V]
    u = torch.cat([torch.rand(1, generator=g) for g in gens]).to(logits.device)  # [b]
    tok = torch.searchsorted(probs.cumsum(-1), u.unsqueeze(-1), right=True)  # [b, 1]
    return tok.squeeze(-1).clamp(max=probs.shape[-1] - 1)


def _top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Mask (to -inf) tokens outside the smallest set whose probability reaches ``top_p``."""
    if top_p >= 1.0:
        return logits
    sorted_logits, sorted_idx = torch.sort(logits, descending=True, dim=-1)  # [B, V]
    probs = torch.softmax(sorted_logits, dim=-1)  # [B, V]
    # keep a token if the mass *before* it is < top_p (so the top token is always kept)
    drop = (probs.cumsum(-1) - probs) >= top_p  # [B, V]
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter(-1, sorted_idx, sorted_logits)


def _image_token_ids(processor: Any | None) -> list[int]:
    """Ids a VLM must not sample: its image token(s)."""
    if processor is None:
        return []
    tokenizer = processor.tokenizer
    ids = {getattr(processor, "image_token_id", None)}
    ids.add(tokenizer.convert_tokens_to_ids(getattr(processor, "image_token", "<image>")))
    unk = tokenizer.unk_token_id
    return sorted(int(i) for i in ids if i is not None and i != unk and 0 <= i < len(tokenizer))


def _warn_text_only() -> None:
    import warnings

    warnings.warn(
        "a text-only policy got image observations: it sees the <image> placeholders, not the "
        "pictures (use a vision-language model: --model tiny-vlm, smollm2-vlm or a LLaVA folder)",
        stacklevel=3,
    )


def _ban_repeats(logits: torch.Tensor, rows: list[list[int]], n: int) -> torch.Tensor:
    """``logits`` [b, V] with every token masked that would complete an n-gram already in its
    row's ids (a copy when anything is masked)."""
    banned = []
    for r, row in enumerate(rows):
        if len(row) < n:
            continue
        tail = row[len(row) - n + 1 :] if n > 1 else []
        hits = {row[j + n - 1] for j in range(len(row) - n + 1) if row[j : j + n - 1] == tail}
        banned += [(r, t) for t in hits]
    if not banned:
        return logits
    out = logits.clone()
    r_idx, t_idx = zip(*banned, strict=True)
    out[list(r_idx), list(t_idx)] = float("-inf")
    return out


def _ban_rows(logits: torch.Tensor, rows: list[Sequence[int]]) -> torch.Tensor:
    """``logits`` [b, V] with ``rows[r]``'s ids masked in row r (a copy when anything is)."""
    pairs = [(r, int(t)) for r, ids in enumerate(rows) for t in ids]
    if not pairs:
        return logits
    out = logits.clone()
    r_idx, t_idx = zip(*pairs, strict=True)
    out[list(r_idx), list(t_idx)] = float("-inf")
    return out


def _suppress(logits: torch.Tensor, ids: list[int]) -> torch.Tensor:
    """``logits`` with ``ids`` masked to -inf (a copy), or ``logits`` itself when ``ids`` is empty."""
    if not ids:
        return logits
    out = logits.clone()
    out[:, ids] = float("-inf")
    return out


class HFEngine:
    """Batched sampling from a Hugging Face causal LM on this process's device.

    The engine usually *shares* the trainer's model object, so ``sync_weights`` is free; give it a
    separate copy (e.g. on another device) and ``sync_weights`` copies the state dict.

    Args:
        model: the policy (``PreTrainedModel`` or a peft wrapper).
        tokenizer: its tokenizer, with a chat template (used when prompts are messages).
        max_batch: prompts per forward pass; longer prompt lists are processed in chunks.
        autocast_bf16: sample under bf16 autocast (faster on CPU; logprobs then differ slightly
            from an fp32 recomputation).
        processor: a vision-language policy's processor; then ``generate(..., images=...)``
            sends pictures with the prompts (``trainer/backends/image_inputs.py``), and the image token is never
            sampled (it would ask for a picture that is not there; its probability mass still
            counts in the reported logprobs, as top-p's does).
        kv_in_place: the KV cache grows in place (``kv_cache.GrowingLayer``); False: Hugging
            Face's ``DynamicCache`` (the same samples, one copy of the cache per token).
    """

    supports_prompt_kv = True  # ``generate(..., keep_prompt_kv=, past=)``
    supports_banned = True  # ``generate(..., banned=)``
    supports_json_schema = False  # no ``generate_json``: the analyzer bans tokens instead

    def __init__(
        self,
        model,
        tokenizer,
        *,
        max_batch: int = 64,
        autocast_bf16: bool = False,
        processor: Any | None = None,
        kv_in_place: bool = True,
    ):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.model = model
        self.tokenizer = tokenizer
        self.processor = processor
        self.suppress_ids = _image_token_ids(processor)  # [] for text policies
        self.max_batch = max_batch
        self.autocast_bf16 = autocast_bf16
        self.kv_in_place = kv_in_place
        self.eos_ids = self._eos_ids(model, tokenizer)
        self.pad_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        )
        self._cache_field = cache_field()

    @staticmethod
    def _eos_ids(model, tokenizer) -> list[int]:
        ids: set[int] = set()
        if tokenizer.eos_token_id is not None:
            ids.add(int(tokenizer.eos_token_id))
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif gen_eos:
            ids.update(int(i) for i in gen_eos)
        return sorted(ids)

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Copy ``model``'s weights into the engine's own model (gathered from the shards when
        ``model`` is FSDP-sharded); free when the engine shares the trainer's model."""
        if model is self.model:
            return
        self.model.load_state_dict(full_state_dict(model))

    def sleep(self) -> None:
        """Nothing to release: the HF engine's memory is the policy's (see ``VLLMEngine``)."""

    def generate_json(
        self, prompts: Sequence[Prompt], schema: dict[str, Any], *, max_new_tokens: int
    ) -> list[str]:
        raise NotImplementedError(
            "HFEngine does not decode under a JSON schema (supports_json_schema is False)"
        )

    def wake(self) -> None:
        pass

    def _encode(self, prompt: Prompt) -> list[int]:
        if len(prompt) and isinstance(prompt[0], dict):
            return encode_chat(self.tokenizer, prompt)  # type: ignore[arg-type]
        return [int(t) for t in prompt]  # type: ignore[union-attr]

    def generate(
        self,
        prompts: Sequence[Prompt],
        *,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        stop: Sequence[str] = (),
        seed: int | Sequence[int] | None = None,
        images: Sequence[Sequence[Any]] | None = None,
        no_repeat_ngram: int = 0,
        keep_prompt_kv: bool = False,
        past: Sequence[tuple[PromptKV, int] | None] | None = None,
        banned: Callable[[list[int]], Sequence[int]] | None = None,
    ) -> list[Generation]:
        """``seed``: of the call (each prompt gets its own stream from it) or one per prompt.
        ``images[i]``: the PIL pictures of prompt i (its ``<image>`` placeholders, in order);
        needs the engine's ``processor``. ``no_repeat_ngram`` n > 0 never samples a token that
        would repeat an n-gram of the completion (Hugging Face's ``no_repeat_ngram_size``): a
        guard against degenerate loops for text nobody trains on (the analyzer's answers); the
        reported logprobs are then not the sampling distribution's.
        ``keep_prompt_kv``: each ``Generation.prompt_kv`` keeps its prompt's KV cache (text
        prompts); ``past[i]``, such a handle from an earlier call, lets prompt i run only what it
        adds to that call's prompt when it starts with it (else it is prefilled whole). Greedy
        outputs match a whole prefill up to floating-point rounding.
        ``banned(ids)``: the token ids a row may not sample next, given the ids it sampled so far
        (the structured analyzer keeps a field open until it holds enough words); like
        ``no_repeat_ngram``, the reported logprobs are then not the sampling distribution's."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if images is not None and any(images) and self.processor is None:
            _warn_text_only()  # a text policy sees the <image> placeholders only, as before
        elif images is not None and any(images):
            return self._generate_with_images(
                prompts, images, max_new_tokens, temperature, top_p, stop, seed, no_repeat_ngram
            )
        encoded = [self._encode(p) for p in prompts]
        return self._generate_encoded(
            encoded, None, max_new_tokens, temperature, top_p, stop, seed, no_repeat_ngram,
            keep_kv=keep_prompt_kv, past=past, banned=banned,
        )  # fmt: skip

    def _generate_with_images(
        self, prompts, images, max_new_tokens, temperature, top_p, stop, seed, no_repeat_ngram
    ) -> list[Generation]:
        """``generate`` for prompts with pictures: same seeding and batching, pixel values with
        the first forward pass of each chunk (the KV cache carries them afterwards)."""
        if len(images) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(images)} image lists")
        encoded = [
            encode_image_prompt(self.processor, p, imgs) if imgs else self._encode(p)
            for p, imgs in zip(prompts, images, strict=True)
        ]
        return self._generate_encoded(
            encoded, images, max_new_tokens, temperature, top_p, stop, seed, no_repeat_ngram
        )

    def _generate_encoded(
        self, encoded, images, max_new_tokens, temperature, top_p, stop, seed, no_repeat_ngram=0,
        *, keep_kv: bool = False, past: Sequence[tuple[PromptKV, int] | None] | None = None,
        banned: Callable[[list[int]], Sequence[int]] | None = None,
    ) -> list[Generation]:  # fmt: skip
        """Seed, length-sort and chunk already-encoded prompts (``images``: one list per prompt,
        or None for text only) through ``_generate_batch``; results in prompt order. Prompts
        that extend their ``past`` prompt run first, one batch per cached chunk."""
        if any(len(p) == 0 for p in encoded):
            raise ValueError("empty prompt")
        # one random stream per prompt, from (seed, position in ``prompts``) or given per prompt:
        # a completion does not depend on the other prompts of the call, on max_batch or on when
        # other rows stop
        if seed is None:
            seed = int(torch.randint(2**62, (1,)).item())
        if isinstance(seed, Sequence):
            if len(seed) != len(encoded):
                raise ValueError(f"{len(encoded)} prompts but {len(seed)} seeds")
            row_seeds = [int(s) for s in seed]
        else:
            row_seeds = [
                int(s >> 2)
                for s in np.random.SeedSequence(int(seed)).generate_state(len(encoded), np.uint64)
            ]
        out: list[Generation | None] = [None] * len(encoded)
        args = (max_new_tokens, temperature, top_p, list(stop))
        for kv, rows in self._extensions(encoded, past).values():
            idx = [i for i, _ in rows]
            chunk, snap = self._generate_batch(
                [encoded[i][len(kv.prompts[r]) :] for i, r in rows], *args,
                [row_seeds[i] for i in idx], no_repeat_ngram=no_repeat_ngram, keep_kv=keep_kv,
                past=kv.select([r for _, r in rows]), banned=banned,
            )  # fmt: skip
            self._place(out, idx, chunk, snap, encoded)
        # similar lengths share a chunk so little compute goes to padding
        todo = [i for i in range(len(encoded)) if out[i] is None]
        order = sorted(todo, key=lambda i: (len(encoded[i]), i))
        for start in range(0, len(order), self.max_batch):
            idx = order[start : start + self.max_batch]
            chunk, snap = self._generate_batch(
                [encoded[i] for i in idx], *args, [row_seeds[i] for i in idx],
                row_images=None if images is None else [images[i] for i in idx],
                no_repeat_ngram=no_repeat_ngram, keep_kv=keep_kv and images is None,
                banned=banned,
            )  # fmt: skip
            self._place(out, idx, chunk, snap, encoded)
        return out  # type: ignore[return-value]

    @staticmethod
    def _extensions(
        encoded: list[list[int]], past: Sequence[tuple[PromptKV, int] | None] | None
    ) -> dict[int, tuple[PromptKV, list[tuple[int, int]]]]:
        """Prompts that strictly extend their ``past`` row's prompt, grouped by cached chunk:
        id(chunk) -> (chunk, [(prompt index, row in the chunk)])."""
        if past is None:
            return {}
        if len(past) != len(encoded):
            raise ValueError(f"{len(encoded)} prompts but {len(past)} past entries")
        groups: dict[int, tuple[PromptKV, list[tuple[int, int]]]] = {}
        for i, handle in enumerate(past):
            if handle is None:
                continue
            kv, row = handle
            done = kv.prompts[row]
            if len(encoded[i]) > len(done) and encoded[i][: len(done)] == done:
                groups.setdefault(id(kv), (kv, []))[1].append((i, row))
        return groups

    @staticmethod
    def _place(out, idx, chunk, snap, encoded) -> None:
        """Results of one chunk into ``out`` (prompt order), with their prompt (and KV handle)."""
        if snap is not None:
            snap.prompts = [encoded[i] for i in idx]
        for k, (i, g) in enumerate(zip(idx, chunk, strict=True)):
            g.prompt_ids = encoded[i]
            g.prompt_kv = (snap, k) if snap is not None else None
            out[i] = g

    def _first_inputs(
        self, prompts: list[list[int]], shared: bool, past: Any, device: Any
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, Any]:
        """The first forward's input ids [n, P], attention mask over cache + prompt [n, K + P] and
        positions [n, P], with the common prefix [C] to cache first (or None) or the ``past``
        cache the prompts extend (or None)."""
        if past is not None:  # the prompts continue cached rows: (cache, mask [n, K], last [n])
            cache, past_mask, last_pos = past
            input_ids, mask, _ = left_pad(prompts, self.pad_id, 0, device)  # [n, P], [n, P]
            attention = torch.cat([past_mask.to(device), mask], dim=-1)  # [n, K + P]
            positions = last_pos.to(device).unsqueeze(-1) + mask.cumsum(-1)  # [n, P]; pads masked
            return input_ids, attention, positions, None, cache
        # the prompts' common prefix (an env's instructions) runs once, as a batch of one
        c_len = shared_prefix_len(prompts) if shared else 0
        prefix = None
        if c_len >= MIN_SHARED_PREFIX:
            prefix = torch.as_tensor(prompts[0][:c_len], dtype=torch.long, device=device)  # [C]
            prompts = [p[c_len:] for p in prompts]
        else:
            c_len = 0
        input_ids, attention, positions = left_pad(prompts, self.pad_id, c_len, device)
        return input_ids, attention, positions, prefix, None

    @torch.no_grad()
    def _generate_batch(
        self,
        prompts: list[list[int]],
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        stop: list[str],
        row_seeds: list[int],
        row_images: list[Sequence[Any]] | None = None,
        no_repeat_ngram: int = 0,
        keep_kv: bool = False,
        past: Any = None,
        banned: Callable[[list[int]], Sequence[int]] | None = None,
    ) -> tuple[list[Generation], PromptKV | None]:
        """One chunk: the completions, and with ``keep_kv`` the prompts' KV after the prefill."""
        model = self.model
        device = next(model.parameters()).device
        n = len(prompts)
        input_ids, attention, positions, prefix, cache = self._first_inputs(
            prompts, row_images is None, past, device
        )
        eos = torch.as_tensor(self.eos_ids, dtype=torch.long, device=device)
        # a stop string is at most this many tokens long (every token decodes to >= 1 char); the
        # tail window decoded per step is a bit longer to absorb partial UTF-8 bytes
        window = max((len(s) for s in stop), default=0) + 4

        ids: list[list[int]] = [[] for _ in range(n)]
        lps: list[list[float]] = [[] for _ in range(n)]
        reasons = ["length"] * n
        alive = list(range(n))  # rows of the original batch still generating, in cache order
        gens = [torch.Generator(device="cpu").manual_seed(s) for s in row_seeds]
        snapshot = None
        was_training = model.training
        model.eval()
        try:
            with autocast(self.autocast_bf16, device.type):
                if cache is None and self.kv_in_place:  # room for prompts + new tokens
                    reserve = attention.shape[-1] + max_new_tokens  # C + P + new
                    cache = growing_cache(model, reserve)
                if prefix is not None:
                    cache = prefix_cache(model, prefix, n, cache)
                step_ids, step_mask, step_pos = input_ids, attention, positions
                for t in range(max_new_tokens):
                    kwargs = {self._cache_field: cache} if cache is not None else {}
                    if t == 0 and row_images is not None:  # pictures: first pass only
                        kwargs.update(image_inputs(self.processor, row_images, device))
                    out = model(
                        input_ids=step_ids,
                        attention_mask=step_mask,
                        position_ids=step_pos,
                        use_cache=True,
                        logits_to_keep=1,
                        **kwargs,
                    )
                    cache = getattr(out, self._cache_field)
                    if t == 0 and keep_kv:  # before any row is dropped or token appended
                        last = step_pos[:, -1].clone()  # [n]
                        snapshot = PromptKV(copy.deepcopy(cache), step_mask.clone(), last, [])
                    logits = out.logits[:, -1].float()  # [b, V]
                    pick = _suppress(logits, self.suppress_ids)  # [b, V]; logits if none
                    if no_repeat_ngram > 0:
                        pick = _ban_repeats(pick, [ids[r] for r in alive], no_repeat_ngram)
                    if banned is not None:
                        pick = _ban_rows(pick, [banned(ids[r]) for r in alive])
                    tok = sample_tokens(pick, temperature, top_p, [gens[r] for r in alive])
                    lp, _ = token_logprobs_from_logits(logits, tok, temperature=temperature)  # [b]
                    is_eos = torch.isin(tok, eos)  # [b]
                    keep: list[int] = []
                    for j, row in enumerate(alive):
                        ids[row].append(int(tok[j]))
                        lps[row].append(float(lp[j]))
                        if bool(is_eos[j]):
                            reasons[row] = "eos"
                        elif stop and self._hit_stop(ids[row], stop, window):
                            reasons[row] = "stop"
                        else:
                            keep.append(j)
                    if not keep or t == max_new_tokens - 1:
                        break
                    next_tok = tok.unsqueeze(-1)  # [b, 1]
                    next_pos = step_pos[:, -1:] + 1  # [b, 1]
                    mask = torch.cat([step_mask, torch.ones_like(next_tok)], dim=-1)  # [b, P+t+1]
                    if len(keep) < len(alive):  # drop finished rows from the batch and the cache
                        sel = torch.as_tensor(keep, dtype=torch.long, device=device)
                        cache.batch_select_indices(sel)
                        next_tok, next_pos, mask = next_tok[sel], next_pos[sel], mask[sel]
                        alive = [alive[j] for j in keep]
                    step_ids, step_mask, step_pos = next_tok, mask, next_pos
        finally:
            model.train(was_training)
        gens_out = [
            Generation(ids[i], lps[i], self._text(ids[i], stop), reasons[i]) for i in range(n)
        ]
        return gens_out, snapshot

    def _hit_stop(self, row_ids: list[int], stop: list[str], window: int) -> bool:
        tail = self.tokenizer.decode(row_ids[-window:], skip_special_tokens=True)
        return any(s in tail for s in stop)

    def _text(self, row_ids: list[int], stop: list[str]) -> str:
        text = self.tokenizer.decode(row_ids, skip_special_tokens=True)
        cuts = [text.find(s) + len(s) for s in stop if s in text]
        return text[: min(cuts)] if cuts else text
