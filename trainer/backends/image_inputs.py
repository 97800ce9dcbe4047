"""Image prompts for vision-language policies: chat messages + PIL images -> ids and pixel values.

The agent env renders an image observation as one ``<image>`` placeholder per picture in the user
text (``wrappers/vision.py``). A LLaVA-style processor expands each placeholder into the model's
image tokens (``image_seq_length`` copies of the image token) and turns the pictures into
``pixel_values``; the model puts one projected vision feature on each image token.

The rollout engine, the loss forward pass and SEED's rescoring all go through the two functions
here, so a prompt is tokenized once (at sampling; ``StepSample.prompt_ids`` keeps the expanded
ids) and the pictures are preprocessed the same way every time they are scored:

- ``encode_image_prompt(processor, messages, images)`` -> prompt ids (image tokens expanded);
- ``image_inputs(processor, images_per_row, device)`` -> ``{"pixel_values": [n_images, 3, H, W]}``
  for a batch whose rows carry ``images_per_row[r]`` (in row order, as the model consumes image
  tokens row-major), or ``{}`` when no row has a picture (text batches stay untouched).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seed_gym.images import IMAGE_PLACEHOLDER


def is_processor(obj: Any) -> bool:
    """A multimodal processor (has an image processor and a tokenizer), not a bare tokenizer."""
    return hasattr(obj, "image_processor") and hasattr(obj, "tokenizer")


def _require_processor(processor: Any) -> None:
    if processor is None or not is_processor(processor):
        raise ValueError(
            "image observations need a vision-language policy with a processor "
            "(--model tiny-vlm, smollm2-vlm, or a local LLaVA-style folder); this policy is "
            "text-only: use --modality text"
        )


def encode_image_prompt(
    processor: Any, messages: list[dict[str, Any]], images: Sequence[Any]
) -> list[int]:
    """Prompt ids of a chat with pictures, generation prompt included, image tokens expanded.

    The chat template renders exactly as for text prompts (``engines.encode_chat``); the
    processor then expands each ``<image>`` into the image tokens. The number of placeholders in
    the messages must equal ``len(images)``.
    """
    _require_processor(processor)
    tokenizer = processor.tokenizer
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    n_placeholders = text.count(getattr(processor, "image_token", IMAGE_PLACEHOLDER))
    if n_placeholders != len(images):
        raise ValueError(
            f"the prompt has {n_placeholders} image placeholders but {len(images)} images"
        )
    out = processor(text=[text], images=list(images) or None, add_special_tokens=False)
    return [int(t) for t in out["input_ids"][0]]


def pixel_values(processor: Any, images: Sequence[Any]):
    """``[n_images, 3, H, W]`` float tensor of ``images``, as the processor prepares them."""
    _require_processor(processor)
    return processor.image_processor(list(images), return_tensors="pt")["pixel_values"]


def image_inputs(
    processor: Any, images_per_row: Sequence[Sequence[Any]] | None, device: Any = None
) -> dict[str, Any]:
    """Model keyword arguments for a batch: ``{"pixel_values": ...}``, or ``{}`` without images
    or without a processor (a text policy saw the ``<image>`` placeholders only)."""
    if not images_per_row or processor is None:
        return {}
    flat = [im for row in images_per_row for im in (row or [])]
    if not flat:
        return {}
    values = pixel_values(processor, flat)
    return {"pixel_values": values.to(device) if device is not None else values}


def sanitize_skill(skill: str | None, processor: Any) -> str | None:
    """A skill inserted into an image prompt must not add image placeholders of its own."""
    if not skill:
        return skill
    token = getattr(processor, "image_token", IMAGE_PLACEHOLDER)
    return skill.replace(token, "").replace(IMAGE_PLACEHOLDER, "")
