"""Pure loss functions, shape-commented. No state, no config objects: tensors and keyword-only
hyperparameters in, tensors out.

Shapes: N samples (one per agent step), L response tokens (padded), G group size.
``response_mask`` is 1.0 on real response tokens and 0.0 on padding.

Sections: group advantages (GRPO) · aggregation · PPO-clip · KL and entropy · (bottom) OPD.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch

# --- GRPO group advantages ----------------------------------------------------------------------


def group_advantages(
    returns: torch.Tensor,
    group_ids: Sequence[Hashable],
    *,
    std_normalize: bool = True,
    eps: float = 1e-6,
) -> torch.Tensor:
    """GRPO advantage of each sample relative to its group.

    ``A_i = (R_i - mean_g) / (std_g + eps)`` with the unbiased std of the group (as the reference
    implementation), or ``A_i = R_i - mean_g`` when ``std_normalize=False`` (mean-only, Dr. GRPO
    style). A group whose returns are all equal, and a group of one, carries no signal: A = 0.
    An empty input gives an empty output.

    Samples are trajectories (one return each: the per-trajectory variant) or step-samples (the
    ``step_scores`` of every step of every trajectory of the group, group id repeated per step:
    verl-agent's default ``compute_mean_std_cross_steps=True``, where the mean and std run over
    all step-samples of the group, so long episodes weigh more).

    returns: [N] float; group_ids: N hashables (samples with equal ids form a group).
    """
    returns = returns.float()  # [N]
    if returns.dim() != 1 or returns.shape[0] != len(group_ids):
        raise ValueError(
            f"returns {tuple(returns.shape)} does not match {len(group_ids)} group ids"
        )
    adv = torch.zeros_like(returns)  # [N]
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(group_ids):
        members.setdefault(g, []).append(i)
    for idx in members.values():
        if len(idx) < 2:
            continue
        r = returns[idx]  # [G]
        centered = r - r.mean()  # [G]
        if std_normalize:
            centered = centered / (r.std(unbiased=True) + eps)
        adv[idx] = centered
    return adv


def step_scores(env_return: float, penalties: Sequence[float]) -> list[float]:
    """verl-agent's step-level GRPO scores of one trajectory: each step-sample scores the
    episode's env return minus the format penalty charged on *that* step, so an unparseable
    output is paid for by its own tokens and not by the episode's valid steps.

    ``step_scores(10.0, [0.0, 0.1, 0.0]) == [10.0, 9.9, 10.0]``.
    """
    return [float(env_return) - float(p) for p in penalties]


def broadcast_to_tokens(values: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """One value per sample -> the same value on every response token. [N] -> [N, L]."""
    return values.float().unsqueeze(-1) * response_mask  # [N, L]


# --- aggregation --------------------------------------------------------------------------------


def token_mean(
    values: torch.Tensor, response_mask: torch.Tensor, *, num_tokens: float | None = None
) -> torch.Tensor:
    """Mean over all real tokens of the batch (every token weighs the same, whatever its
    sequence's length). ``num_tokens`` overrides the denominator, so micro-batches of one
    gradient-accumulation step can each divide by the token count of the whole step.

    values, response_mask: [N, L] -> scalar.
    """
    denom = response_mask.sum() if num_tokens is None else torch.as_tensor(float(num_tokens))
    return (values * response_mask).sum() / denom.clamp(min=1.0)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` where ``mask`` is 1 (0.0 when the mask is empty). [N, L] -> scalar."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


# --- PPO-clip with dual clip --------------------------------------------------------------------


def ppo_clip_token_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = 3.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token clipped policy-gradient loss (to minimize).

    ratio = exp(logprobs - old_logprobs)
    loss  = max(-A·ratio, -A·clip(ratio, 1 - clip_low, 1 + clip_high))
    and, for A < 0 only, the dual clip bounds it from above: loss = min(loss, -A·dual_clip), so a
    token whose ratio has exploded cannot drag the update (Ye et al., 2020). ``dual_clip=None``
    turns it off; it must be > 1.

    logprobs, old_logprobs, advantages: [N, L]. Returns (loss [N, L], clipped [N, L] bool where
    the PPO clip is active, dual_clipped [N, L] bool where the dual clip is active).
    """
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1, got {dual_clip}")
    log_ratio = (logprobs - old_logprobs).clamp(-20.0, 20.0)  # [N, L]; exp stays finite
    ratio = torch.exp(log_ratio)  # [N, L]
    unclipped = -advantages * ratio  # [N, L]
    clipped_term = -advantages * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)  # [N, L]
    loss = torch.maximum(unclipped, clipped_term)  # [N, L]
    clipped = clipped_term > unclipped  # [N, L]
    dual_clipped = torch.zeros_like(clipped)
    if dual_clip is not None:
        bound = -advantages * dual_clip  # [N, L]
        dual_clipped = (advantages < 0) & (loss > bound)  # [N, L]
        loss = torch.where(dual_clipped, bound, loss)  # [N, L]
    return loss, clipped, dual_clipped


