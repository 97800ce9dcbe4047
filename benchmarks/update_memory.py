"""Resident memory of SmolLM2 update steps, and what glibc keeps of what torch frees.

    python benchmarks/update_memory.py [--model smollm2] [--steps 3] [--batch 8] [--tokens 400]

Each step: a bf16-autocast forward of ``batch`` x ``tokens`` random ids (logits for the last 60
positions, as the update's response-only head), backward, AdamW step, gradients set to None. It
prints the resident set after each step, then after ``release_free_memory`` (glibc
``malloc_trim``, which ``PhaseMeter`` calls at the end of every phase): the difference is memory
the process held but no tensor used.
"""

from __future__ import annotations

import argparse

import torch

from seed_gym.trainer.backends.models import load_policy
from seed_gym.trainer.phases import release_free_memory, rss_mb


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--tokens", type=int, default=400)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = load_policy(args.model).model
    vocab = model.config.vocab_size
    print(f"loaded: {rss_mb():.0f} MiB resident")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    for step in range(args.steps):
        ids = torch.randint(0, vocab, (args.batch, args.tokens))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(input_ids=ids, logits_to_keep=60).logits  # [batch, 60, vocab]
        logits.float().logsumexp(-1).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del logits
        print(f"after step {step + 1}: {rss_mb():.0f} MiB resident")
    trimmed = release_free_memory()
    print(f"after release_free_memory ({'malloc_trim' if trimmed else 'unavailable'}): "
          f"{rss_mb():.0f} MiB resident")  # fmt: skip


if __name__ == "__main__":
    main()
