"""Peak memory and seconds of SmolLM2 update steps, side by side: how the update's memory options
trade memory for time.

    python benchmarks/update_memory.py                      # 5 variants x 2 repeats, ~20 min
    python benchmarks/update_memory.py --variants default,eager --repeats 3
    python benchmarks/update_memory.py --model tiny --tokens 64   # seconds, a smoke check

Each step is one optimizer step over ``--rows`` sequences of ``--tokens`` random ids: bf16-autocast
forwards (logits for the last 60 positions, as the update's response-only head), backwards,
AdamW, gradients set to None. Every variant runs in a fresh process (so one's peak cannot hide
another's), the variants alternate ``--repeats`` times, and the table gives medians:

- ``default``: micro-batches of 8, glibc's own mmap threshold (what the update did before);
- ``eager``: inside ``phases.eager_release()``;
- ``eager+micro4``: the same rows in micro-batches of 4;
- ``gc``: gradient checkpointing, micro-batches of 8, glibc's own threshold;
- ``eager+gc``: both (what ``--gradient-checkpointing`` does to the update now).

Printed per variant: the peak resident set of the steps (``VmHWM``), the resident set after the
last step, the median seconds of the steps after the first, the ratio of both to the first
variant's, and the first step's gradient projected on a fixed random direction, relative to the
first variant's (the variants compute the same sum; differences are bf16 rounding).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time

VARIANTS = ("default", "eager", "eager+micro4", "gc", "eager+gc")


def one(variant: str, args: argparse.Namespace) -> dict[str, float]:
    """Run the steps of one variant in this process; its measurements."""
    import torch

    from seed_gym.trainer.backends.models import load_policy
    from seed_gym.trainer.phases import eager_release, peak_rss_mb, reset_peak_rss, rss_mb

    torch.set_num_threads(args.threads)
    model = load_policy(args.model).model
    if "gc" in variant:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    micro = 4 if "micro4" in variant else 8
    vocab = model.config.vocab_size
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    data = torch.Generator().manual_seed(0)
    region = eager_release() if "eager" in variant else contextlib.nullcontext()
    seconds, projection = [], 0.0
    reset_peak_rss()
    with region:
        for step in range(args.steps):
            t0 = time.perf_counter()
            ids = torch.randint(0, vocab, (args.rows, args.tokens), generator=data)
            for rows in ids.split(micro):  # [micro, tokens]
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    logits = model(input_ids=rows, logits_to_keep=60).logits  # [micro, 60, V]
                (logits.float().logsumexp(-1).sum() / ids.numel()).backward()
                del logits
            if step == 0:
                direction = torch.Generator().manual_seed(1)
                projection = sum(
                    float((p.grad.float() * torch.randn(p.shape, generator=direction)).sum())
                    for p in model.parameters()
                    if p.grad is not None
                )
            opt.step()
            opt.zero_grad(set_to_none=True)
            seconds.append(time.perf_counter() - t0)
    return {
        "peak_mb": peak_rss_mb(),
        "rss_mb": rss_mb(),
        "step_s": statistics.median(seconds[1:] or seconds),
        "projection": projection,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--rows", type=int, default=16, help="sequences per optimizer step")
    p.add_argument("--tokens", type=int, default=400)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child: one variant
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args)))
        return
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if unknown := set(variants) - set(VARIANTS):
        raise SystemExit(f"unknown variant(s) {sorted(unknown)}: choose from {', '.join(VARIANTS)}")
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    passed = list(argv if argv is not None else sys.argv[1:])
    for r in range(args.repeats):
        for v in variants:
            cmd = [sys.executable, __file__, *passed, "--one", v]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[v].append(json.loads(out.strip().splitlines()[-1]))
            print(f"[{r + 1}/{args.repeats}] {v}: {runs[v][-1]}", file=sys.stderr)
    med = {v: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for v, rs in runs.items()}
    base = med[variants[0]]
    print(f"{args.model}: {args.rows} x {args.tokens} tokens per step, {args.steps} steps, "
          f"{args.threads} thread(s), medians of {args.repeats} runs per variant")  # fmt: skip
    print(f"{'variant':<14} {'peak MiB':>9} {'x':>6} {'after MiB':>10} {'s/step':>8} {'x':>6}"
          f" {'grad rel.diff':>14}")  # fmt: skip
    for v, m in med.items():
        diff = abs(m["projection"] - base["projection"]) / max(abs(base["projection"]), 1e-30)
        print(f"{v:<14} {m['peak_mb']:>9.0f} {m['peak_mb'] / base['peak_mb']:>6.2f}"
              f" {m['rss_mb']:>10.0f} {m['step_s']:>8.1f} {m['step_s'] / base['step_s']:>6.2f}"
              f" {diff:>14.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