def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = 3.0,
    num_tokens: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-mean PPO-clip loss (scalar) and its diagnostics (clip fractions, approx. KL to the
    sampling policy). Inputs [N, L]; see ``ppo_clip_token_loss`` and ``token_mean``."""
    loss, clipped, dual = ppo_clip_token_loss(
        logprobs,
        old_logprobs,
        advantages,
        clip_low=clip_low,
        clip_high=clip_high,
        dual_clip=dual_clip,
    )
    with torch.no_grad():
        stats = {
            "clip_frac": float(masked_mean(clipped.float(), response_mask)),
            "dual_clip_frac": float(masked_mean(dual.float(), response_mask)),
            # k3 estimate of KL(pi_old || pi) from the sampled tokens
            "approx_kl": float(masked_mean(kl_k3(old_logprobs, logprobs), response_mask)),
        }
    return token_mean(loss, response_mask, num_tokens=num_tokens), stats


# --- KL and entropy -----------------------------------------------------------------------------


def kl_k3(
    logprobs: torch.Tensor, ref_logprobs: torch.Tensor, *, max_value: float | None = 10.0
) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || pi_ref) from tokens sampled by pi; >= 0, unbiased.

    k3 = exp(ref - lp) - (ref - lp) - 1, the log-ratio clamped to [-20, 20] and the value to
    [-max_value, max_value] as verl's ``low_var_kl`` does (a token far off the reference stops
    pulling harder; None: no value clamp).   logprobs, ref_logprobs: [N, L] -> [N, L].
    """
    log_ratio = (ref_logprobs - logprobs).clamp(-20.0, 20.0)  # [N, L]
    k3 = torch.exp(log_ratio) - log_ratio - 1.0  # [N, L]
    return k3 if max_value is None else k3.clamp(-max_value, max_value)  # [N, L]


def entropy_bonus(
    entropy: torch.Tensor, response_mask: torch.Tensor, *, num_tokens: float | None = None
) -> torch.Tensor:
    """Token-mean entropy (subtract ``ent_coef`` times it from the loss). [N, L] -> scalar."""
    return token_mean(entropy, response_mask, num_tokens=num_tokens)


# --- on-policy distillation (OPD) ---------------------------------------------------------------
# Gated OPD and its variants (SEED) are appended below this line.

# --- on-policy distillation (SEED) --------------------------------------------------------------
# SEED.md, Stage 2 step 5. ``teacher_logprobs`` score the sampled response ids under the prompt
# with the hindsight skill inserted (π_old, no grad); ``logprobs`` are the current policy's under
# the plain prompt. ``teacher_mask`` [N, L] is 1 on response tokens of samples that have a skill.
#
#   gap   = stopgrad(teacher_logprobs - logprobs)                      [N, L]
#   gate  = stopgrad(sigmoid(beta * gap))                              [N, L]
#   L_opd = token_mean(gate * (teacher_logprobs - logprobs), response_mask * teacher_mask)
#
# dL_opd/dlogprobs = -gate / n_tokens: every step raises the sampled token, most where the skill
# context agrees with it (gap > 0, gate -> 1), least where it disagrees (gate -> 0).


