"""Trainer throughput on this machine: generation and logprob tokens/s, and where an iteration goes.

    python benchmarks/bench_trainer.py                    # SmolLM2-135M (converted once from the wheel)
    python benchmarks/bench_trainer.py --model tiny       # the random tiny Llama
    python benchmarks/bench_trainer.py --iteration        # also one smollm2-cpu GRPO iteration on Sokoban

Prints medians over repeats (after a warm-up), fp32 next to bf16 autocast, and the ratio of
response-only logits (what the trainer does) to full-sequence logits. Timings on shared machines
are noisy: compare ratios measured in one run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_generation(policy, batch: int, new_tokens: int, repeats: int) -> dict[str, float]:
    from seed_gym.trainer.backends.engines import HFEngine

    chats = [
        [{"role": "user", "content": f"Your task is to: describe the number {i} in a long story."}]
        for i in range(batch)
    ]
    out = {}
    for bf16 in (False, True):
        engine = HFEngine(policy.model, policy.tokenizer, autocast_bf16=bf16)
        tokens = []

        def run(engine=engine, tokens=tokens):
            gens = engine.generate(chats, max_new_tokens=new_tokens, temperature=1.0, seed=0)
            tokens.append(sum(len(g.ids) for g in gens))

        t = _median_time(run, repeats)
        out[f"gen_tok_per_s_{'bf16' if bf16 else 'fp32'}"] = statistics.median(tokens) / t
    return out


def bench_logprobs(
    policy, batch: int, prompt_len: int, resp_len: int, repeats: int
) -> dict[str, float]:
    import torch

    from seed_gym.trainer.backends.logprobs import pack, packed_logprobs
    from seed_gym.trainer.backends.models import autocast

    g = torch.Generator().manual_seed(0)
    vocab = policy.model.config.vocab_size
    prompts = [torch.randint(10, vocab, (prompt_len,), generator=g).tolist() for _ in range(batch)]
    resps = [torch.randint(10, vocab, (resp_len,), generator=g).tolist() for _ in range(batch)]
    batch_t = pack(prompts, resps, pad_id=policy.pad_id)
    model = policy.model
    out = {}
    for bf16 in (False, True):
        tag = "bf16" if bf16 else "fp32"

        def fwd(bf16=bf16):
            with torch.no_grad(), autocast(bf16):
                packed_logprobs(model, batch_t)

        def fwd_full_logits(bf16=bf16):
            with torch.no_grad(), autocast(bf16):
                model(
                    input_ids=batch_t.input_ids,
                    attention_mask=batch_t.attention_mask,
                    position_ids=batch_t.position_ids,
                    use_cache=False,
                ).logits.float().log_softmax(-1)

        def fwd_bwd(bf16=bf16):
            with autocast(bf16):
                lp, _ = packed_logprobs(model, batch_t)
            (lp * batch_t.response_mask).sum().backward()
            model.zero_grad(set_to_none=True)

        n_resp = batch * resp_len
        t = _median_time(fwd, repeats)
        out[f"logprob_resp_tok_per_s_{tag}"] = n_resp / t
        out[f"full_logits_slowdown_{tag}"] = _median_time(fwd_full_logits, repeats) / t
        out[f"fwd_bwd_s_{tag}"] = _median_time(fwd_bwd, max(1, repeats // 2))
    return out


def bench_iteration(env: str) -> dict[str, float]:
    from seed_gym.trainer.config import smollm2_cpu
    from seed_gym.trainer.train import train

    with tempfile.TemporaryDirectory() as d:
        cfg = smollm2_cpu()
        cfg.env, cfg.out, cfg.iterations, cfg.system.progress, cfg.system.save_hf = (
            env,
            str(Path(d) / "r"),
            1,
            False,
            False,
        )
        cfg.eval.tasks = 1
        m = train(cfg)
    return {
        k: v for k, v in m.items() if k.startswith(("time", "train/response_tokens", "rollout/"))
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=192)
    ap.add_argument("--resp-len", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch default)")
    ap.add_argument("--iteration", action="store_true", help="also time one smollm2-cpu iteration")
    ap.add_argument("--env", default="seed_gym/Sokoban-v0")
    args = ap.parse_args()

    import torch

    from seed_gym.trainer.backends.models import load_policy

    if args.threads:
        torch.set_num_threads(args.threads)
    policy = load_policy(args.model)
    results = {"model": args.model, "threads": torch.get_num_threads()}
    results.update(bench_generation(policy, args.batch, args.new_tokens, args.repeats))
    results.update(bench_logprobs(policy, args.batch, args.prompt_len, args.resp_len, args.repeats))
    print(json.dumps(results, indent=1))
    print(
        f"bf16 / fp32 generation speed-up: "
        f"{results['gen_tok_per_s_bf16'] / results['gen_tok_per_s_fp32']:.2f}x; "
        f"full-sequence logits cost {results['full_logits_slowdown_fp32']:.2f}x response-only (fp32)"
    )
    if args.iteration:
        del policy
        it = bench_iteration(args.env)
        total = sum(v for k, v in it.items() if k.startswith("time/"))
        print(json.dumps(it, indent=1))
        print(
            "share of one iteration: "
            + ", ".join(f"{k[5:]} {v / total:.0%}" for k, v in it.items() if k.startswith("time/"))
        )


if __name__ == "__main__":
    main()
