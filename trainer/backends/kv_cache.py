"""A KV cache for sampling that grows in place instead of by concatenation.

Hugging Face's ``DynamicCache`` appends every decode step's keys and values with ``torch.cat``,
which copies each layer's whole cache once per token. Here each layer keeps a buffer with room to
spare and writes the new positions into it; the model reads the filled part as a view, so
attention sees the same numbers (samples are unchanged: tested in ``tests/test_engines.py``). The
buffer doubles when a row outgrows it. SmolLM2-135M, batch 8, ~355-token prompts, one CPU thread:
1.04-1.07x decoding tokens/s (``benchmarks/bench_decode.py``, docs/benchmarks.md).

For no-grad sampling only (``HFEngine``): writing into a buffer in place would break the autograd
graph of a training forward, which keeps ``DynamicCache`` (``logprobs.prefix_cache``).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer


class GrowingLayer(DynamicLayer):
    """One layer's keys and values ``[B, H, S, D]`` as views of ``[B, H, capacity, D]`` buffers."""

    def __init__(self, reserve: int = 0):
        super().__init__()
        self.reserve = reserve  # positions to allocate at the first write, when more than it holds
        self.length = 0
        self.key_buf: torch.Tensor | None = None  # [B, H, capacity, D]
        self.value_buf: torch.Tensor | None = None  # [B, H, capacity, D]

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        capacity = max(self.reserve, key_states.shape[-2])
        self.key_buf, self.value_buf = _room(key_states, capacity), _room(value_states, capacity)
        self.is_initialized = True

    def _views(self) -> None:
        self.keys = self.key_buf[..., : self.length, :]  # [B, H, S, D]
        self.values = self.value_buf[..., : self.length, :]  # [B, H, S, D]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start, end = self.length, self.length + key_states.shape[-2]
        if end > self.key_buf.shape[-2]:  # double the room (amortized O(1) copies per token)
            self._resize(max(end, 2 * self.key_buf.shape[-2]))
        self.key_buf[..., start:end, :] = key_states
        self.value_buf[..., start:end, :] = value_states
        self.length = end
        self._views()
        return self.keys, self.values

    def _resize(self, capacity: int) -> None:
        for name in ("key_buf", "value_buf"):
            old = getattr(self, name)
            new = _room(old, capacity)
            new[..., : self.length, :] = old[..., : self.length, :]
            setattr(self, name, new)

    def get_seq_length(self) -> int:
        return self.length if self.is_initialized else 0

    def reset(self) -> None:
        self.key_buf = self.value_buf = None
        self.length = 0
        super().reset()

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative count of positions to remove")
        if tokens_to_remove < 0 and self.is_initialized:
            self.length = max(0, self.length + tokens_to_remove)
            self._views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.is_initialized:
            self.key_buf = self.key_buf.repeat_interleave(repeats, dim=0)
            self.value_buf = self.value_buf.repeat_interleave(repeats, dim=0)
            self._views()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self.key_buf = self.key_buf[indices, ...]
            self.value_buf = self.value_buf[indices, ...]
            self._views()

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.batch_select_indices(beam_idx.to(self.device))


def _room(like: torch.Tensor, capacity: int) -> torch.Tensor:
    """An uninitialised ``[B, H, capacity, D]`` buffer of ``like``'s [B, H, S, D] kind."""
    return like.new_empty((*like.shape[:-2], capacity, like.shape[-1]))


def growing_cache(model: torch.nn.Module, reserve: int) -> DynamicCache:
    """An empty ``DynamicCache`` for ``model`` whose layers are ``GrowingLayer(reserve)``: pass it as
    the model's cache (``logprobs.cache_field()``) in a no-grad forward. Models whose config asks
    for other layer kinds (sliding windows) keep Hugging Face's own cache."""
    cache = DynamicCache(config=model.config)
    if not cache.layers or any(type(layer) is not DynamicLayer for layer in cache.layers):
        return cache
    cache.layers = [GrowingLayer(reserve) for _ in cache.layers]
    return cache
