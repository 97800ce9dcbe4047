"""Peak memory and seconds of sampling with the HF engine, side by side: what ``--gen-batch`` (the
prompts per forward) costs and saves on a CPU.

    python benchmarks/generate_memory.py                          # 32 prompts, batches 32/16/8
    python benchmarks/generate_memory.py --batches 32,8 --repeats 2 --attn sdpa,eager
    python benchmarks/generate_memory.py --model tiny --tokens 64   # seconds, a smoke check

Every variant (a gen batch and an attention implementation) samples the same ``--prompts``
random prompts of about ``--tokens`` ids (lengths staggered by up to 60, as an env's are) for
``--new-tokens`` tokens under bf16 autocast, in a fresh process (so one's peak cannot hide
another's); the variants alternate ``--repeats`` times and the table gives medians. Before the
measured call one short generate faults the weights in, so the peak above the resident set at
that point is what sampling itself holds: the KV cache, the prefill's activations and the bf16
weight copy autocast makes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def one(batch: int, attn: str, args: argparse.Namespace) -> dict[str, float]:
    """Sample once in this process with ``batch`` prompts per forward; its measurements."""
    import torch

    from seed_gym.trainer.backends.engines import HFEngine
    from seed_gym.trainer.backends.models import load_policy
    from seed_gym.trainer.phases import peak_rss_mb, release_free_memory, reset_peak_rss, rss_mb

    torch.set_num_threads(args.threads)
    policy = load_policy(args.model)
    policy.model.set_attn_implementation(attn)
    engine = HFEngine(policy.model, policy.tokenizer, max_batch=batch, autocast_bf16=True)
    data = torch.Generator().manual_seed(0)
    vocab = policy.model.config.vocab_size
    prompts = [
        torch.randint(
            100, vocab - 1, (max(8, args.tokens - 10 * (i % 7)),), generator=data
        ).tolist()
        for i in range(args.prompts)
    ]
    engine.generate([prompts[0][:8]], max_new_tokens=2, seed=0)  # weights in, caches built
    release_free_memory()
    before = rss_mb()
    reset_peak_rss()
    t0 = time.perf_counter()
    gens = engine.generate(prompts, max_new_tokens=args.new_tokens, temperature=1.0, seed=0)
    seconds = time.perf_counter() - t0
    tokens = sum(len(g.ids) for g in gens)
    return {"held_mb": peak_rss_mb() - before, "seconds": seconds, "tok_s": tokens / seconds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--tokens", type=int, default=600, help="prompt length (the longest)")
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--batches", default="32,16,8", help="gen batches; the first is the baseline")
    p.add_argument("--attn", default="sdpa", help="attention implementations (sdpa, eager)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # internal: batch attn
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(int(args.one[0]), args.one[1], args)))
        return
    variants = [(int(b), a) for a in args.attn.split(",") for b in args.batches.split(",")]
    results: dict[tuple[int, str], list[dict[str, float]]] = {v: [] for v in variants}
    passed = sys.argv[1:]
    for _ in range(args.repeats):
        for batch, attn in variants:
            cmd = [sys.executable, __file__, *passed, "--one", str(batch), attn]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            results[(batch, attn)].append(json.loads(done.stdout.strip().splitlines()[-1]))
    med = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in results.items()}
    base = med[variants[0]]
    print(
        f"{args.prompts} prompts of <= {args.tokens} tokens, {args.new_tokens} new tokens, "
        f"{args.model}, {args.threads} thread(s), median of {args.repeats}"
    )
    print(
        f"{'gen batch':>9} {'attention':>9} {'held MiB':>9} {'ratio':>6} {'seconds':>8} "
        f"{'ratio':>6} {'tok/s':>7}"
    )
    for (batch, attn), m in med.items():
        print(
            f"{batch:>9} {attn:>9} {m['held_mb']:>9.0f} {_ratio(m['held_mb'], base['held_mb'])} "
            f"{m['seconds']:>8.1f} {_ratio(m['seconds'], base['seconds'])} {m['tok_s']:>7.1f}"
        )


def _ratio(value: float, base: float) -> str:
    """``value / base`` in a 6-wide column; ``-`` where the baseline held nothing measurable."""
    return f"{value / base:>6.2f}" if base > 0 else f"{'-':>6}"


if __name__ == "__main__":
    main()
