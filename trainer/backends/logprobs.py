"""Per-token logprobs (and entropy) of given response ids after given prompt ids.

Only response tokens get logits: the 49k-vocab head of SmolLM2 dominates the cost, so a sequence of
P prompt and L response tokens pays for L rows of ``lm_head``, not P + L.

Layout of a packed batch (``pack``): prompts are *left*-padded to the longest prompt P and responses
*right*-padded to the longest response L, so every row's response starts at column P:

    [pad pad p0 p1 p2 | r0 r1 r2 pad]      input_ids        [N, P + L]
    [ 0   0  1  1  1  |  1  1  1  0 ]      attention_mask   [N, P + L]
                      [  1  1  1  0 ]      response_mask    [N, L]

The logit that predicts ``r_j`` sits at column ``P - 1 + j``: the last ``L + 1`` hidden states minus
the final one, which is exactly what ``logits_to_keep = L + 1`` returns. Position ids come from the
attention mask so left padding does not shift positions.

Shared prefix (``pack(..., share_prefix=True)``): an agent env's prompts all start with the same
long instructions (EZPoints: ~260 of ~350 prompt tokens). The longest common prefix C of the
batch's prompts then runs once, as a batch of one, and its KV cache is repeated for every row;
the rows hold only the rest, with the padding between the prefix and each prompt's remainder:

    prefix_ids                              [c0 c1 c2]                    [C]
    input_ids       [pad p3 p4 | r0 r1 pad] (after the prefix)            [N, S + L]
    attention_mask  [1 1 1  0 1 1 | 1 1 0]  (prefix columns included)     [N, C + S + L]

Gradients flow through the repeated cache into the single prefix pass, so the loss is the same
function of the parameters, at a fraction of the compute (tested against the plain layout).

``response_logprobs`` (lists in, lists out, no grad) serves engines, rescoring and tests;
``packed_logprobs`` (a ``Packed`` batch in, padded tensors out, with grad) serves the loss.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from seed_gym.trainer.backends.image_inputs import image_inputs


@dataclass
class Packed:
    """A padded batch of (prompt, response) pairs; see the module docstring for the layout."""

    input_ids: torch.Tensor  # [N, P + L] long
    attention_mask: torch.Tensor  # [N, P + L] long
    position_ids: torch.Tensor  # [N, P + L] long
    response_ids: torch.Tensor  # [N, L] long (pad_id where masked)
    response_mask: torch.Tensor  # [N, L] float, 1.0 on real response tokens
    prompt_len: int  # P (without the shared prefix)
    prefix_ids: torch.Tensor | None = None  # [C] long: the shared prompt prefix, run once

    @property
    def response_len(self) -> int:  # L
        return int(self.response_ids.shape[1])

    def to(self, device: torch.device | str) -> Packed:
        return Packed(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.position_ids.to(device),
            self.response_ids.to(device),
            self.response_mask.to(device),
            self.prompt_len,
            None if self.prefix_ids is None else self.prefix_ids.to(device),
        )

    @property
    def prefix_len(self) -> int:  # C
        return 0 if self.prefix_ids is None else int(self.prefix_ids.shape[0])


MIN_SHARED_PREFIX = 16
"""Shorter common prefixes are not worth a separate forward pass."""


def shared_prefix_len(seqs: Sequence[Sequence[int]], *, keep: int = 1) -> int:
    """Length of the longest common prefix of ``seqs``, leaving every sequence at least ``keep``
    tokens of its own (the last prompt token must be in the row: it predicts the response)."""
    if len(seqs) < 2:
        return 0
    first, limit = seqs[0], min(len(s) for s in seqs) - keep
    n = 0
    while n < limit and all(s[n] == first[n] for s in seqs):
        n += 1
    return max(0, n)


def pack(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    *,
    pad_id: int,
    share_prefix: bool = False,
) -> Packed:
    """Left-pad prompts and right-pad responses into one batch (see the module docstring); with
    ``share_prefix`` the prompts' common prefix (if at least ``MIN_SHARED_PREFIX`` tokens) is
    split off to run once."""
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    if not prompts:
        raise ValueError("pack() needs at least one (prompt, response) pair")
    if any(len(p) == 0 for p in prompts):
        raise ValueError(
            "every prompt needs at least one token (the first response token is "
            "predicted from the last prompt token)"
        )
    c_len = shared_prefix_len(prompts) if share_prefix else 0
    prefix = None
    if c_len >= MIN_SHARED_PREFIX:
        prefix = torch.as_tensor(list(prompts[0][:c_len]), dtype=torch.long)  # [C]
        prompts = [p[c_len:] for p in prompts]
    n = len(prompts)
    p_len = max(len(p) for p in prompts)
    r_len = max(1, max(len(r) for r in responses))  # keep L >= 1 so shapes stay valid
    input_ids = torch.full((n, p_len + r_len), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((n, p_len + r_len), dtype=torch.long)
    response_ids = torch.full((n, r_len), pad_id, dtype=torch.long)
    response_mask = torch.zeros((n, r_len), dtype=torch.float32)
    for i, (p, r) in enumerate(zip(prompts, responses, strict=True)):
        input_ids[i, p_len - len(p) : p_len] = torch.as_tensor(list(p), dtype=torch.long)
        attention_mask[i, p_len - len(p) : p_len + len(r)] = 1
        if len(r):
            r_t = torch.as_tensor(list(r), dtype=torch.long)
            input_ids[i, p_len : p_len + len(r)] = r_t
            response_ids[i, : len(r)] = r_t
            response_mask[i, : len(r)] = 1.0
    if prefix is not None:
        prefix_mask = torch.ones((n, prefix.shape[0]), dtype=torch.long)  # [N, C]
        attention_mask = torch.cat([prefix_mask, attention_mask], dim=1)  # [N, C + P + L]
    # padding gets position 0; real tokens count from 0 at their first real token
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)  # [N, C + P + L]
    position_ids = position_ids[:, attention_mask.shape[1] - input_ids.shape[1] :]  # [N, P + L]
    return Packed(
        input_ids, attention_mask, position_ids, response_ids, response_mask, p_len, prefix
    )


@functools.cache
def cache_field() -> str:
    """The KV cache's name in model outputs and inputs: ``cache`` in transformers 5.x,
    ``past_key_values`` in 4.x."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    names = {f.name for f in dataclasses.fields(CausalLMOutputWithPast)}
    return "cache" if "cache" in names else "past_key_values"


