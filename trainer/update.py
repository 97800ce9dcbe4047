"""The update step: PPO-clip GRPO (+ k3 KL, entropy, gated OPD or teacher advantages) over an
iteration's step-samples, in mini-batches (one AdamW step each) of micro-batches (gradient
accumulation), with the token-mean denominators of the whole mini-batch.

``policy_loss`` is the pure part (tensors in, a scalar loss and its statistics out);
``run_update`` feeds it: epochs -> mini-batches -> micro-batches -> optimizer steps, and returns
the iteration's ``train/*`` and ``opd/*`` metrics.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from seed_gym.trainer.backends.image_inputs import image_inputs
from seed_gym.trainer.backends.logprobs import pack, packed_logprobs, padded, prompt_order
from seed_gym.trainer.backends.models import autocast
from seed_gym.trainer.line_search import backtrack, update_kl
from seed_gym.trainer.losses import (
    broadcast_to_tokens,
    entropy_bonus,
    kl_k3,
    masked_mean,
    ppo_clip_loss,
    token_mean,
)
from seed_gym.trainer.trajectory import StepSample


# --- the loss -----------------------------------------------------------------------------------
class LossTerms(Protocol):
    """What an algorithm adds to the loss (``algorithms.base.Algorithm`` implements it)."""

    def token_advantages(
        self,
        advantages: torch.Tensor,
        *,
        teacher_logprobs: torch.Tensor | None,
        old_logprobs: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor: ...

    def extra_loss(
        self,
        logprobs: torch.Tensor,
        *,
        teacher_logprobs: torch.Tensor | None,
        response_mask: torch.Tensor,
        teacher_mask: torch.Tensor | None,
        num_teacher_tokens: float,
    ) -> tuple[torch.Tensor | None, dict[str, float]]: ...


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    entropy: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    teacher_logprobs: torch.Tensor | None,
    teacher_mask: torch.Tensor | None,
    num_tokens: float,
    num_teacher_tokens: float,
    terms: LossTerms,
    clip_low: float,
    clip_high: float,
    dual_clip: float | None,
    ent_coef: float,
    kl_coef: float,
) -> tuple[torch.Tensor, dict[str, float], dict[str, torch.Tensor]]:
    """``L = PPO-clip(A') - ent_coef * H + kl_coef * KL_k3(pi || pi_ref) + extra``, where the
    algorithm (``terms``) gives the token advantages A' (its ``token_advantages`` of the GRPO
    advantages: OPID adds ``w * (teacher_lp - old_lp)``) and the extra term (``extra_loss``:
    SEED's ``lambda * gated OPD``). Token means divide by the mini-batch's ``num_tokens``
    (teacher terms: ``num_teacher_tokens``), so micro-batches of one optimizer step add up.

    logprobs, old_logprobs, advantages, response_mask, entropy, ref_logprobs, teacher_logprobs,
    teacher_mask: [n, L]. Returns the loss, its statistics (clip_frac, dual_clip_frac,
    approx_kl, entropy, kl_ref and the algorithm's) and two of its parts as scalars with their
    graphs: ``"pg"``, the PPO-clip loss of the GRPO advantages alone, and (when the algorithm
    changes the loss) ``"teacher"``, what it adds.
    """
    mask = response_mask  # [n, L]
    clip = {"clip_low": clip_low, "clip_high": clip_high, "dual_clip": dual_clip,
            "num_tokens": num_tokens}  # fmt: skip
    pg, stats = ppo_clip_loss(logprobs, old_logprobs, advantages, mask, **clip)
    loss, parts = pg, {"pg": pg}
    teacher_tokens = None if teacher_mask is None else teacher_mask * mask  # [n, L]
    tokens = terms.token_advantages(advantages, teacher_logprobs=teacher_logprobs,
                                    old_logprobs=old_logprobs, mask=teacher_tokens)  # fmt: skip
    if tokens is not advantages:  # [n, L]
        loss, stats = ppo_clip_loss(logprobs, old_logprobs, tokens, mask, **clip)
        parts["teacher"] = loss - pg
    stats["entropy"] = float(masked_mean(entropy.detach(), mask))
    if ent_coef > 0:
        loss = loss - ent_coef * entropy_bonus(entropy, mask, num_tokens=num_tokens)
    if ref_logprobs is not None:
        kl = kl_k3(logprobs, ref_logprobs)  # [n, L]
        loss = loss + kl_coef * token_mean(kl, mask, num_tokens=num_tokens)
        stats["kl_ref"] = float(masked_mean(kl.detach(), mask))
    extra, extra_stats = terms.extra_loss(
        logprobs,
        teacher_logprobs=teacher_logprobs,
        response_mask=mask,
        teacher_mask=teacher_mask,
        num_teacher_tokens=num_teacher_tokens,
    )
    if extra is not None:
        parts["teacher"] = extra
        loss = loss + extra
    stats.update(extra_stats)
    return loss, stats, parts


def gradient_probe(
    pg: torch.Tensor, teacher: torch.Tensor, params: Sequence[torch.Tensor]
) -> dict[str, float]:
    """How the teacher's gradient compares with the policy gradient's on one micro-batch:
    ``opd/grad_norm_teacher``, ``opd/grad_norm_pg``, their ratio ``opd/grad_ratio`` (left out
    when the policy gradient is 0: every advantage of the micro-batch is 0) and cosine
    ``opd/grad_cosine``. Leaves ``.grad`` untouched; both graphs are kept for the backward."""
    g_teacher = torch.autograd.grad(teacher, params, retain_graph=True, allow_unused=True)
    g_pg = torch.autograd.grad(pg, params, retain_graph=True, allow_unused=True)
    dot = sq_t = sq_p = 0.0
    for a, b in zip(g_teacher, g_pg, strict=True):
        if a is not None:
            sq_t += float(a.double().pow(2).sum())
        if b is not None:
            sq_p += float(b.double().pow(2).sum())
        if a is not None and b is not None:
            dot += float((a.double() * b.double()).sum())
    del g_teacher, g_pg
    out = {"opd/grad_norm_teacher": sq_t**0.5, "opd/grad_norm_pg": sq_p**0.5}
    if sq_p > 0:
        out["opd/grad_ratio"] = (sq_t / sq_p) ** 0.5
    if sq_p > 0 and sq_t > 0:
        out["opd/grad_cosine"] = dot / (sq_t * sq_p) ** 0.5
    return out


def adamw_step_stats(optimizer: Any, params: Sequence[torch.Tensor]) -> dict[str, float]:
    """What the AdamW step just taken did, from the optimizer's state after it: ``step_norm``
    (the L2 norm of the weights' change, decoupled weight decay included) and ``step_cosine``
    (its cosine with the descent direction -grad of the step's own mini-batch). Momentum from
    earlier steps and Adam's per-weight scaling turn the gradient into the step; a step with a
    near-zero gradient (every group saturated) that still has a normal norm and a low cosine is
    the optimizer coasting on earlier updates. ``{}`` for optimizers other than torch's AdamW
    without amsgrad, and before the first step.

    torch's AdamW: theta_t = theta_{t-1} (1 - lr wd) - lr m_t / bc1 / (sqrt(v_t / bc2) + eps),
    bc1 = 1 - beta1^t, bc2 = 1 - beta2^t; ``theta_{t-1}`` is recovered from ``theta_t``."""
    sq_step = dot = sq_grad = 0.0
    for group in optimizer.param_groups:
        if group.get("amsgrad") or group.get("maximize"):
            return {}
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            state = optimizer.state.get(p)
            if not state or "exp_avg" not in state:
                continue
            t = float(state["step"])
            # in place on two temporaries of p's size (fp32 sums: a metric, not the step)
            denom = state["exp_avg_sq"].div(1 - beta2**t).sqrt_().add_(eps)  # [shape of p]
            change = state["exp_avg"].div(1 - beta1**t).div_(denom).mul_(lr)  # Adam's part
            del denom
            change.add_(p.detach()).div_(1 - lr * wd)  # theta_{t-1}
            change.neg_().add_(p.detach())  # theta_t - theta_{t-1}
            flat = change.flatten()
            sq_step += float(torch.dot(flat, flat))
            if p.grad is not None:
                g = p.grad.flatten().to(flat.dtype)
                dot -= float(torch.dot(flat, g))
                sq_grad += float(torch.dot(g, g))
    if sq_step == 0.0 and sq_grad == 0.0:
        return {}
    out = {"step_norm": sq_step**0.5}
    if sq_step > 0 and sq_grad > 0:
        out["step_cosine"] = dot / (sq_step * sq_grad) ** 0.5
    return out


# --- feeding it -----------------------------------------------------------------------------------
@dataclass
class Sample:
    """One step-sample of the update: the step, its advantage, the logprobs it was sampled with
    and (with a teacher) the teacher's logprobs of its response tokens (None: no skill)."""

    step: StepSample
    advantage: float
    old_logprobs: Sequence[float]
    teacher_logprobs: Sequence[float] | None = None


def n_mini_batches(n_samples: int, cfg: Any) -> int:
    """Optimizer steps per epoch: ``mini_batches`` if set, else ceil(N / mini_batch_size)."""
    if cfg.optim.mini_batches is not None:
        return cfg.optim.mini_batches
    return max(1, -(-n_samples // cfg.optim.mini_batch_size))


def micro_batch_loss(
    model: Any,
    batch_samples: Sequence[Sample],
    *,
    reference: Callable[..., torch.Tensor] | None,
    terms: LossTerms,
    teacher: bool,
    num_tokens: float,
    num_teacher_tokens: float,
    cfg: Any,
    pad_id: int,
    processor: Any,
    device: Any,
) -> tuple[torch.Tensor, dict[str, float], dict[str, torch.Tensor], float]:
    """Forward one micro-batch and return (loss, stats, the loss's parts (``policy_loss``), its
    share of the mini-batch's tokens)."""
    steps = [s.step for s in batch_samples]
    batch = pack(
        [s.prompt_ids for s in steps],
        [s.response_ids for s in steps],
        pad_id=pad_id,
        # rows run whole with pictures, when checkpointing recomputes the layers (the prefix's
        # KV cache cannot be recomputed), and under FSDP (a second forward before the backward
        # reshards the layers the first one's graph still needs)
        share_prefix=processor is None
        and not cfg.system.gradient_checkpointing
        and not cfg.system.fsdp,
    ).to(device)
    vision = image_inputs(processor, [s.images for s in steps], device)  # {} for text
    mask = batch.response_mask  # [n, L]
    old, _ = padded([s.old_logprobs for s in batch_samples], mask)  # [n, L]
    adv = broadcast_to_tokens(
        torch.tensor([s.advantage for s in batch_samples], device=mask.device), mask
    )  # [n, L]
    t_lp = t_mask = None
    if teacher:
        t_lp, t_mask = padded([s.teacher_logprobs for s in batch_samples], mask)  # [n, L]
    with autocast(cfg.bf16):
        logprobs, entropy = packed_logprobs(
            model, batch, temperature=cfg.rollout.temperature, with_entropy=True, **vision
        )  # [n, L], [n, L]
    ref = reference(batch, vision) if reference is not None else None  # [n, L]
    loss, stats, parts = policy_loss(
        logprobs,
        old,
        adv,
        mask,
        entropy=entropy,
        ref_logprobs=ref,
        teacher_logprobs=t_lp,
        teacher_mask=t_mask,
        num_tokens=num_tokens,
        num_teacher_tokens=num_teacher_tokens,
        terms=terms,
        clip_low=cfg.optim.clip_low,
        clip_high=cfg.optim.clip_high,
        dual_clip=cfg.optim.dual_clip,
        ent_coef=cfg.optim.ent_coef,
        kl_coef=cfg.optim.kl_coef,
    )
    return loss, stats, parts, float(mask.sum()) / num_tokens


def run_update(
    model: Any,
    optimizer: Any,
    samples: list[Sample],
    *,
    reference: Callable[..., torch.Tensor] | None,
    terms: LossTerms,
    teacher: bool,
    cfg: Any,
    rng: np.random.Generator,
    pad_id: int,
    processor: Any,
    device: Any,
    dist: Any,
) -> dict[str, float]:
    """``cfg.optim.ppo_epochs`` passes over ``samples``, shuffled by ``rng`` and split into
    ``n_mini_batches`` mini-batches of one AdamW step each; returns the update's metrics.
    ``terms``: the algorithm's loss terms (``LossTerms``); ``teacher``: the samples carry
    teacher logprobs (the algorithm has a teacher this iteration)."""
    if cfg.optim.skip_saturated and saturated(samples, cfg, teacher=teacher):
        return {"train/optimizer_steps": 0.0, "train/skipped_saturated": 1.0}
    params = [p for p in model.parameters() if p.requires_grad]
    stats: dict[str, list[float]] = {}
    opd = OPDStats()
    steps = 0
    # the teacher's gradient against the policy gradient's, on the first micro-batch that has a
    # teacher (sharded parameters are left out: their gradients are partial per rank)
    probe = teacher and cfg.opd.grad_probe and not cfg.system.fsdp
    probed: dict[str, float] = {}
    stopped = False  # --target-kl ended the iteration's update early
    prompts = [s.step.prompt_ids for s in samples]
    # --max-update-kl: the weights before the update, to halve or undo it (line_search)
    limit = cfg.optim.max_update_kl
    before = [p.detach().clone() for p in params] if limit is not None else None
    model.train()
    for _epoch in range(cfg.optim.ppo_epochs):
        order = rng.permutation(len(samples))
        for mb in np.array_split(order, n_mini_batches(len(samples), cfg)):
            if len(mb) == 0:
                continue
            # a micro-batch holds steps of the same task (and step): a long shared prefix that
            # runs once; the step's gradient is the same sum in any order
            mb = prompt_order(mb.tolist(), prompts)
            num_tokens = sum(len(samples[i].step.response_ids) for i in mb)
            # OPD token-mean denominator: response tokens with a teacher
            num_teacher = sum(len(samples[i].teacher_logprobs or []) for i in mb)
            share = dist.shard(mb)  # this rank's share; the denominators stay global
            optimizer.zero_grad(set_to_none=True)
            mb_kl = 0.0  # this rank's share of the mini-batch's token-mean approx_kl
            for chunk in dist.micro_batches(share, len(mb), cfg.optim.micro_batch):
                dummy = chunk is None  # FSDP: a rank out of samples still joins the collectives
                loss, s, parts, w = micro_batch_loss(
                    model,
                    [samples[i] for i in (mb[:1] if dummy else chunk)],
                    reference=reference,
                    terms=terms,
                    teacher=teacher,
                    num_tokens=num_tokens,
                    num_teacher_tokens=num_teacher,
                    cfg=cfg,
                    pad_id=pad_id,
                    processor=processor,
                    device=device,
                )
                if probe and not probed and not dummy and "teacher" in parts:
                    probed = gradient_probe(parts["pg"], parts["teacher"], params)
                dist.backward(loss, dummy=dummy)
                if dummy:
                    continue
                _accumulate(stats, s, float(loss.detach()), w)
                mb_kl += s["approx_kl"] * w
                if "opd/teacher_tokens" in s:
                    opd.add(s, s["opd/loss"])
            # the policy this mini-batch ran (after the earlier steps) against pi_old: past the
            # target, this step and the iteration's remaining ones are skipped
            if cfg.optim.target_kl is not None and dist.sum(mb_kl) > cfg.optim.target_kl:
                stopped = True
                break
            dist.all_reduce_gradients(params)  # sum of the ranks' shares
            stats.setdefault("grad_norm", []).append(_clip(params, cfg.optim.max_grad_norm))
            optimizer.step()
            steps += 1
            if not cfg.system.fsdp:  # a rank's shards would give partial norms
                for k, v in adamw_step_stats(optimizer, params).items():
                    stats.setdefault(k, []).append(v)
        if stopped:
            break
    # the last step's gradients are spent: freed here, not at the next update's first step, they
    # stop holding a model's worth of fp32 (0.5 GiB for SmolLM2) through rollouts, analysis, evals
    optimizer.zero_grad(set_to_none=True)
    searched: dict[str, float] = {}
    if before is not None and steps:
        measure = functools.partial(update_kl, model, samples, cfg=cfg, pad_id=pad_id,
                                    processor=processor, device=device, dist=dist)  # fmt: skip
        searched = backtrack(params, before, measure, limit=limit,
                             tries=cfg.optim.update_backtracks)  # fmt: skip
    del before
    # every rank's micro-batches; the step's statistics are the same on every rank
    stats = dist.gather_stats(stats, replicated=("grad_norm", "step_norm", "step_cosine"))
    metrics = _metrics(stats, max(1, steps), opd if teacher else None)
    if cfg.optim.target_kl is not None:
        metrics["train/early_stop"] = float(stopped)
    if cfg.optim.skip_saturated:
        metrics["train/skipped_saturated"] = 0.0
    return {**metrics, **probed, **searched}


def saturated(samples: Sequence[Sample], cfg: Any, *, teacher: bool) -> bool:
    """No policy-gradient signal in the iteration (``--skip-saturated``): every sample's advantage
    is exactly 0 (group normalisation gives 0 when a group's scores are all equal) and no teacher
    advantage (OPID's ``--teacher-advantage``) adds a token advantage of its own."""
    if teacher and cfg.opd.teacher_advantage:
        return False
    return bool(samples) and all(s.advantage == 0.0 for s in samples)


def _accumulate(stats: dict[str, list[float]], s: dict[str, float], loss: float, w: float) -> None:
    """Micro-batch statistics: token-weighted (``w``: its share of the step's tokens) so their
    sums over a step are step means; ``kl_ref`` as a plain mean."""
    stats.setdefault("loss", []).append(loss)
    for k in ("entropy", "clip_frac", "dual_clip_frac", "approx_kl"):
        stats.setdefault(k, []).append(s[k] * w)
    if "kl_ref" in s:
        stats.setdefault("kl_ref", []).append(s["kl_ref"])


def _clip(params: list[Any], max_norm: float) -> float:
    if max_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    return float(
        torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params if p.grad is not None]))
    )


def _metrics(stats: dict[str, list[float]], n_steps: int, opd: OPDStats | None) -> dict[str, float]:
    # per-step sums over micro-batches, averaged over optimizer steps
    out = {
        f"train/{k}": float(np.sum(stats[k])) / n_steps
        for k in ("loss", "entropy", "clip_frac", "dual_clip_frac", "approx_kl")
        if k in stats
    }
    if "kl_ref" in stats:
        out["train/kl_ref"] = float(np.mean(stats["kl_ref"]))
    out["train/grad_norm"] = float(np.mean(stats["grad_norm"])) if "grad_norm" in stats else 0.0
    for k in ("step_norm", "step_cosine"):  # means over the optimizer steps (adamw_step_stats)
        if k in stats:
            out[f"train/{k}"] = float(np.mean(stats[k]))
    out["train/optimizer_steps"] = float(n_steps)
    if opd is not None:
        out.update(opd.metrics(n_steps))
    return out


class OPDStats:
    """``opd/*`` over an iteration: gate and gap means weighted by teacher tokens, the OPD loss
    summed over micro-batches and averaged over optimizer steps (as ``train/loss``)."""

    MEANS = ("opd/gate_mean", "opd/active_ratio", "opd/teacher_gap_mean")

    def __init__(self) -> None:
        self.sums = dict.fromkeys(self.MEANS, 0.0)
        self.tokens = 0.0
        self.loss = 0.0

    def add(self, stats: dict[str, float], loss: float) -> None:
        n = stats["opd/teacher_tokens"]
        for k in self.MEANS:
            self.sums[k] += stats[k] * n
        self.tokens += n
        self.loss += loss

    def metrics(self, n_steps: int) -> dict[str, float]:
        out = {k: v / self.tokens if self.tokens else 0.0 for k, v in self.sums.items()}
        out["opd/loss"] = self.loss / n_steps
        out["opd/teacher_tokens"] = self.tokens / n_steps
        return out


def reference_logprobs(model: Any, ref_model: Any | None, cfg: Any) -> Callable[..., torch.Tensor]:
    """``fn(batch, vision) -> ref_logprobs [n, L]`` under the frozen reference: a copy of the
    starting policy, or (LoRA) the policy with its adapters disabled."""

    @torch.no_grad()
    def reference(batch: Any, vision: dict[str, Any]) -> torch.Tensor:
        with autocast(cfg.bf16):
            if ref_model is not None:
                return packed_logprobs(
                    ref_model, batch, temperature=cfg.rollout.temperature, **vision
                )[0]
            with model.disable_adapter():
                return packed_logprobs(model, batch, temperature=cfg.rollout.temperature, **vision)[
                    0
                ]

    return reference
