"""Sampling speed of the HF engine with its in-place KV cache against Hugging Face's own
(``DynamicCache``, which concatenates every step), side by side in one process.

    python benchmarks/bench_decode.py                       # SmolLM2-135M, batch 8, 1 thread
    python benchmarks/bench_decode.py --threads 2 --repeats 5 --new-tokens 128
    python benchmarks/bench_decode.py --model ~/.cache/seed-gym/models/warmup-ezpoints-v0-…

The prompts have the trainer's shape on EZPoints: a shared prefix (an env's instructions, run
once) and each row's own tokens, random ids from a fixed seed; every row samples ``--new-tokens``
tokens at temperature 1 (no stop string, so every repeat decodes the same count). The two caches
alternate within each repeat, and the script checks that they sampled the same ids with the same
logprobs. Printed: median seconds of each, its prefill (the same call for one token), tokens/s
overall and while decoding, and the decoding ratio. bf16 autocast where the
CPU has native bf16 (as the ``smollm2-cpu`` preset samples), else fp32; ``--bf16 on|off`` forces it.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2", help="smollm2, tiny or a local model folder")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--prefix", type=int, default=260, help="shared prompt tokens")
    p.add_argument("--own", type=int, default=95, help="each row's own prompt tokens (+- 10)")
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", choices=["auto", "on", "off"], default="auto")
    a = p.parse_args()

    import torch

    from seed_gym.trainer.backends.engines import HFEngine
    from seed_gym.trainer.backends.models import bf16_is_fast, load_policy

    torch.set_num_threads(a.threads)
    bf16 = bf16_is_fast("cpu") if a.bf16 == "auto" else a.bf16 == "on"
    policy = load_policy(a.model, seed=0)
    gen = torch.Generator().manual_seed(0)
    vocab = min(policy.model.config.vocab_size, 40000)
    prefix = torch.randint(100, vocab, (a.prefix,), generator=gen).tolist()
    prompts = [
        prefix + torch.randint(100, vocab, (a.own - 10 + i % 21,), generator=gen).tolist()
        for i in range(a.batch)
    ]
    variants = {
        name: HFEngine(policy.model, policy.tokenizer, autocast_bf16=bf16, kv_in_place=in_place)
        for name, in_place in (("concatenating (DynamicCache)", False), ("in place", True))
    }

    def sample(engine: HFEngine, seed: int, new_tokens: int):
        return engine.generate(prompts, max_new_tokens=new_tokens, temperature=1.0, seed=seed)

    for engine in variants.values():
        sample(engine, 0, 4)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in variants}
    prefills: dict[str, list[float]] = {name: [] for name in variants}
    samples: dict[str, list] = {name: [] for name in variants}
    for rep in range(a.repeats):
        for name, engine in variants.items():
            t0 = time.perf_counter()
            gens = sample(engine, rep + 1, a.new_tokens)
            t1 = time.perf_counter()
            sample(engine, rep + 1, 1)  # the prefill and one token: the rest is decoding
            prefills[name].append(time.perf_counter() - t1)
            times[name].append(t1 - t0)
            samples[name].append([(g.ids, g.logprobs) for g in gens])
    tokens = sum(len(ids) for ids, _ in samples["in place"][0])
    print(
        f"{a.model}, batch {a.batch}, prompts {a.prefix} shared + ~{a.own} own tokens, "
        f"{a.new_tokens} new, {a.threads} thread(s), {'bf16' if bf16 else 'fp32'}, "
        f"{a.repeats} repeats (medians)"
    )
    decode_tps = {}
    for name in variants:
        t, pre = statistics.median(times[name]), statistics.median(prefills[name])
        decode_tps[name] = (tokens - a.batch) / max(t - pre, 1e-9)
        print(
            f"  {name:30s} {t:7.2f} s ({min(times[name]):.2f}-{max(times[name]):.2f}), "
            f"prefill {pre:5.2f} s, {tokens / t:6.1f} tok/s overall, "
            f"{decode_tps[name]:6.1f} tok/s decoding"
        )
    ratio = decode_tps["in place"] / decode_tps["concatenating (DynamicCache)"]
    print(f"  in place / concatenating, decoding tokens/s: {ratio:.2f}x")
    same = samples["in place"] == samples["concatenating (DynamicCache)"]
    print(f"  same ids and logprobs: {same}")
    if not same:
        raise SystemExit("the two caches sampled different tokens")


if __name__ == "__main__":
    main()
