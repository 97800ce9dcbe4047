"""How the update cuts a mini-batch into micro-batches, measured side by side: the order (by
length, seed-gym <= 0.3.0, or by prompt tokens) and the micro-batch size.

    python benchmarks/bench_update_batching.py                        # smollm2-cpu preset, EZPoints
    python benchmarks/bench_update_batching.py --micro-batches 8,16,32
    python benchmarks/bench_update_batching.py --preset tiny          # seconds, a smoke check

It collects one real iteration of rollouts (B tasks x G episodes) with the preset's starting
policy (the format-warmed model when the preset has a warm-up: built and cached if missing), then
times the forward and backward of every micro-batch of one mini-batch under each variant, in
alternation, ``--repeats`` times; no optimizer step, so all see the same weights. Printed per
variant: the tokens its forwards run (a micro-batch's shared prompt prefix counts once), the
median seconds, the speed-up over the first variant (length order at the preset's micro-batch)
and the relative difference of its gradient from the first one's. The gradient is the same sum in
every variant (the loss's denominators are the mini-batch's), so the differences are rounding
(bf16 autocast where the preset uses it).
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="smollm2-cpu")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--micro-batches", default="", help="sizes to try in prompt order, e.g. 16,32")
    a = p.parse_args()

    import numpy as np
    import torch
    from preset_rollouts import preset_rollouts

    from seed_gym.trainer.advantages import grpo_advantages
    from seed_gym.trainer.algorithms.grpo import GRPO
    from seed_gym.trainer.backends.logprobs import pack, prompt_order
    from seed_gym.trainer.update import Sample, micro_batch_loss

    cfg, policy, _, trajs = preset_rollouts(a.preset, a.threads)
    adv = grpo_advantages(trajs, mode=cfg.optim.advantage, std_normalize=cfg.optim.std_normalize)
    samples = [
        Sample(step, x, step.old_logprobs)
        for t, xs in zip(trajs, adv, strict=True)
        for step, x in zip(t.steps, xs, strict=True)
        if step.response_ids
    ]
    mb = np.random.default_rng(0).permutation(len(samples))[: cfg.optim.mini_batch_size].tolist()
    by_length = sorted(
        mb, key=lambda i: len(samples[i].step.prompt_ids + samples[i].step.response_ids)
    )
    by_prompt = prompt_order(mb, [s.step.prompt_ids for s in samples])
    # variant name -> (order, micro-batch size); the first is the baseline
    variants = {
        f"length/{cfg.optim.micro_batch}": (by_length, cfg.optim.micro_batch),
        f"prompt/{cfg.optim.micro_batch}": (by_prompt, cfg.optim.micro_batch),
    }
    for size in filter(None, a.micro_batches.split(",")):
        variants[f"prompt/{int(size)}"] = (by_prompt, int(size))
    base = next(iter(variants))
    num_tokens = sum(len(samples[i].step.response_ids) for i in mb)
    params = [q for q in policy.model.parameters() if q.requires_grad]

    def run(order: list[int], size: int) -> torch.Tensor:
        policy.model.zero_grad(set_to_none=True)
        for s in range(0, len(order), size):
            chunk = [samples[i] for i in order[s : s + size]]
            loss, _, _, _ = micro_batch_loss(policy.model, chunk, reference=None, terms=GRPO(cfg), teacher=False,
                                          num_tokens=num_tokens, num_teacher_tokens=0, cfg=cfg,
                                          pad_id=policy.pad_id, processor=None, device="cpu")  # fmt: skip
            loss.backward()
        return torch.cat([q.grad.flatten() for q in params])

    def tokens(order: list[int], size: int) -> int:
        """Positions the forwards run: each micro-batch's padded rows plus its prefix once."""
        total = 0
        for s in range(0, len(order), size):
            steps = [samples[i].step for i in order[s : s + size]]
            b = pack([x.prompt_ids for x in steps], [x.response_ids for x in steps],
                     pad_id=policy.pad_id, share_prefix=True)  # fmt: skip
            total += b.input_ids.numel() + (0 if b.prefix_ids is None else len(b.prefix_ids))
        return total

    policy.model.train()
    times: dict[str, list[float]] = {k: [] for k in variants}
    grads = {}
    for _ in range(a.repeats):
        for name, (order, size) in variants.items():
            t0 = time.perf_counter()
            grads[name] = run(order, size)
            times[name].append(time.perf_counter() - t0)
    print(f"{len(samples)} step-samples from {len(trajs)} episodes; one mini-batch of {len(mb)}, "
          f"{a.threads} thread(s), {a.repeats} repeats; variant = order/micro-batch size")  # fmt: skip
    ref_time, ref_grad = statistics.median(times[base]), grads[base]
    for name, (order, size) in variants.items():
        med = statistics.median(times[name])
        diff = float((grads[name] - ref_grad).norm() / ref_grad.norm())
        print(f"  {name:10s}: {tokens(order, size):6d} tokens run, median {med:6.2f} s "
              f"{[round(t, 2) for t in times[name]]}, speed-up {ref_time / med:.2f}x, "
              f"gradient difference {diff:.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
