"""How far the KL reference's precision alone moves ``train/kl_ref``: at identical weights, the
logprobs of the update's policy path (fp32 weights, bf16 autocast) against the reference's (a bf16
copy, as ``run_setup`` builds it when ``--bf16``), on tokens the policy sampled itself.

    python benchmarks/reference_precision.py runs/demo/model            # 4 tasks x 8, EZPoints
    python benchmarks/reference_precision.py MODEL --env seed_gym/Sokoban-v0 --tasks 2

Prints, per path, the mean and mean absolute difference to the policy's logprobs, the k3 value
the update would log as ``kl_ref`` (0 if the paths agreed) and the mean per-token KL gradient
``1 - exp(ref - logprob)`` (times ``--kl-coef``, what the term adds to each token's gradient).
"""

from __future__ import annotations

import argparse
import copy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="a model folder or name (as --model)")
    p.add_argument("--env", default="seed_gym/EZPoints-v0")
    p.add_argument("--modality", default="text")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    import torch

    from seed_gym.registration import task_ids
    from seed_gym.trainer.backends.engines import HFEngine
    from seed_gym.trainer.backends.logprobs import pack, packed_logprobs
    from seed_gym.trainer.backends.models import autocast, load_policy
    from seed_gym.trainer.collect import SamplingParams, collect
    from seed_gym.trainer.losses import kl_k3
    from seed_gym.wrappers.pool import make_group_pool

    torch.set_num_threads(args.threads)
    policy = load_policy(args.model, seed=args.seed)
    model = policy.model
    ref = copy.deepcopy(model).eval().requires_grad_(False).to(torch.bfloat16)
    engine = HFEngine(model, policy.tokenizer, max_batch=64, autocast_bf16=True)
    tasks = list(task_ids(args.env, "train"))[: args.tasks]
    pool = make_group_pool(args.env, tasks, args.group_size, modality=args.modality)
    trajs = collect(
        pool,
        engine,
        tasks,
        list(range(1, len(tasks) + 1)),
        sampling=SamplingParams(args.max_new_tokens, 1.0, 1.0),
        seed=args.seed,
    )
    steps = [s for t in trajs for s in t.steps]
    won = sum(bool(t.won) for t in trajs)
    pad = policy.tokenizer.pad_token_id or 0
    paths = {"policy (fp32 + autocast)": [], "reference (bf16 copy)": [], "fp32, no autocast": []}
    sampler = []
    with torch.no_grad():
        for i in range(0, len(steps), 8):
            chunk = steps[i : i + 8]
            batch = pack([s.prompt_ids for s in chunk], [s.response_ids for s in chunk], pad_id=pad)
            real = batch.response_mask.bool()  # [n, L]
            with autocast(True):
                paths["policy (fp32 + autocast)"].append(packed_logprobs(model, batch)[0][real])
                paths["reference (bf16 copy)"].append(packed_logprobs(ref, batch)[0][real])
            paths["fp32, no autocast"].append(packed_logprobs(model, batch)[0][real])
            sampler += [torch.tensor(s.old_logprobs) for s in chunk]
    lp = {name: torch.cat(parts).float() for name, parts in paths.items()}  # name -> [T]
    lp["sampler (recorded)"] = torch.cat(sampler).float()
    policy_lp = lp["policy (fp32 + autocast)"]
    print(
        f"{args.env} ({args.modality}): {len(trajs)} episodes, {won} won, {len(steps)} steps, "
        f"{policy_lp.numel()} tokens, mean policy logprob {float(policy_lp.mean()):+.4f}"
    )
    print(f"{'path':26s} {'mean diff':>10s} {'mean |diff|':>11s} {'k3':>9s} {'KL grad':>9s}")
    for name, other in lp.items():
        diff = other - policy_lp  # [T]
        k3 = float(kl_k3(policy_lp, other).mean())
        grad = float((1.0 - torch.exp(diff)).mean())
        print(
            f"{name:26s} {float(diff.mean()):+10.2e} {float(diff.abs().mean()):11.2e} "
            f"{k3:9.2e} {grad:+9.2e}"
        )


if __name__ == "__main__":
    main()