def prefix_cache(
    model: torch.nn.Module, prefix_ids: torch.Tensor, rows: int, cache: Any = None
) -> Any:
    """The KV cache of ``prefix_ids`` [C] computed once and repeated for ``rows`` rows (keeps the
    graph when grad is on); ``cache``: an empty cache object to fill (else the model's own)."""
    given = {} if cache is None else {cache_field(): cache}
    out = model(input_ids=prefix_ids.unsqueeze(0), use_cache=True, logits_to_keep=1, **given)
    cache = getattr(out, cache_field())
    cache.batch_repeat_interleave(rows)
    return cache


def _accepts_logits_to_keep(model: torch.nn.Module) -> bool:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return "logits_to_keep" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def response_logits(model: torch.nn.Module, batch: Packed, **model_kwargs) -> torch.Tensor:
    """Logits that predict each response token: ``[N, L, V]`` (model dtype)."""
    r_len = batch.response_len
    kwargs = dict(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        use_cache=False,
        **model_kwargs,
    )
    if batch.prefix_ids is not None:
        cache = prefix_cache(model, batch.prefix_ids, batch.input_ids.shape[0])
        kwargs.update({"use_cache": True, cache_field(): cache})
    if _accepts_logits_to_keep(model):
        logits = model(**kwargs, logits_to_keep=r_len + 1).logits  # [N, L + 1, V]
    else:  # models without logits_to_keep pay for the full head
        logits = model(**kwargs).logits[:, -(r_len + 1) :]  # [N, L + 1, V]
    return logits[:, :-1]  # [N, L, V]


