"""A backtracking line search on an iteration's whole update (``--max-update-kl``).

After the update's optimizer steps, the policy is scored on the iteration's own samples and
``KL_k3(pi_old || pi_new)`` (the token mean of ``approx_kl``'s estimator, over every response
token) is compared with a limit. Above it, the update's weight change is halved, up to
``--update-backtracks`` times, and undone when even the smallest fraction is above the limit: the
trust region of TRPO's line search, applied to the AdamW update that PPO-clip and the k3 KL only
keep near pi_old by their loss.

Why: the runs of issue 26 that collapsed did so in one update (``docs/benchmarks.md``), and
``--target-kl`` reads the KL before each step, so it never sees the step that breaks the policy.
This measures after it. seed-gym's option, off by default: the reference has none.

The AdamW moments keep the gradients of the steps taken (only the weights go back), as they would
after an early stop; the line search costs one no-grad forward of the iteration's samples per
measurement and a copy of the trainable weights while it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from seed_gym.trainer.backends.image_inputs import image_inputs
from seed_gym.trainer.backends.logprobs import pack, packed_logprobs, padded, prompt_order
from seed_gym.trainer.backends.models import autocast
from seed_gym.trainer.losses import kl_k3


@torch.no_grad()
def update_kl(
    model: Any, samples: Sequence[Any], *, cfg: Any, pad_id: int, processor: Any, device: Any,
    dist: Any,
) -> float:  # fmt: skip
    """Token-mean ``KL_k3(pi_old || pi)`` over all response tokens of ``samples`` (``Sample``s:
    ``old_logprobs`` are pi_old's), the policy ``model`` as it is now; summed over the ranks."""
    order = prompt_order(list(range(len(samples))), [s.step.prompt_ids for s in samples])
    share = dist.shard(order)
    total = tokens = 0.0
    was_training = model.training
    model.eval()
    try:
        for chunk in dist.micro_batches(share, len(order), cfg.optim.micro_batch):
            dummy = chunk is None  # FSDP: every rank runs the same forwards
            rows = [samples[i] for i in (order[:1] if dummy else chunk)]
            steps = [s.step for s in rows]
            batch = pack(
                [s.prompt_ids for s in steps],
                [s.response_ids for s in steps],
                pad_id=pad_id,
                share_prefix=processor is None and not cfg.system.fsdp,
            ).to(device)
            vision = image_inputs(processor, [s.images for s in steps], device)  # {} for text
            with autocast(cfg.bf16):
                logprobs, _ = packed_logprobs(
                    model, batch, temperature=cfg.rollout.temperature, **vision
                )  # [n, L]
            mask = batch.response_mask  # [n, L]
            old, _ = padded([s.old_logprobs for s in rows], mask)  # [n, L]
            if not dummy:
                total += float((kl_k3(old, logprobs.float()) * mask).sum())
                tokens += float(mask.sum())
    finally:
        model.train(was_training)
        if cfg.system.fsdp:
            reshard(model)
    tokens = dist.sum(tokens)
    return dist.sum(total) / tokens if tokens else 0.0


def reshard(model: Any) -> None:
    """Free FSDP2's gathered weights after a no-grad forward: its root module keeps them after a
    forward (for the backward it expects), and a forward that reuses them would not see the
    halved shards (``backtrack`` changes the shards in place)."""
    from torch.distributed.fsdp import FSDPModule

    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.reshard()


def backtrack(
    params: Sequence[torch.Tensor],
    before: Sequence[torch.Tensor],
    measure: Callable[[], float],
    *,
    limit: float,
    tries: int,
) -> dict[str, float]:
    """Halve ``params``' change from ``before`` until ``measure()`` is at most ``limit`` (at most
    ``tries`` halvings); undo it when the last is still above. Returns ``train/update_kl`` (the
    whole update's), ``train/update_scale`` (the fraction of the change kept: 1, 1/2, ..., 0) and
    ``train/update_kl_kept`` (the KL of what was kept; 0 when undone)."""
    kl = full = measure()
    scale = 1.0
    with torch.no_grad():
        for _ in range(tries):
            if kl <= limit:
                break
            for p, b in zip(params, before, strict=True):
                p.add_(b).mul_(0.5)  # b + (p - b) / 2
            scale /= 2
            kl = measure()
        if kl > limit:
            for p, b in zip(params, before, strict=True):
                p.copy_(b)
            scale, kl = 0.0, 0.0
    return {"train/update_kl": full, "train/update_scale": scale, "train/update_kl_kept": kl}