def opd_token_loss(
    logprobs: torch.Tensor, teacher_logprobs: torch.Tensor, *, beta: float = 5.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token gated OPD loss. logprobs, teacher_logprobs: [N, L].

    Returns (loss [N, L], gate [N, L], gap [N, L]); gate and gap carry no gradient, the loss
    has gradient ``-gate`` w.r.t. ``logprobs`` and none w.r.t. ``teacher_logprobs``.
    """
    teacher = teacher_logprobs.detach().float()  # [N, L]
    gap = teacher - logprobs.detach().float()  # [N, L]
    gate = torch.sigmoid(beta * gap)  # [N, L]
    loss = gate * (teacher - logprobs.float())  # [N, L]
    return loss, gate, gap


def opd_loss(
    logprobs: torch.Tensor,
    teacher_logprobs: torch.Tensor,
    response_mask: torch.Tensor,
    teacher_mask: torch.Tensor,
    *,
    beta: float = 5.0,
    positive_only: bool = False,
    num_tokens: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-mean gated OPD loss (scalar, to be weighted by lambda) and its metrics.

    ``positive_only`` keeps only tokens with gap > 0 (the skill context finds the token more
    likely); the denominator stays the response·teacher token count, so the kept tokens get
    exactly the gradient they get in the full loss. ``num_tokens`` overrides the denominator
    (gradient accumulation over micro-batches, as ``token_mean``).

    logprobs, teacher_logprobs, response_mask, teacher_mask: [N, L].
    Metrics: ``opd/loss``, ``opd/gate_mean``, ``opd/active_ratio`` (gate > 0.5, i.e. gap > 0),
    ``opd/teacher_gap_mean``, ``opd/teacher_tokens``, all over response·teacher tokens.
    """
    loss, gate, gap = opd_token_loss(logprobs, teacher_logprobs, beta=beta)
    mask = response_mask.float() * teacher_mask.float()  # [N, L]
    denom = mask.sum() if num_tokens is None else num_tokens
    if positive_only:
        loss = loss * (gap > 0).float()  # [N, L]
    total = token_mean(loss, mask, num_tokens=float(denom))
    stats = opd_metrics(gate, gap, mask)
    stats["opd/loss"] = float(total.detach())
    return total, stats


def opd_metrics(gate: torch.Tensor, gap: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """Gate and gap statistics over ``mask`` (all [N, L]); zeros when the mask is empty."""
    with torch.no_grad():
        return {
            "opd/gate_mean": float(masked_mean(gate, mask)),
            "opd/active_ratio": float(masked_mean((gate > 0.5).float(), mask)),
            "opd/teacher_gap_mean": float(masked_mean(gap, mask)),
            "opd/teacher_tokens": float(mask.sum()),
        }


def teacher_advantages(
    advantages: torch.Tensor,
    teacher_logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    teacher_mask: torch.Tensor,
    *,
    weight: float,
    clip: float | None = None,
) -> torch.Tensor:
    """OPID "teacher advantage" mode: ``A + weight * (teacher_lp - old_lp)`` on teacher tokens
    (no separate OPD loss; the PPO-clip loss carries the signal). ``clip`` bounds the added term
    to ``[-clip, clip]`` if given. Everything here is constant w.r.t. the policy.

    advantages, teacher_logprobs, old_logprobs, teacher_mask: [N, L] -> [N, L].
    """
    bonus = (teacher_logprobs.detach() - old_logprobs.detach()).float()  # [N, L]
    if clip is not None:
        bonus = bonus.clamp(-clip, clip)  # [N, L]
    return advantages + weight * bonus * teacher_mask.float()  # [N, L]