def token_logprobs_from_logits(
    logits: torch.Tensor, ids: torch.Tensor, *, temperature: float = 1.0, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``log softmax(logits / T)[ids]`` and optionally the entropy of ``softmax(logits / T)``.

    ``logits`` [..., V], ``ids`` [...]; computed in fp32 whatever the model dtype. ``T <= 0`` means
    greedy decoding and is scored at ``T = 1``.
    """
    logits = logits.float()  # [..., V]
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    lse = torch.logsumexp(logits, dim=-1)  # [...]
    logprobs = logits.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - lse  # [...]
    entropy = None
    if with_entropy:
        probs = torch.softmax(logits, dim=-1)  # [..., V]
        entropy = lse - (probs * logits).sum(-1)  # [...]
    return logprobs, entropy


def packed_logprobs(
    model: torch.nn.Module,
    batch: Packed,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    **model_kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logprobs ``[N, L]`` (and entropy ``[N, L]``) of ``batch.response_ids``; keeps the graph.

    Padded positions hold garbage: multiply by ``batch.response_mask``.
    """
    logits = response_logits(model, batch, **model_kwargs)  # [N, L, V]
    return token_logprobs_from_logits(
        logits, batch.response_ids, temperature=temperature, with_entropy=with_entropy
    )


def prompt_order(
    indices: Iterable[int],
    prompts: Sequence[Sequence[int]],
    lengths: Sequence[int] | None = None,
) -> list[int]:
    """``indices`` sorted by their prompt tokens (then by ``lengths``, then index): rows that
    share a long prompt prefix become neighbours, so a micro-batch cut from the order runs that
    prefix once (``pack(share_prefix=True)``) and pads little."""
    return sorted(indices, key=lambda i: (list(prompts[i]), lengths[i] if lengths else 0, i))


@torch.no_grad()
def response_logprobs(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    *,
    micro_batch: int,
    pad_id: int,
    with_entropy: bool = False,
    temperature: float = 1.0,
    sort_by_length: bool = True,
    images: Sequence[Sequence[Any]] | None = None,
    processor: Any = None,
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """Per-token logprobs of ``responses[i]`` after ``prompts[i]``: a list of fp32 CPU tensors
    ``[L_i]`` (and entropies ``[L_i]`` if asked), in input order.

    Runs ``micro_batch`` pairs per forward pass; with ``sort_by_length`` pairs are ordered by
    prompt tokens, so pairs that share a prompt prefix (and have similar lengths) share a
    micro-batch and its prefix pass (results do not depend on it up to floating-point noise).

    Vision-language policies: ``images[i]`` are the pictures of prompt i (whose ids already hold
    the expanded image tokens) and ``processor`` turns them into pixel values.
    """
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    n = len(prompts)
    if len(responses) != n:
        raise ValueError(f"{n} prompts but {len(responses)} responses")
    device = next(model.parameters()).device
    order = list(range(n))
    if sort_by_length:
        # the steps of one trajectory under its skill share a long prefix; lengths stay close too
        order = prompt_order(order, prompts, [len(r) for r in responses])
    out_lp: list[torch.Tensor | None] = [None] * n
    out_ent: list[torch.Tensor | None] = [None] * n
    was_training = model.training
    model.eval()
    try:
        for start in range(0, n, micro_batch):
            idx = order[start : start + micro_batch]
            batch = pack(
                [prompts[i] for i in idx],
                [responses[i] for i in idx],
                pad_id=pad_id,
                share_prefix=images is None,
            )
            vision = {}
            if images is not None:  # pixel values of this micro-batch's rows, in row order
                vision = image_inputs(processor, [images[i] for i in idx], device)
            lp, ent = packed_logprobs(
                model,
                batch.to(device),
                temperature=temperature,
                with_entropy=with_entropy,
                **vision,
            )
            lp = lp.float().cpu()
            ent = ent.float().cpu() if ent is not None else None
            for row, i in enumerate(idx):
                k = len(responses[i])
                out_lp[i] = lp[row, :k].clone()
                if ent is not None:
                    out_ent[i] = ent[row, :k].clone()
    finally:
        model.train(was_training)
    return out_lp, (out_ent if with_entropy else None)  # type: ignore[return-value]


def padded(rows: Sequence[Sequence[float] | None], like: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Per-row values right-padded into ``like``'s shape [n, L], and the mask of the rows that
    have values (all-zero rows for None)."""
    values, mask = torch.zeros_like(like), torch.zeros_like(like)  # [n, L], [n, L]
    for row, v in enumerate(rows):
        if v:
            values[row, : len(v)] = torch.tensor(list(v))
            mask[row, : len(v)] = 1.0
    return values, mask
